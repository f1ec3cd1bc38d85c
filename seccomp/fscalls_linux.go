//go:build amd64 || arm64

package seccomp

import "golang.org/x/sys/unix"

type namedFSCall struct {
	name string
	call FSCall
}

// atCalls are the observed calls both amd64 and arm64 have.
func atCalls() map[uint32]namedFSCall {
	at := func(op FSOp, dirfd, path int) FSCall {
		return FSCall{Op: op, Dirfd: dirfd, Path: path, Flags: -1, Dirfd2: -1, Path2: -1}
	}
	m := map[uint32]namedFSCall{
		unix.SYS_OPENAT:       {"openat", FSCall{Op: OpOpen, Dirfd: 0, Path: 1, Flags: 2, Dirfd2: -1, Path2: -1}},
		unix.SYS_OPENAT2:      {"openat2", FSCall{Op: OpOpen, Dirfd: 0, Path: 1, Flags: FlagsInHow, Dirfd2: -1, Path2: -1}},
		unix.SYS_MKDIRAT:      {"mkdirat", at(OpCreate, 0, 1)},
		unix.SYS_MKNODAT:      {"mknodat", at(OpCreate, 0, 1)},
		unix.SYS_SYMLINKAT:    {"symlinkat", at(OpCreate, 1, 2)},
		unix.SYS_LINKAT:       {"linkat", FSCall{Op: OpCreate, Dirfd: 2, Path: 3, Flags: -1, Dirfd2: -1, Path2: -1}},
		unix.SYS_UNLINKAT:     {"unlinkat", at(OpUnlink, 0, 1)},
		unix.SYS_RENAMEAT:     {"renameat", FSCall{Op: OpRename, Dirfd: 0, Path: 1, Flags: -1, Dirfd2: 2, Path2: 3}},
		unix.SYS_RENAMEAT2:    {"renameat2", FSCall{Op: OpRename, Dirfd: 0, Path: 1, Flags: -1, Dirfd2: 2, Path2: 3}},
		unix.SYS_TRUNCATE:     {"truncate", at(OpData, -1, 0)},
		unix.SYS_FCHMODAT:     {"fchmodat", at(OpMode, 0, 1)},
		unix.SYS_FCHMODAT2:    {"fchmodat2", at(OpMode, 0, 1)},
		unix.SYS_FCHOWNAT:     {"fchownat", at(OpOwner, 0, 1)},
		unix.SYS_UTIMENSAT:    {"utimensat", at(OpTimes, 0, 1)},
		unix.SYS_SETXATTR:     {"setxattr", at(OpXattr, -1, 0)},
		unix.SYS_LSETXATTR:    {"lsetxattr", at(OpXattr, -1, 0)},
		unix.SYS_REMOVEXATTR:  {"removexattr", at(OpXattr, -1, 0)},
		unix.SYS_LREMOVEXATTR: {"lremovexattr", at(OpXattr, -1, 0)},
	}
	return m
}
