package seccomp

import (
	"fmt"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Offsets into struct seccomp_data (include/uapi/linux/seccomp.h):
//
//	struct seccomp_data {
//		int   nr;                   //  0
//		__u32 arch;                 //  4
//		__u64 instruction_pointer;  //  8
//		__u64 args[6];              // 16 + 8*i
//	};
//
// Classic BPF loads 32-bit words only, in host byte order. amd64 and
// arm64 are little-endian, so the low half of args[i] is at 16+8*i and the
// high half at 20+8*i. The filter reads only low halves: see argLow.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// argLow is the offset of the low 32 bits of args[i].
func argLow(i int) uint32 { return offArgs + 8*uint32(i) }

// Return values (include/uapi/linux/seccomp.h).
const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	// retENOSYS makes a call look unimplemented, so that libc falls back
	// to an older call we can filter (clone3 → clone).
	retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	// retKill is SECCOMP_RET_KILL_PROCESS (Linux 4.14): the whole thread
	// group dies with SIGSYS, and the kernel logs the action to audit by
	// default (/proc/sys/kernel/seccomp/actions_logged). On older kernels
	// the value reads as SECCOMP_RET_KILL_THREAD, still fatal to the caller.
	retKill = unix.SECCOMP_RET_KILL_PROCESS
)

// x32SyscallBit is __X32_SYSCALL_BIT (arch/x86/include/uapi/asm/unistd.h).
const x32SyscallBit = 0x40000000

// nsFlags are the clone/unshare flags that create a namespace. All of them
// are below 1<<32, which is what makes a low-word test sufficient (see the
// clone/unshare rules in rules).
const nsFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID |
	unix.CLONE_NEWNET | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// abi is what the filter needs to know about one GOARCH. The per-arch
// files (abi_linux_amd64.go, abi_linux_arm64.go) fill it from x/sys/unix.
type abi struct {
	// auditArch is the AUDIT_ARCH_* value seccomp_data.arch holds for a
	// native 64-bit system call.
	auditArch uint32
	// x32 is true on amd64, where x32 calls arrive with auditArch
	// AUDIT_ARCH_X86_64 and x32SyscallBit set in nr.
	x32 bool

	tiocsti, tioclinux uint32

	socket, socketpair, bind, ioctl uint32

	ioUringSetup, ioUringEnter, ioUringRegister uint32

	clone, clone3, unshare, setns                         uint32
	mount, umount2, pivotRoot, chroot                     uint32
	openTree, openTreeAttr, moveMount, fsopen, fsconfig   uint32
	fsmount, fspick, mountSetattr                         uint32
	keyctl, addKey, requestKey, userfaultfd, bpf          uint32
	perfEventOpen, kexecLoad, kexecFileLoad               uint32
	initModule, finitModule, deleteModule, openByHandleAt uint32
	acct, swapon, swapoff, reboot, syslog                 uint32
	quotactl, quotactlFd, lookupDcookie                   uint32

	// modeArgs are the calls that set a file's mode bits, with the index
	// of their mode argument (BuildSetID).
	modeArgs []modeArg
	// setxattrs are the calls that set an extended attribute (BuildSetID).
	setxattrs []uint32
}

// modeArg is a system call that takes a file mode, and where.
type modeArg struct {
	name string
	nr   uint32
	arg  int
	// chmod: the mode is the file's new mode as it is (chmod family);
	// otherwise it is a creation mode the umask still trims.
	chmod bool
	// dirfd and path index the file's name, as in FSCall; path -1 means
	// the file is descriptor args[dirfd] itself (fchmod).
	dirfd, path int
}

// rule refuses one system call, or some of its calls.
type rule struct {
	name   string // system call name, for errors and tests
	nr     uint32
	action uint32 // a ret* value
	// args nil: every call to nr gets action. Otherwise a call gets
	// action if any check matches, and is allowed if none does.
	args []argCheck
}

// argCheck tests the low 32 bits of one argument.
type argCheck struct {
	arg int // index into seccomp_data.args
	// equal: refuse when (u32)args[arg] == val, or, with a mask, when
	// (u32)args[arg] & mask == val.
	// Otherwise refuse when (u32)args[arg] & val != 0.
	equal bool
	mask  uint32
	val   uint32
	// allowed, when set, inverts the check: refuse when (u32)args[arg]
	// (& mask, when set) is none of these. It must be a rule's only check.
	allowed []uint32
}

// rules returns the deny list for opts. Each entry carries the pseudo-code
// of what emitRule turns it into; "(u32)x" is the low 32 bits of x.
func rules(opts Options, s *abi) []rule {
	var r []rule

	// if nr == socket:
	//	if (u32)args[0] == AF_UNIX  { return ERRNO(EPERM) }   // unless AllowUnixSockets
	//	if (u32)args[0] == AF_VSOCK { return ERRNO(EPERM) }
	//	return ALLOW
	//
	// socket(int family, ...): the kernel truncates family to int, so
	// comparing all 64 bits lets socket(0x1_00000001, ...) create an
	// AF_UNIX socket (go-deps.md §1). AF_UNIX reaches host daemons through
	// any bind-mounted socket file, which a network namespace does not stop
	// (escape-classes 4). AF_VSOCK reaches the hypervisor side (WSL2
	// interop; escape-classes 18). AF_NETLINK stays allowed: ip and ss need
	// it, and it only sees the sandbox's own network namespace.
	// socketpair: see below.
	var sock []argCheck
	if !opts.AllowUnixSockets {
		sock = append(sock, argCheck{arg: 0, equal: true, val: unix.AF_UNIX})
	}
	sock = append(sock, argCheck{arg: 0, equal: true, val: unix.AF_VSOCK})
	r = append(r, rule{name: "socket", nr: s.socket, action: retEPERM, args: sock})

	// if nr == socketpair:
	//	A = (u32)args[1] & 0xf
	//	if A == SOCK_STREAM || A == SOCK_SEQPACKET { return ALLOW }
	//	return ERRNO(EPERM)
	// or, with CheckBinds and no listener to check bind:
	//	return ERRNO(EPERM)
	//
	// Only a connection-oriented pair is connected for good; any other
	// type is refused: a datagram end reaches any host datagram socket
	// whose path the sandbox sees by sendto() or connect()
	// (Options.AllowUnixSockets), and AF_UNIX turns SOCK_RAW into
	// SOCK_DGRAM (unix_create), so listing the refused types would miss
	// one (found by an adversarial review). The type's low 4 bits are the
	// type; SOCK_NONBLOCK and SOCK_CLOEXEC sit above. Only AF_UNIX has
	// socketpair, so the family needs no test.
	if !opts.AllowUnixSockets {
		if opts.CheckBinds && !opts.Notify {
			r = append(r, rule{name: "socketpair", nr: s.socketpair, action: retEPERM})
		} else {
			r = append(r, rule{name: "socketpair", nr: s.socketpair, action: retEPERM,
				args: []argCheck{{arg: 1, mask: 0xf, allowed: []uint32{unix.SOCK_STREAM, unix.SOCK_SEQPACKET}}}})
		}
	}

	// if nr == ioctl:
	//	if (u32)args[1] == TIOCSTI   { return ERRNO(EPERM) }
	//	if (u32)args[1] == TIOCLINUX { return ERRNO(EPERM) }
	//	return ALLOW
	//
	// TIOCSTI pushes bytes into a terminal's input queue, TIOCLINUX
	// (subcode 2/3: selection paste) does the same on a VT: both let the
	// command type into the user's shell once it exits (escape-classes 3).
	// ioctl's cmd is unsigned int, so only the low word may be compared:
	// TIOCSTI|1<<32 must not pass (CVE-2019-10063). The kernel's
	// dev.tty.legacy_tiocsti=0 helps only where an admin set it.
	r = append(r, rule{name: "ioctl", nr: s.ioctl, action: retEPERM, args: []argCheck{
		{arg: 1, equal: true, val: s.tiocsti},
		{arg: 1, equal: true, val: s.tioclinux},
	}})

	// if nr == io_uring_setup || nr == io_uring_enter || nr == io_uring_register {
	//	return ERRNO(EPERM)
	// }
	//
	// io_uring performs opens, connects and socket creation (AF_UNIX and
	// AF_VSOCK included) from kernel context, where this filter never looks
	// (escape-classes 13). Refusing setup suffices; enter and register are
	// refused too so that an inherited ring fd is useless.
	r = append(r,
		rule{name: "io_uring_setup", nr: s.ioUringSetup, action: retEPERM},
		rule{name: "io_uring_enter", nr: s.ioUringEnter, action: retEPERM},
		rule{name: "io_uring_register", nr: s.ioUringRegister, action: retEPERM},
	)

	if !opts.AllowNestedUserNamespaces {
		// if nr == clone   && (u32)args[0] & nsFlags != 0 { return ERRNO(EPERM) }
		// if nr == unshare && (u32)args[0] & nsFlags != 0 { return ERRNO(EPERM) }
		//
		// A new user namespace gives the command every capability over
		// fresh mount/net/... namespaces, and with them the kernel's most
		// bug-prone code (escape-classes 14; Flatpak CVE-2021-41133).
		// flags is args[0] for clone on both amd64 and arm64 (they differ
		// only in the order of tls and child_tid; s390 swaps flags and
		// stack, which is one reason other arches are refused).
		//
		// Why the low word is enough, and needed, for both calls:
		//   - clone takes unsigned long flags but uses only
		//     lower_32_bits(clone_flags) (kernel/fork.c, since 5.3), so
		//     high bits are ignored and a 64-bit compare would be bypassed
		//     by setting one.
		//   - unshare takes unsigned long too (SYSCALL_DEFINE1(unshare,
		//     unsigned long, ...); libc's prototype says int), and
		//     check_unshare_flags returns EINVAL for any bit outside the
		//     known flags, so a call with high bits set never runs.
		//   - every CLONE_NEW* flag is below 1<<32, so a flag the kernel
		//     acts on is always in the low word.
		// A mask test (jset) rather than equality: any one flag refuses.
		r = append(r,
			rule{name: "clone", nr: s.clone, action: retEPERM, args: []argCheck{{arg: 0, val: nsFlags}}},
			rule{name: "unshare", nr: s.unshare, action: retEPERM, args: []argCheck{{arg: 0, val: nsFlags}}},
		)

		// if nr == clone3 { return ERRNO(ENOSYS) }
		//
		// clone3 passes its flags in memory (struct clone_args), which
		// seccomp cannot read, so it cannot be filtered by flag. ENOSYS, not
		// EPERM: glibc (2.34+) and Go treat ENOSYS as "old kernel" and fall
		// back to clone, which the rule above filters (escape-classes 13).
		r = append(r, rule{name: "clone3", nr: s.clone3, action: retENOSYS})

		// if nr in {setns, mount, umount2, pivot_root, chroot, open_tree,
		//           open_tree_attr, move_mount, fsopen, fsconfig, fsmount,
		//           fspick, mount_setattr} { return ERRNO(EPERM) }
		//
		// Joining or rearranging namespaces and mounts undoes the sandbox
		// layout bwrap built, or reaches kernel code only a nested user
		// namespace would make reachable. The command has no capability for
		// these in its own namespaces, so they fail anyway today; the rule
		// is there for the day a capability leaks in, and to keep the
		// kernel code out of reach. chroot needs CAP_SYS_CHROOT, which the
		// command lacks; refusing it costs nothing.
		for _, n := range []struct {
			name string
			nr   uint32
		}{
			{"setns", s.setns},
			{"mount", s.mount},
			{"umount2", s.umount2},
			{"pivot_root", s.pivotRoot},
			{"chroot", s.chroot},
			{"open_tree", s.openTree},
			{"open_tree_attr", s.openTreeAttr},
			{"move_mount", s.moveMount},
			{"fsopen", s.fsopen},
			{"fsconfig", s.fsconfig},
			{"fsmount", s.fsmount},
			{"fspick", s.fspick},
			{"mount_setattr", s.mountSetattr},
		} {
			r = append(r, rule{name: n.name, nr: n.nr, action: retEPERM})
		}
	}

	// if nr in {keyctl, add_key, request_key, userfaultfd, bpf,
	//           perf_event_open, kexec_load, kexec_file_load, init_module,
	//           finit_module, delete_module, open_by_handle_at, acct,
	//           swapon, swapoff, reboot, syslog, quotactl, quotactl_fd,
	//           lookup_dcookie} { return ERRNO(EPERM) }
	//
	// Kernel attack surface with no use inside a sandbox (escape-classes 14):
	//   - keyctl, add_key, request_key: keyrings are not namespaced; the
	//     user keyring is shared with the user's processes outside.
	//   - userfaultfd: the standard race-widening exploit primitive.
	//   - bpf, perf_event_open: large, frequently exploited kernel surface;
	//     perf also leaks kernel addresses.
	//   - open_by_handle_at: the "shocker" escape opens any inode by handle,
	//     bypassing the mount layout. name_to_handle_at stays allowed: it
	//     only names a path the caller can already resolve, and the handle
	//     is useless without open_by_handle_at.
	//   - kexec_*, *_module, acct, swapon/off, reboot, syslog, quotactl*,
	//     lookup_dcookie: host administration; all need capabilities the
	//     command must never have, refused so a leaked one stays harmless.
	//
	// Deliberately allowed:
	//   - ptrace: gdb, strace and sanitizers need PTRACE_TRACEME and
	//     requests on the command's own children. The PID namespace hides
	//     every process outside the sandbox; inside it, the kernel's own
	//     checks (same uid, not PR_SET_DUMPABLE=0, Yama) keep the command
	//     off any helper, which must therefore set PR_SET_DUMPABLE=0 or
	//     run under another uid. A tracer cannot use ptrace to skip this
	//     filter: since Linux 4.8 seccomp runs after the tracer's syscall
	//     entry stop and sees its changes, and the tracer carries the same
	//     filter.
	//   - vmsplice: plain pipe I/O; its past CVEs were kernel bugs fixed
	//     long ago, and refusing it breaks zero-copy users.
	for _, n := range []struct {
		name string
		nr   uint32
	}{
		{"keyctl", s.keyctl},
		{"add_key", s.addKey},
		{"request_key", s.requestKey},
		{"userfaultfd", s.userfaultfd},
		{"bpf", s.bpf},
		{"perf_event_open", s.perfEventOpen},
		{"kexec_load", s.kexecLoad},
		{"kexec_file_load", s.kexecFileLoad},
		{"init_module", s.initModule},
		{"finit_module", s.finitModule},
		{"delete_module", s.deleteModule},
		{"open_by_handle_at", s.openByHandleAt},
		{"acct", s.acct},
		{"swapon", s.swapon},
		{"swapoff", s.swapoff},
		{"reboot", s.reboot},
		{"syslog", s.syslog},
		{"quotactl", s.quotactl},
		{"quotactl_fd", s.quotactlFd},
		{"lookup_dcookie", s.lookupDcookie},
	} {
		r = append(r, rule{name: n.name, nr: n.nr, action: retEPERM})
	}
	return r
}

// Build returns the filter for opts on this GOARCH, ready for Install or
// Encode. It returns an error wrapping errors.ErrUnsupported on an
// architecture without a reviewed table (anything but amd64 and arm64).
func Build(opts Options) ([]bpf.RawInstruction, error) {
	s, err := nativeABI()
	if err != nil {
		return nil, err
	}
	rs := rules(opts, s)
	if opts.Notify {
		if rs, err = notifyRules(rs, opts, s); err != nil {
			return nil, err
		}
	} else if opts.ObserveWrites || opts.ObserveReads || opts.EmulateCreates {
		return nil, fmt.Errorf("seccomp: observing or emulating filesystem calls needs Notify")
	}
	if opts.KernelNames && !opts.EmulateCreates {
		return nil, fmt.Errorf("seccomp: KernelNames goes with EmulateCreates")
	}
	prog, err := program(rs, s)
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("assembling seccomp filter: %w", err)
	}
	return raw, nil
}

// program lays out the filter:
//
//	if data.arch != AUDIT_ARCH_NATIVE { return KILL_PROCESS }
//	A = data.nr
//	if 0x40000000 <= A < 0x80000000 { return KILL_PROCESS }   // amd64 only
//	<one block per rule; each either returns or falls through>
//	return ALLOW
func program(rs []rule, s *abi) ([]bpf.Instruction, error) {
	// Each rule must own its nr: a rule block returns on a match, so a
	// second rule for the same nr would never be reached.
	seen := make(map[uint32]string, len(rs))
	for _, r := range rs {
		if prev, ok := seen[r.nr]; ok {
			return nil, fmt.Errorf("seccomp rules %s and %s share syscall number %d (bug)", prev, r.name, r.nr)
		}
		seen[r.nr] = r.name
	}

	p := []bpf.Instruction{
		// if data.arch != AUDIT_ARCH_NATIVE { return KILL_PROCESS }
		//
		// Comes first because nr means nothing without arch: the same
		// number is a different call in another ABI. A foreign arch reaches
		// us through int 0x80 or sysenter on amd64 (the i386 ABI, where
		// socket(AF_UNIX) is socketcall(SYS_SOCKET, ...) with its args in
		// memory) and through AArch32 compat on arm64. KILL_PROCESS rather
		// than ERRNO(EPERM): no native binary makes these calls, a 32-bit
		// binary could not run correctly under a table of 64-bit numbers
		// anyway, and a loud SIGSYS plus an audit record beats an errno an
		// attacker can probe quietly.
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: s.auditArch, SkipTrue: 1},
		bpf.RetConstant{Val: retKill},

		// A = data.nr; every rule block below expects nr in A and leaves
		// it there when it falls through.
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	if s.x32 {
		// if 0x40000000 <= nr < 0x80000000 { return KILL_PROCESS }
		//
		// x32 calls arrive with arch AUDIT_ARCH_X86_64 and
		// __X32_SYSCALL_BIT set, reaching the same handlers under numbers
		// our table does not list (0x40000000|41 is socket), so they would
		// pass every rule. KILL for the same reasons as a foreign arch: an
		// amd64 binary never sets the bit (Debian boots with x32 disabled,
		// where the kernel would answer ENOSYS).
		//
		// Numbers from 0x80000000 up are negative ints. The kernel runs
		// nothing for them (do_syscall_x64 and do_syscall_x32 compare
		// unsigned and fall through to ENOSYS), and -1 is how a tracer
		// skips a call after its syscall-entry stop; killing there would
		// break strace -e inject and gdb, so they are allowed.
		p = append(p,
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32SyscallBit, SkipFalse: 2},
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: 0x80000000, SkipTrue: 1},
			bpf.RetConstant{Val: retKill},
		)
	}
	for _, r := range rs {
		blk, err := emitRule(r)
		if err != nil {
			return nil, err
		}
		p = append(p, blk...)
	}
	p = append(p, bpf.RetConstant{Val: retAllow})
	if len(p) > maxInstructions {
		return nil, fmt.Errorf("seccomp filter has %d instructions, kernel limit is %d (bug)", len(p), maxInstructions)
	}
	return p, nil
}

// emitAllowed assembles a rule whose one check lists the allowed values:
//
//	jeq  #nr, 0, n        ; not this call: skip the rule
//	ld   [args[i] low]
//	and  #mask            ; when a mask is set
//	jeq  #v1, allow, 0    ; one per allowed value
//	...
//	ret  #action
//	allow: ret #ALLOW
func emitAllowed(r rule) ([]bpf.Instruction, error) {
	c := r.args[0]
	if c.arg < 0 || c.arg > 5 || len(c.allowed) > 200 {
		return nil, fmt.Errorf("seccomp rule %s: bad allowed check (bug)", r.name)
	}
	body := []bpf.Instruction{bpf.LoadAbsolute{Off: argLow(c.arg), Size: 4}}
	if c.mask != 0 {
		body = append(body, bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: c.mask})
	}
	for i, v := range c.allowed {
		// Skip the rest of the values and the deny to reach allow.
		body = append(body, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(len(c.allowed) - i)})
	}
	body = append(body, bpf.RetConstant{Val: r.action}, bpf.RetConstant{Val: retAllow})
	head := bpf.JumpIf{Cond: bpf.JumpEqual, Val: r.nr, SkipFalse: uint8(len(body))}
	return append([]bpf.Instruction{head}, body...), nil
}

// emitRule assembles one rule. A whole-call rule:
//
//	jeq  #nr, 0, 1        ; not this call: fall through to the next rule
//	ret  #action
//
// A rule with argument checks:
//
//	jeq  #nr, 0, n        ; not this call: skip the n instructions below
//	ld   [args[i] low]    ; A = (u32)args[i]; reloaded only when i changes
//	jeq  #val, deny, 0    ; or jset #mask, deny, 0
//	...
//	ret  #ALLOW           ; no check matched; A no longer holds nr
//	deny: ret #action
func emitRule(r rule) ([]bpf.Instruction, error) {
	if len(r.args) == 0 {
		return []bpf.Instruction{
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: r.nr, SkipFalse: 1},
			bpf.RetConstant{Val: r.action},
		}, nil
	}
	if len(r.args) == 1 && len(r.args[0].allowed) > 0 {
		return emitAllowed(r)
	}
	var body []bpf.Instruction
	loaded := -1
	var jumps []int // indexes in body of the checks, patched to reach deny
	for _, c := range r.args {
		if c.arg < 0 || c.arg > 5 {
			return nil, fmt.Errorf("seccomp rule %s checks args[%d] (bug)", r.name, c.arg)
		}
		if c.arg != loaded {
			body = append(body, bpf.LoadAbsolute{Off: argLow(c.arg), Size: 4})
			loaded = c.arg
		}
		if c.mask != 0 {
			// A &= mask: the next check must load again.
			body = append(body, bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: c.mask})
			loaded = -1
		}
		cond := bpf.JumpBitsSet
		if c.equal {
			cond = bpf.JumpEqual
		}
		jumps = append(jumps, len(body))
		body = append(body, bpf.JumpIf{Cond: cond, Val: c.val})
	}
	body = append(body, bpf.RetConstant{Val: retAllow})
	deny := len(body)
	body = append(body, bpf.RetConstant{Val: r.action})
	for _, j := range jumps {
		ji := body[j].(bpf.JumpIf)
		skip := deny - j - 1
		if skip > 255 {
			return nil, fmt.Errorf("seccomp rule %s is too long for a conditional jump (bug)", r.name)
		}
		ji.SkipTrue = uint8(skip)
		body[j] = ji
	}
	if len(body) > 255 {
		return nil, fmt.Errorf("seccomp rule %s is too long for a conditional jump (bug)", r.name)
	}
	head := bpf.JumpIf{Cond: bpf.JumpEqual, Val: r.nr, SkipFalse: uint8(len(body))}
	return append([]bpf.Instruction{head}, body...), nil
}
