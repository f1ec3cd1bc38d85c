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
	chmodBits := uint32(setIDBits | unix.S_IWOTH)
	if opts.RefuseGroupWrite {
		chmodBits |= unix.S_IWGRP
	}
	prog := []bpf.Instruction{bpf.LoadAbsolute{Off: offNr, Size: 4}}
	for _, m := range s.modeArgs {
		// if nr == m.nr { if (u32)args[m.arg] & bits { return EPERM }; return ALLOW }
		bits := uint32(setIDBits)
		if m.chmod {
			bits = chmodBits
		}
		blk, err := emitRule(rule{name: m.name, nr: m.nr, action: retEPERM, args: []argCheck{{arg: m.arg, val: bits}}})
		if err != nil {
			return nil, err
		}
		prog = append(prog, blk...)
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
