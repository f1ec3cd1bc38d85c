//go:build amd64 || arm64

package seccomp

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompData is struct seccomp_data as the kernel fills it.
type seccompData struct {
	nr   uint32 // int in the kernel; negative numbers appear as >= 1<<31
	arch uint32
	ip   uint64
	args [6]uint64
}

// vmInput lays d out so that bpf.VM reads what the kernel would.
//
// The kernel runs the filter over seccomp_data in memory, and a 32-bit
// BPF load ("ld [16]") reads the word at that offset in host byte order:
// on little-endian amd64/arm64 that is the low half of args[0], and
// "ld [20]" is its high half. x/net/bpf's VM decodes every load as
// big-endian instead. Writing the struct's real little-endian image would
// make "ld [16]" return AF_UNIX as 0x01000000 and every rule would test a
// byte-swapped value. So each 32-bit word the kernel would load at offset
// o is written big-endian at the same offset o: the offsets stay native,
// only the byte order inside each word is the VM's.
func vmInput(d seccompData) []byte {
	b := make([]byte, 64)
	be := binary.BigEndian
	be.PutUint32(b[offNr:], d.nr)
	be.PutUint32(b[offArch:], d.arch)
	be.PutUint32(b[8:], uint32(d.ip))
	be.PutUint32(b[12:], uint32(d.ip>>32))
	for i, a := range d.args {
		be.PutUint32(b[argLow(i):], uint32(a))       // low word, where the filter looks
		be.PutUint32(b[argLow(i)+4:], uint32(a>>32)) // high word, never loaded
	}
	return b
}

// nativeAudit is the AUDIT_ARCH of this test binary's own system calls,
// written out here rather than taken from nativeABI so that a wrong table
// fails the tests.
func nativeAudit() uint32 {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64
	}
	panic("unreachable: build tag is amd64 || arm64")
}

// newVM builds the filter for opts and loads it into a bpf.VM.
func newVM(tb testing.TB, opts Options) *bpf.VM {
	tb.Helper()
	raw, err := Build(opts)
	if err != nil {
		tb.Fatalf("Build(%+v): %v", opts, err)
	}
	prog, ok := bpf.Disassemble(raw)
	if !ok {
		tb.Fatalf("Build(%+v) produced an instruction x/net/bpf cannot decode", opts)
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		tb.Fatalf("bpf.NewVM: %v", err)
	}
	return vm
}

func runVM(tb testing.TB, vm *bpf.VM, d seccompData) uint32 {
	tb.Helper()
	n, err := vm.Run(vmInput(d))
	if err != nil {
		tb.Fatalf("VM.Run(%+v): %v", d, err)
	}
	return uint32(n)
}

// expect is the test's own statement of the policy, written from the
// issue rather than from rules(), so that the rule table is checked
// against it.
func expect(opts Options, d seccompData) uint32 {
	if d.arch != nativeAudit() {
		return retKill
	}
	if runtime.GOARCH == "amd64" && d.nr >= 0x40000000 && d.nr < 0x80000000 {
		return retKill
	}
	lo0, lo1 := uint32(d.args[0]), uint32(d.args[1])
	nested := opts.AllowNestedUserNamespaces
	switch d.nr {
	case unix.SYS_SOCKET:
		if (lo0 == unix.AF_UNIX && !opts.AllowUnixSockets) || lo0 == unix.AF_VSOCK {
			return retEPERM
		}
	case unix.SYS_SOCKETPAIR:
		if !opts.AllowUnixSockets && (lo1&0xf != unix.SOCK_STREAM && lo1&0xf != unix.SOCK_SEQPACKET || opts.CheckBinds && !opts.Notify) {
			return retEPERM
		}
	case unix.SYS_IOCTL:
		if lo1 == unix.TIOCSTI || lo1 == unix.TIOCLINUX {
			return retEPERM
		}
	case unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER:
		return retEPERM
	case unix.SYS_CLONE, unix.SYS_UNSHARE:
		const ns = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
			unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME
		if !nested && lo0&ns != 0 {
			return retEPERM
		}
	case unix.SYS_CLONE3:
		if !nested {
			return retENOSYS
		}
	case unix.SYS_SETNS, unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT,
		unix.SYS_OPEN_TREE, unix.SYS_OPEN_TREE_ATTR, unix.SYS_MOVE_MOUNT, unix.SYS_FSOPEN,
		unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR:
		if !nested {
			return retEPERM
		}
	case unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_USERFAULTFD, unix.SYS_BPF,
		unix.SYS_PERF_EVENT_OPEN, unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
		unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
		unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_ACCT, unix.SYS_SWAPON, unix.SYS_SWAPOFF,
		unix.SYS_REBOOT, unix.SYS_SYSLOG, unix.SYS_QUOTACTL, unix.SYS_QUOTACTL_FD,
		unix.SYS_LOOKUP_DCOOKIE:
		return retEPERM
	}
	return retAllow
}

func actionName(a uint32) string {
	switch a {
	case retAllow:
		return "ALLOW"
	case retKill:
		return "KILL_PROCESS"
	}
	if a&unix.SECCOMP_RET_ACTION_FULL == unix.SECCOMP_RET_ERRNO {
		return "ERRNO(" + unix.ErrnoName(unix.Errno(a&unix.SECCOMP_RET_DATA)) + ")"
	}
	return fmt.Sprintf("%#x", a)
}

var allOptions = []Options{
	{},
	{AllowUnixSockets: true},
	{AllowNestedUserNamespaces: true},
	{AllowUnixSockets: true, AllowNestedUserNamespaces: true},
	{CheckBinds: true},
	{CheckBinds: true, AllowUnixSockets: true},
}

func call(nr uint32, args ...uint64) seccompData {
	d := seccompData{nr: nr, arch: nativeAudit(), ip: 0x7fff_dead_b000}
	copy(d.args[:], args)
	return d
}

type vmCase struct {
	name string // the attack or the everyday call
	opts Options
	d    seccompData
	want uint32
}

func TestFilterVM(t *testing.T) {
	strict := Options{}
	unixOK := Options{AllowUnixSockets: true}
	nested := Options{AllowNestedUserNamespaces: true}
	const hi = 1 << 32 // a high-word bit the kernel throws away
	x32 := func(nr uint32) seccompData { return call(0x40000000|nr, unix.AF_UNIX, unix.SOCK_STREAM) }

	tests := []vmCase{
		// Everyday calls must pass.
		{"read", strict, call(unix.SYS_READ, 0, 0x1000, 10), retAllow},
		{"write", strict, call(unix.SYS_WRITE, 1, 0x1000, 10), retAllow},
		{"socket-af-inet", strict, call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM), retAllow},
		{"socket-af-inet6", strict, call(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_DGRAM), retAllow},
		{"socket-af-netlink", strict, call(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW), retAllow},
		{"socketpair-af-unix", strict, call(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_STREAM), retAllow},
		{"ioctl-tcgets", strict, call(unix.SYS_IOCTL, 0, unix.TCGETS), retAllow},
		{"ioctl-tiocgwinsz", strict, call(unix.SYS_IOCTL, 1, unix.TIOCGWINSZ), retAllow},
		{"clone-thread", strict, call(unix.SYS_CLONE, unix.CLONE_VM|unix.CLONE_FS|unix.CLONE_FILES|unix.CLONE_SIGHAND|unix.CLONE_THREAD|unix.CLONE_SYSVSEM), retAllow},
		{"clone-fork", strict, call(unix.SYS_CLONE, uint64(unix.SIGCHLD)), retAllow},
		{"clone-vfork-pidfd", strict, call(unix.SYS_CLONE, unix.CLONE_VM|unix.CLONE_VFORK|unix.CLONE_PIDFD|uint64(unix.SIGCHLD)), retAllow},
		{"unshare-files", strict, call(unix.SYS_UNSHARE, unix.CLONE_FILES|unix.CLONE_FS), retAllow},
		{"ptrace-traceme", strict, call(unix.SYS_PTRACE, unix.PTRACE_TRACEME), retAllow},
		{"ptrace-attach", strict, call(unix.SYS_PTRACE, unix.PTRACE_ATTACH, 42), retAllow},
		{"vmsplice", strict, call(unix.SYS_VMSPLICE, 3), retAllow},
		{"name-to-handle-at", strict, call(unix.SYS_NAME_TO_HANDLE_AT), retAllow},
		{"ptrace-skip-nr-minus-one", strict, call(0xffffffff), retAllow},
		{"nr-negative-with-x32-bit", strict, call(0xc0000000|unix.SYS_SOCKET, unix.AF_UNIX), retAllow},

		// socket(AF_UNIX): the low word decides, whatever the high word says.
		{"socket-af-unix", strict, call(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM), retEPERM},
		{"socket-af-unix-high-bits", strict, call(unix.SYS_SOCKET, hi|unix.AF_UNIX, unix.SOCK_STREAM), retEPERM},
		{"socket-af-unix-all-high-bits", strict, call(unix.SYS_SOCKET, 0xffffffff_00000001, unix.SOCK_STREAM), retEPERM},
		{"socket-af-inet-high-bits-not-unix", strict, call(unix.SYS_SOCKET, hi|unix.AF_INET), retAllow},
		{"socket-af-unix-allowed", unixOK, call(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM), retAllow},
		{"socket-af-vsock", strict, call(unix.SYS_SOCKET, unix.AF_VSOCK, unix.SOCK_STREAM), retEPERM},
		{"socket-af-vsock-high-bits", strict, call(unix.SYS_SOCKET, hi|unix.AF_VSOCK), retEPERM},
		{"socket-af-vsock-despite-allow-unix", unixOK, call(unix.SYS_SOCKET, unix.AF_VSOCK), retEPERM},

		// Terminal injection.
		{"ioctl-tiocsti", strict, call(unix.SYS_IOCTL, 0, unix.TIOCSTI, 0x1000), retEPERM},
		{"ioctl-tiocsti-high-bits", strict, call(unix.SYS_IOCTL, 0, hi|unix.TIOCSTI, 0x1000), retEPERM},
		{"ioctl-tioclinux", strict, call(unix.SYS_IOCTL, 0, unix.TIOCLINUX, 0x1000), retEPERM},
		{"ioctl-tioclinux-high-bits", strict, call(unix.SYS_IOCTL, 0, 0xdead0000_00000000|unix.TIOCLINUX), retEPERM},
		{"ioctl-tiocsti-in-fd-arg-only", strict, call(unix.SYS_IOCTL, unix.TIOCSTI, unix.TCGETS), retAllow},

		// io_uring, whatever the options.
		{"io-uring-setup", unixOK, call(unix.SYS_IO_URING_SETUP, 8), retEPERM},
		{"io-uring-enter", nested, call(unix.SYS_IO_URING_ENTER, 3), retEPERM},
		{"io-uring-register", strict, call(unix.SYS_IO_URING_REGISTER, 3), retEPERM},

		// Namespaces and mounts.
		{"unshare-newuser", strict, call(unix.SYS_UNSHARE, unix.CLONE_NEWUSER), retEPERM},
		{"unshare-newuser-high-bits", strict, call(unix.SYS_UNSHARE, hi|unix.CLONE_NEWUSER), retEPERM},
		{"unshare-newtime", strict, call(unix.SYS_UNSHARE, unix.CLONE_NEWTIME), retEPERM},
		{"unshare-newcgroup-with-fs", strict, call(unix.SYS_UNSHARE, unix.CLONE_FS|unix.CLONE_NEWCGROUP), retEPERM},
		{"unshare-newuser-allowed", nested, call(unix.SYS_UNSHARE, unix.CLONE_NEWUSER|unix.CLONE_NEWNS), retAllow},
		{"clone-newuser", strict, call(unix.SYS_CLONE, unix.CLONE_NEWUSER|uint64(unix.SIGCHLD)), retEPERM},
		{"clone-newpid", strict, call(unix.SYS_CLONE, unix.CLONE_NEWPID), retEPERM},
		{"clone-newnet-high-bits", strict, call(unix.SYS_CLONE, hi|unix.CLONE_NEWNET), retEPERM},
		{"clone-newipc-in-stack-arg-only", strict, call(unix.SYS_CLONE, uint64(unix.SIGCHLD), unix.CLONE_NEWIPC), retAllow},
		{"clone-newns-allowed", nested, call(unix.SYS_CLONE, unix.CLONE_NEWNS), retAllow},
		{"clone3", strict, call(unix.SYS_CLONE3, 0x1000, 88), retENOSYS},
		{"clone3-allowed", nested, call(unix.SYS_CLONE3, 0x1000, 88), retAllow},
		{"setns", strict, call(unix.SYS_SETNS, 3, unix.CLONE_NEWNET), retEPERM},
		{"mount", strict, call(unix.SYS_MOUNT), retEPERM},
		{"mount-allowed", nested, call(unix.SYS_MOUNT), retAllow},
		{"umount2", strict, call(unix.SYS_UMOUNT2), retEPERM},
		{"pivot-root", strict, call(unix.SYS_PIVOT_ROOT), retEPERM},
		{"chroot", strict, call(unix.SYS_CHROOT), retEPERM},
		{"open-tree", strict, call(unix.SYS_OPEN_TREE), retEPERM},
		{"open-tree-attr", strict, call(unix.SYS_OPEN_TREE_ATTR), retEPERM},
		{"move-mount", strict, call(unix.SYS_MOVE_MOUNT), retEPERM},
		{"fsopen", strict, call(unix.SYS_FSOPEN), retEPERM},
		{"fsconfig", strict, call(unix.SYS_FSCONFIG), retEPERM},
		{"fsmount", strict, call(unix.SYS_FSMOUNT), retEPERM},
		{"fspick", strict, call(unix.SYS_FSPICK), retEPERM},
		{"mount-setattr", strict, call(unix.SYS_MOUNT_SETATTR), retEPERM},

		// Datagram socketpairs reach host datagram sockets; with
		// CheckBinds and no listener, every socketpair is refused.
		{"socketpair-dgram", strict, call(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_DGRAM), retEPERM},
		{"socketpair-dgram-cloexec", strict, call(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK), retEPERM},
		{"socketpair-dgram-high-bits", strict, call(unix.SYS_SOCKETPAIR, unix.AF_UNIX, 1<<32|unix.SOCK_DGRAM), retEPERM},
		{"socketpair-raw-is-dgram", strict, call(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_RAW), retEPERM},
		{"socketpair-type-zero", strict, call(unix.SYS_SOCKETPAIR, unix.AF_UNIX, 0), retEPERM},
		{"socketpair-stream", strict, call(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC), retAllow},
		{"socketpair-seqpacket", strict, call(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_SEQPACKET), retAllow},
		{"socketpair-dgram-allowed", unixOK, call(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_DGRAM), retAllow},
		{"socketpair-no-listener", Options{CheckBinds: true}, call(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_STREAM), retEPERM},

		// Always refused.
		{"keyctl", nested, call(unix.SYS_KEYCTL), retEPERM},
		{"add-key", strict, call(unix.SYS_ADD_KEY), retEPERM},
		{"request-key", strict, call(unix.SYS_REQUEST_KEY), retEPERM},
		{"userfaultfd", strict, call(unix.SYS_USERFAULTFD), retEPERM},
		{"bpf", strict, call(unix.SYS_BPF), retEPERM},
		{"perf-event-open", strict, call(unix.SYS_PERF_EVENT_OPEN), retEPERM},
		{"kexec-load", strict, call(unix.SYS_KEXEC_LOAD), retEPERM},
		{"kexec-file-load", strict, call(unix.SYS_KEXEC_FILE_LOAD), retEPERM},
		{"init-module", strict, call(unix.SYS_INIT_MODULE), retEPERM},
		{"finit-module", strict, call(unix.SYS_FINIT_MODULE), retEPERM},
		{"delete-module", strict, call(unix.SYS_DELETE_MODULE), retEPERM},
		{"open-by-handle-at-shocker", strict, call(unix.SYS_OPEN_BY_HANDLE_AT), retEPERM},
		{"acct", strict, call(unix.SYS_ACCT), retEPERM},
		{"swapon", strict, call(unix.SYS_SWAPON), retEPERM},
		{"swapoff", strict, call(unix.SYS_SWAPOFF), retEPERM},
		{"reboot", strict, call(unix.SYS_REBOOT), retEPERM},
		{"syslog", strict, call(unix.SYS_SYSLOG), retEPERM},
		{"quotactl", strict, call(unix.SYS_QUOTACTL), retEPERM},
		{"quotactl-fd", strict, call(unix.SYS_QUOTACTL_FD), retEPERM},
		{"lookup-dcookie", strict, call(unix.SYS_LOOKUP_DCOOKIE), retEPERM},

		// Other ABIs never reach the rules.
		{"foreign-arch-i386-socketcall", strict, seccompData{nr: 102, arch: unix.AUDIT_ARCH_I386, args: [6]uint64{1}}, retKill},
		{"foreign-arch-i386-read", strict, seccompData{nr: 3, arch: unix.AUDIT_ARCH_I386}, retKill},
		{"foreign-arch-arm-compat", strict, seccompData{nr: 281, arch: unix.AUDIT_ARCH_ARM, args: [6]uint64{unix.AF_UNIX}}, retKill},
		{"foreign-arch-even-with-all-options", Options{AllowUnixSockets: true, AllowNestedUserNamespaces: true}, seccompData{nr: 0, arch: unix.AUDIT_ARCH_I386}, retKill},
		{"arch-zero", strict, seccompData{nr: unix.SYS_READ}, retKill},
	}
	if runtime.GOARCH == "amd64" {
		tests = append(tests,
			vmCase{"x32-socket-af-unix", unixOK, x32(unix.SYS_SOCKET), retKill},
			vmCase{"x32-bit-alone", strict, x32(0), retKill},
			vmCase{"x32-top-of-range", strict, call(0x7fffffff), retKill},
		)
	}

	vms := make(map[Options]*bpf.VM)
	for _, o := range allOptions {
		vms[o] = newVM(t, o)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runVM(t, vms[tt.opts], tt.d)
			if got != tt.want {
				t.Errorf("filter(%+v) on nr=%#x arch=%#x args=%#x = %s, want %s",
					tt.opts, tt.d.nr, tt.d.arch, tt.d.args[:2], actionName(got), actionName(tt.want))
			}
			// The table states the policy too; if they disagree, one is wrong.
			if m := expect(tt.opts, tt.d); m != tt.want {
				t.Errorf("expect() = %s, table says %s", actionName(m), actionName(tt.want))
			}
		})
	}
}

// TestFilterMatchesPolicy checks every system-call number the kernel could
// have (and then some) under every option combination, with argument
// patterns that hit each argument rule, against expect.
func TestFilterMatchesPolicy(t *testing.T) {
	argSets := [][]uint64{
		{0, 0},
		{unix.AF_UNIX, unix.TIOCSTI},
		{1<<32 | unix.AF_UNIX, 1<<32 | unix.TIOCLINUX},
		{unix.AF_VSOCK, unix.TCGETS},
		{unix.AF_INET, 0},
		{unix.CLONE_NEWUSER, 0},
		{1<<40 | unix.CLONE_NEWNS | unix.CLONE_VM, 0},
		{0xffffffff_00000000, 0xffffffff_00000000},
	}
	for _, o := range allOptions {
		vm := newVM(t, o)
		for nr := uint32(0); nr < 1024; nr++ {
			for _, a := range argSets {
				d := call(nr, a...)
				if got, want := runVM(t, vm, d), expect(o, d); got != want {
					t.Errorf("opts %+v nr %d args %#x: got %s, want %s", o, nr, a, actionName(got), actionName(want))
				}
			}
		}
	}
}

func TestBuildRulesUnique(t *testing.T) {
	s, err := nativeABI()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range allOptions {
		names := make(map[string]bool)
		for _, r := range rules(o, s) {
			if names[r.name] {
				t.Errorf("opts %+v: rule %s twice", o, r.name)
			}
			names[r.name] = true
		}
		raw, err := Build(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("opts %+v: %d rules, %d instructions", o, len(names), len(raw))
	}
	dup := []rule{{name: "a", nr: 7, action: retEPERM}, {name: "b", nr: 7, action: retEPERM}}
	if _, err := program(dup, s); err == nil {
		t.Error("program accepted two rules for one syscall number")
	}
}

func TestEncode(t *testing.T) {
	raw, err := Build(Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := Encode(raw)
	if len(b) != 8*len(raw) {
		t.Fatalf("Encode: %d bytes for %d instructions, want 8 each", len(b), len(raw))
	}
	for i, ins := range raw {
		rec := b[8*i : 8*i+8]
		got := bpf.RawInstruction{
			Op: binary.NativeEndian.Uint16(rec[0:]),
			Jt: rec[2],
			Jf: rec[3],
			K:  binary.NativeEndian.Uint32(rec[4:]),
		}
		if got != ins {
			t.Fatalf("instruction %d: encoded %+v, want %+v", i, got, ins)
		}
	}
	// The first instruction is "ld [4]" (arch): BPF_LD|BPF_W|BPF_ABS = 0x20.
	if raw[0].Op != 0x20 || raw[0].K != offArch {
		t.Errorf("first instruction %+v, want ld [4]", raw[0])
	}
}
