package supervisor

// The creation calls (seccomp.Options.EmulateCreates; the rules are in
// the package comment): their arguments decoded, the names read from the
// caller and resolved in the sandbox's root, then one handler per family
// of calls (open_linux.go, truncate_linux.go, mkdir_linux.go,
// link_linux.go, rename_linux.go), each returning a verdict.

import (
	"os"

	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/sandbox/linux/fsplan"
	"github.com/srt-go/srt/seccomp"
	"golang.org/x/sys/unix"
)

// creator performs the creation calls of a sandbox. It is used by the
// notification loop's thread only, but for waits, which run on threads of
// their own.
type creator struct {
	names  *nameRules
	git    gitRules
	res    *resolver
	umasks *umaskCache
	locks  lockSet
	waits  *waiters
	// ctty is an O_PATH descriptor of the pty srt gave the command (the
	// command's controlling terminal), for opens of /dev/tty; -1 without
	// one.
	ctty int
	// noWrite are the permission bits no name the sandbox creates may
	// have: others' write, and group write where the group is shared
	// (seccomp.Options.RefuseGroupWrite; seccomp.BuildSetID refuses the
	// same bits in chmod). Taken out of the creation mode, which the
	// caller's umask could not do (umask 0).
	noWrite uint64
	// threadUmask is the answering thread's own umask (setUmask); -1
	// until it is set.
	threadUmask int
}

func newCreator(pol *policy.Policy, tmpdir string, m fsplan.Mapping, noWrite uint64, waits *waiters) *creator {
	return &creator{
		names: newNameRules(pol, tmpdir, m), git: gitRules{tmpdir: tmpdir, allowConfig: pol.AllowGitConfig},
		res: newResolver(), umasks: newUmaskCache(), waits: waits, ctty: -1, noWrite: noWrite, threadUmask: -1,
	}
}

// mode is a creation mode with c.noWrite taken out.
func (c *creator) mode(m uint64) uint32 { return uint32(m & 0o7777 &^ c.noWrite) }

func (c *creator) close() {
	c.locks.removeAll()
	c.res.close()
	c.umasks.close()
	if c.ctty >= 0 {
		unix.Close(c.ctty)
		c.ctty = -1
	}
}

// verdict is what an emulated call comes to.
type verdict struct {
	// val is the call's return value when errno is 0; answered when the
	// notification has been answered already.
	val   int64
	errno unix.Errno
	// rule, when not empty, is the name rule that refuses the call (its
	// answer is EACCES), and target the path it refuses.
	rule, target string
}

// answered is a verdict's val when the notification has been answered
// already (ADDFD with SEND, or by a goroutine that waits on a FIFO).
const answered = -2

// failed is the verdict of a call that fails with e (0: succeeds, 0).
func failed(e unix.Errno) verdict { return verdict{errno: e} }

// refused is the verdict of a call a name rule refuses.
func refused(rule, target string) verdict { return verdict{rule: rule, target: target} }

// done is the verdict of a call srt made, with its error.
func done(err error) verdict { return verdict{errno: errnoOf0(err)} }

func errnoOf(err error) unix.Errno {
	if e, ok := err.(unix.Errno); ok {
		return e
	}
	if pe, ok := err.(*os.PathError); ok {
		return errnoOf(pe.Err)
	}
	return unix.EACCES
}

func errnoOf0(err error) unix.Errno {
	if err == nil {
		return 0
	}
	return errnoOf(err)
}

// request is one notification being emulated.
type request struct {
	fd   int // the listener
	nt   seccomp.Notification
	pid  int // the caller's thread, a host TID
	root int // the sandbox's root (resolver.rootOf)
}

// callArgs are a creation call's arguments, decoded: op is "open",
// "mkdir", "mknod", "symlink", "link", "rename" or "truncate"; p1 is the
// address of the name that comes into being, p2 that of the other path
// (a link's or rename's source, a symlink's target), each relative to
// its dirfd. truncate's length rides in mode.
type callArgs struct {
	op            string
	dirfd, dirfd2 int32
	p1, p2        uint64
	flags, mode   uint64
}

// decode returns the arguments of creation call name; false for a call
// that is not one (umask and openat2 are answered before: see
// dispatcher.emulate).
func decode(name string, a [6]uint64) (callArgs, bool) {
	c := callArgs{dirfd: unix.AT_FDCWD, dirfd2: unix.AT_FDCWD}
	switch name {
	case "open":
		c.op, c.p1, c.flags, c.mode = "open", a[0], uint64(uint32(a[1])), a[2]
	case "openat":
		c.op, c.dirfd, c.p1, c.flags, c.mode = "open", int32(a[0]), a[1], uint64(uint32(a[2])), a[3]
	case "creat":
		c.op, c.p1, c.flags, c.mode = "open", a[0], unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, a[1]
	case "mkdir":
		c.op, c.p1, c.mode = "mkdir", a[0], a[1]
	case "mkdirat":
		c.op, c.dirfd, c.p1, c.mode = "mkdir", int32(a[0]), a[1], a[2]
	case "mknod":
		c.op, c.p1, c.mode, c.flags = "mknod", a[0], a[1], a[2]
	case "mknodat":
		c.op, c.dirfd, c.p1, c.mode, c.flags = "mknod", int32(a[0]), a[1], a[2], a[3]
	case "symlink":
		c.op, c.p2, c.p1 = "symlink", a[0], a[1]
	case "symlinkat":
		c.op, c.p2, c.dirfd, c.p1 = "symlink", a[0], int32(a[1]), a[2]
	case "link":
		c.op, c.p2, c.p1 = "link", a[0], a[1]
	case "linkat":
		c.op, c.dirfd2, c.p2, c.dirfd, c.p1, c.flags = "link", int32(a[0]), a[1], int32(a[2]), a[3], uint64(uint32(a[4]))
	case "rename":
		c.op, c.p2, c.p1 = "rename", a[0], a[1]
	case "renameat":
		c.op, c.dirfd2, c.p2, c.dirfd, c.p1 = "rename", int32(a[0]), a[1], int32(a[2]), a[3]
	case "renameat2":
		c.op, c.dirfd2, c.p2, c.dirfd, c.p1, c.flags = "rename", int32(a[0]), a[1], int32(a[2]), a[3], uint64(uint32(a[4]))
	case "truncate":
		c.op, c.p1, c.mode = "truncate", a[0], a[1] // mode holds the length
	default:
		return c, false
	}
	return c, true
}

// movedDir reports whether a rename that succeeded may have moved a
// directory: an exchange, or a directory (or anything srt cannot tell)
// now at the new name w.
func movedDir(w where, flags uint64) bool {
	if flags&unix.RENAME_EXCHANGE != 0 {
		return true
	}
	var st unix.Stat_t
	return unix.Fstatat(w.dir, w.name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT == unix.S_IFDIR
}

// perform does the call. A verdict with val answered means the answer
// was sent.
func (c *creator) perform(fd int, nt seccomp.Notification, a callArgs) verdict {
	pid := int(nt.PID)
	name, e := pathArg(pid, a.p1)
	if e != 0 {
		return failed(e)
	}
	var name2 string
	if a.op == "link" || a.op == "symlink" || a.op == "rename" {
		if name2, e = pathArg(pid, a.p2); e != 0 && !(a.op == "link" && a.flags&unix.AT_EMPTY_PATH != 0 && e == unix.EFAULT && a.p2 == 0) {
			return failed(e)
		}
	}
	// Everything is read: from here on the caller's memory is not used.
	if !seccomp.IDValid(fd, nt.ID) {
		return failed(unix.ENOENT)
	}
	root, e := c.res.rootOf(pid)
	if e != 0 {
		return failed(e)
	}
	rq := request{fd: fd, nt: nt, pid: pid, root: root}
	defer c.res.release() // after every where of the call is closed
	if a.op == "open" && a.flags&unix.O_TMPFILE == unix.O_TMPFILE {
		return openTmpfile(c, rq, a.dirfd, name, a.flags, a.mode)
	}
	w, e := c.res.resolve(pid, root, a.dirfd, name)
	if e == unix.EEXIST && (a.op == "open" || a.op == "truncate") {
		e = unix.EISDIR // ".", ".." or "/"
	}
	if e != 0 {
		return failed(e)
	}
	// The handlers of open and truncate may follow w's final component:
	// w is then where they got to, closed here.
	defer func() { w.close() }()
	if w.trailing && (a.op == "open" || a.op == "truncate") {
		// "name/" must be a directory, which cannot be opened for
		// writing: EISDIR, or ENOTDIR when it is something else.
		var st unix.Stat_t
		if unix.Fstatat(w.dir, w.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Mode&unix.S_IFMT != unix.S_IFLNK {
			return failed(unix.ENOTDIR)
		}
		return failed(unix.EISDIR)
	}
	var v verdict
	switch a.op {
	case "open", "truncate":
		v = openByName(c, rq, &w, a)
	case "mkdir":
		v = mkdirAt(c, rq, w, a.mode)
	case "mknod":
		v = mknodAt(c, rq, w, a.mode, a.flags)
	case "symlink":
		v = symlinkAt(c, w, name2)
	case "link":
		v = linkAt(c, rq, w, a.dirfd2, name2, a.flags)
	case "rename":
		o, e := c.res.resolve(pid, root, a.dirfd2, name2)
		if e != 0 {
			return failed(e)
		}
		defer o.close()
		v = renameAt(c, o, w, a.flags, pid)
		if v.errno == 0 && v.rule == "" && movedDir(w, a.flags) {
			// A directory now answers to another path: every cached
			// path below either name may lead elsewhere. A file's
			// rename (the common case: a build's "mv o.tmp o.o")
			// changes no directory's path.
			c.res.forgetDirs()
		}
	default:
		return failed(unix.ENOSYS)
	}
	// A name refused in a read-only directory (a denied one, or one
	// outside the write roots): the kernel would have said EROFS before
	// any name rule, and so does srt.
	if v.rule != "" && w.dir >= 0 && readOnlyMount(w.dir) {
		v.errno, v.rule, v.target = unix.EROFS, "", ""
	}
	return v
}
