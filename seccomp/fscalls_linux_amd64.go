package seccomp

import "golang.org/x/sys/unix"

// fsCalls are the observed filesystem calls on amd64: the *at calls and
// the older path calls amd64 still has.
func fsCalls() map[uint32]namedFSCall {
	m := atCalls()
	p := func(op FSOp, path int) FSCall {
		return FSCall{Op: op, Dirfd: -1, Path: path, Flags: -1, Dirfd2: -1, Path2: -1}
	}
	m[unix.SYS_OPEN] = namedFSCall{"open", FSCall{Op: OpOpen, Dirfd: -1, Path: 0, Flags: 1, Dirfd2: -1, Path2: -1}}
	m[unix.SYS_CREAT] = namedFSCall{"creat", p(OpCreate, 0)}
	m[unix.SYS_MKDIR] = namedFSCall{"mkdir", p(OpCreate, 0)}
	m[unix.SYS_MKNOD] = namedFSCall{"mknod", p(OpCreate, 0)}
	m[unix.SYS_SYMLINK] = namedFSCall{"symlink", p(OpCreate, 1)}
	m[unix.SYS_LINK] = namedFSCall{"link", p(OpCreate, 1)}
	m[unix.SYS_UNLINK] = namedFSCall{"unlink", p(OpUnlink, 0)}
	m[unix.SYS_RMDIR] = namedFSCall{"rmdir", p(OpUnlink, 0)}
	m[unix.SYS_RENAME] = namedFSCall{"rename", FSCall{Op: OpRename, Dirfd: -1, Path: 0, Flags: -1, Dirfd2: -1, Path2: 1}}
	m[unix.SYS_CHMOD] = namedFSCall{"chmod", p(OpMode, 0)}
	m[unix.SYS_CHOWN] = namedFSCall{"chown", p(OpOwner, 0)}
	m[unix.SYS_LCHOWN] = namedFSCall{"lchown", p(OpOwner, 0)}
	m[unix.SYS_UTIME] = namedFSCall{"utime", p(OpTimes, 0)}
	m[unix.SYS_UTIMES] = namedFSCall{"utimes", p(OpTimes, 0)}
	m[unix.SYS_FUTIMESAT] = namedFSCall{"futimesat", FSCall{Op: OpTimes, Dirfd: 0, Path: 1, Flags: -1, Dirfd2: -1, Path2: -1}}
	return m
}
