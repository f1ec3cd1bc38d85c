package seccomp

import (
	"fmt"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// setIDBits are the mode bits that make an executable run with its
// owner's or group's identity (inode(7)).
const setIDBits = unix.S_ISUID | unix.S_ISGID

// BuildSetID returns a second filter, stacked on Build's, for the modes
// and attributes a file keeps after the sandbox is gone:
//
//   - every call that gives a file a set-user-ID or set-group-ID bit is
//     refused (EPERM): chmod, fchmod, fchmodat, fchmodat2, and the mode of
//     the calls that create a file (open, openat, creat, mknod, mknodat;
//     on arm64 only the *at forms exist). A root caller's command is uid
//     0 in its user namespace, the owner of the files it writes in the
//     write roots; without this, `cp /bin/sh x && chmod 4755 x` leaves a
//     set-user-ID root shell behind that any local user runs after the
//     sandbox ends (no_new_privs binds only the sandbox).
//   - chmod calls that give others write permission (and group write,
//     with opts.RefuseGroupWrite) are refused: a world-writable write root
//     or .git lets any local user replace the protected files in it after
//     the run (an adversarial review planted ~/.bashrc this way). A
//     creation mode cannot be judged here, since the umask trims it after
//     the filter; the creation-time rules strip the bits there.
//   - setxattr, lsetxattr, fsetxattr and setxattrat answer EOPNOTSUPP, as
//     a file system without extended attributes does (cp -a goes on): an
//     ACL (system.posix_acl_access) grants what chmod cannot, and
//     security.capability gives a binary capabilities.
//   - openat2 carries its mode in memory, where a filter cannot look, so
//     it is answered ENOSYS: callers fall back to openat (glibc and Go do
//     not use it for open(2); the creation-time rules answer it the same
//     way).
//
// With opts.Notify the set-id and write-permission refusals are not made
// here but by Build's notifying filter, which notifies exactly those
// calls (no round trip for an ordinary chmod or open): its listener answers EPERM and
// reports each as a violation (Call.Mode). A deny-only filter stacked
// here would answer first and the listener would never see them (ERRNO
// outranks USER_NOTIF). If the listener goes away, the kernel fails them
// with ENOSYS: still refused. The caller must pass the options of the
// filter it actually installed (without Notify when the kernel gave no
// listener), or the modes go unchecked.
//
// The xattr and openat2 answers stay silent deny-only answers in every
// sandbox: they imitate a kernel feature being absent (a file system without extended
// attributes, a kernel before openat2), which callers work around, so
// reporting them would be noise.
//
// The kernel clears the set-id bits on write and chown, so only these
// calls set them. Modes are tested whatever the flags: open and openat
// ignore the mode without O_CREAT or O_TMPFILE, and libcs pass 0 there.
// Only the low 32 bits are compared; mode_t is 32 bits, the kernel
// truncates the rest. The arch and x32 checks are Build's, which every
// call meets first (the kernel runs every stacked filter and takes the
// strictest answer).
func BuildSetID(opts Options) ([]bpf.RawInstruction, error) {
	s, err := nativeABI()
	if err != nil {
		return nil, err
	}
	prog := []bpf.Instruction{bpf.LoadAbsolute{Off: offNr, Size: 4}}
	if !opts.Notify {
		for _, r := range modeRules(opts, s, retEPERM) {
			blk, err := emitRule(r)
			if err != nil {
				return nil, err
			}
			prog = append(prog, blk...)
		}
	}
	for _, nr := range s.setxattrs {
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 1},
			bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EOPNOTSUPP)})
	}
	prog = append(prog,
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_OPENAT2, SkipFalse: 1},
		bpf.RetConstant{Val: retENOSYS},
		bpf.RetConstant{Val: retAllow})
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("assembling the set-id filter: %w", err)
	}
	return raw, nil
}

// refusedModes returns the bits that refuse a mode-setting call m.
func refusedModes(opts Options, m modeArg) uint32 {
	if !m.chmod {
		return setIDBits
	}
	bits := uint32(setIDBits | unix.S_IWOTH)
	if opts.RefuseGroupWrite {
		bits |= unix.S_IWGRP
	}
	return bits
}

// modeRules are the mode refusals of BuildSetID, one rule per call, each
// with action:
//
//	if nr == m.nr { if (u32)args[m.arg] & bits { return action }; return ALLOW }
func modeRules(opts Options, s *abi, action uint32) []rule {
	rs := make([]rule, 0, len(s.modeArgs))
	for _, m := range s.modeArgs {
		rs = append(rs, rule{name: m.name, nr: m.nr, action: action,
			args: []argCheck{{arg: m.arg, val: refusedModes(opts, m)}}})
	}
	return rs
}

// notifyModes adds the mode refusals to the notifying filter's rules rs,
// as notifications (Options.Notify): a call already notified whatever its
// arguments stays so; one notified for some of its flags (openat with
// a write flag) is notified for the refused mode bits too, the checks
// being or-ed; any other gets a rule of its own. A mode-setting call
// that rs answers otherwise is a bug: its mode would go unchecked.
func notifyModes(rs []rule, opts Options, s *abi) ([]rule, error) {
	at := make(map[uint32]int, len(rs))
	for i, r := range rs {
		at[r.nr] = i
	}
	for _, m := range modeRules(opts, s, retNotify) {
		i, ok := at[m.nr]
		if !ok {
			rs = append(rs, m)
			continue
		}
		r := &rs[i]
		switch {
		case r.action != retNotify:
			return nil, fmt.Errorf("seccomp: %s is both refused and mode-checked (bug)", r.name)
		case len(r.args) == 0:
			// Every call is notified; the listener checks the mode.
		case len(r.args[0].allowed) > 0:
			return nil, fmt.Errorf("seccomp: %s has an allow-list check and a mode check (bug)", r.name)
		default:
			r.args = append(r.args, m.args...)
		}
	}
	return rs, nil
}

// ModeCheck is how the listener of a notifying filter judges a call that
// can set a file's mode (Options.Notify): the refusals BuildSetID makes
// in a deny-only sandbox are the listener's to make and report there.
type ModeCheck struct {
	// Arg indexes the mode in seccomp_data.args; only its low 32 bits
	// count (mode_t).
	Arg int
	// Refused are the bits that refuse the call with EPERM: the set-id
	// bits, plus S_IWOTH (and S_IWGRP with Options.RefuseGroupWrite) for
	// the chmod family.
	Refused uint32
	// Chmod is true for the chmod family (the mode is the file's new
	// mode); false for a creation mode (open, openat, creat, mknod,
	// mknodat), refused whatever the flags, as BuildSetID refuses it.
	Chmod bool
	// Dirfd and Path index the file's name, as in FSCall; Path -1 means
	// the file is the descriptor args[Dirfd] itself (fchmod).
	Dirfd, Path int
}

// modeCheck returns the ModeCheck of mode-setting call m.
func modeCheck(opts Options, m modeArg) ModeCheck {
	return ModeCheck{Arg: m.arg, Refused: refusedModes(opts, m), Chmod: m.chmod, Dirfd: m.dirfd, Path: m.path}
}
