package supervisor

// Write opens of a name (open, openat, creat with a write, create or
// truncate flag): a new file created under the name rules, an existing
// one opened where it was checked, any other object reopened through its
// descriptor; the descriptor handed to the caller (send).

import (
	"os"
	"strconv"
	"strings"

	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/seccomp"
	"golang.org/x/sys/unix"
)

// writeOpenFlags make an open one srt performs.
const writeOpenFlags = unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC

// openTmpfile performs an O_TMPFILE open of directory name: an anonymous
// file in it, so no name comes into being until a link gives it one, and
// that is checked. (The directory is resolved as the parent of a name in
// it.)
func openTmpfile(c *creator, rq request, dirfd int32, name string, flags, mode uint64) verdict {
	d, e := c.res.resolve(rq.pid, rq.root, dirfd, strings.TrimRight(name, "/")+"/x")
	if e != 0 {
		return failed(e)
	}
	defer d.close()
	c.setUmask(rq.pid)
	nfd, err := unix.Openat(d.dir, ".", int(flags)|unix.O_NOCTTY|unix.O_CLOEXEC, c.mode(mode))
	return send(rq, nfd, err, flags)
}

// openByName performs a write open or a truncate(2) of name w, following
// its final component as the call would (w is then where it led, or a
// closed where when a magic link led to an object).
func openByName(c *creator, rq request, w *where, a callArgs) verdict {
	var e unix.Errno
	obj := -1
	if a.op == "truncate" || a.flags&unix.O_NOFOLLOW == 0 && !(a.flags&unix.O_CREAT != 0 && a.flags&unix.O_EXCL != 0) {
		if *w, obj, e = c.res.followFinal(rq.pid, rq.root, *w); e != 0 {
			return failed(e)
		}
	}
	if obj < 0 && policy.Within(w.real, "/proc") && !procOwn(rq.pid, w.real) {
		return failed(unix.EACCES) // see procOwn
	}
	// An O_EXCL create or an O_TMPFILE open never opens what is there
	// (the kernel fails or makes an anonymous file): no need to look.
	exclusive := a.op != "truncate" && (a.flags&unix.O_TMPFILE == unix.O_TMPFILE || a.flags&unix.O_CREAT != 0 && a.flags&unix.O_EXCL != 0)
	if obj < 0 && !exclusive {
		var st unix.Stat_t
		if unix.Fstatat(w.dir, w.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT != unix.S_IFLNK {
			if a.op == "open" && st.Mode&unix.S_IFMT == unix.S_IFREG {
				// The common case, a file: no name can change
				// meanwhile (every creation is made on this
				// thread), so open it where it was checked.
				return openExisting(c, rq, *w, a.flags)
			}
			// Another existing object: work on it (O_PATH), as
			// the kernel would after its lookup.
			o, err := unix.Openat(w.dir, w.name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return failed(errnoOf(err))
			}
			obj = o
		}
	}
	if obj >= 0 {
		defer unix.Close(obj)
		if a.op == "truncate" {
			return truncateObj(c, obj, int64(a.mode))
		}
		return reopen(c, rq, obj, a.flags)
	}
	if a.op == "truncate" {
		return failed(unix.ENOENT)
	}
	return createFile(c, rq, *w, a.flags, a.mode)
}

// createFile performs an open of a name that does not exist (or an
// O_EXCL or O_TMPFILE open, which the kernel fails or makes anonymous)
// and hands the descriptor to the caller.
func createFile(c *creator, rq request, w where, flags, mode uint64) verdict {
	if flags&unix.O_TMPFILE != unix.O_TMPFILE {
		if r := c.names.denied(w.real, kFile); r != "" {
			return refused(r, w.real)
		}
		if r := c.git.dirRule(w, kFile); r != "" {
			return refused(r, w.real)
		}
	}
	c.setUmask(rq.pid)
	// A lock file that did not exist is the sandbox's own, never one the
	// host's git holds (lockSet.note).
	var st unix.Stat_t
	lock := strings.HasSuffix(w.name, ".lock") && flags&unix.O_TMPFILE != unix.O_TMPFILE &&
		unix.Fstatat(w.dir, w.name, &st, unix.AT_SYMLINK_NOFOLLOW) == unix.ENOENT
	nfd, err := unix.Openat(w.dir, w.name, int(flags)|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_CLOEXEC, c.mode(mode))
	if err == nil && lock {
		c.locks.note(w.dir, w.name, w.real, nfd)
	}
	return send(rq, nfd, err, flags)
}

const hostFIFORule = "a FIFO outside the write roots (a host process reads it)"

// hostFIFO reports whether obj (any descriptor) is a FIFO on a read-only
// mount: the host's (/run/initctl, a tool's control pipe). A read-only
// mount refuses writes to files, not opens of a FIFO for writing, and as
// root the sandbox could open a root-only one (adversarial review). The
// sandbox's own FIFOs are in its write roots and TMPDIR.
func hostFIFO(obj int) bool {
	var st unix.Stat_t
	return unix.Fstat(obj, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO && readOnlyMount(obj)
}

// openExisting performs a write open of the existing regular file w.
func openExisting(c *creator, rq request, w where, flags uint64) verdict {
	kind := kExisted
	if strings.HasSuffix(w.name, ".sample") {
		kind = kOther // a hook sample is created, never rewritten
	}
	if r := c.names.denied(w.real, kind); r != "" {
		if readOnlyAt(w.dir, w.name) {
			return failed(unix.EROFS) // as the kernel says first
		}
		return refused(r, w.real)
	}
	if r := c.git.dirRule(w, kExisted); r != "" {
		return refused(r, w.real)
	}
	// O_NONBLOCK: where another process holds a lease, fail at once
	// instead of holding up every creation until the lease is broken;
	// then wait off the loop, as the caller would have.
	nfd, err := unix.Openat(w.dir, w.name, int(flags)|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if flags&unix.O_NONBLOCK == 0 {
		if err == unix.EWOULDBLOCK {
			o, err := unix.Openat(w.dir, w.name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return failed(errnoOf(err))
			}
			defer unix.Close(o)
			return c.waits.open(rq, o, flags, false)
		}
		if err == nil {
			clearNonblock(nfd)
		}
	}
	return send(rq, nfd, err, flags)
}

// reopen performs a write open of an existing object obj (O_PATH): the
// rules are checked on its real path, then it is opened again through
// /proc/self/fd with the caller's flags. /dev/tty is the caller's
// controlling terminal, not srt's; a FIFO with no reader yet is opened
// off the loop (waiters.open), since the open waits for one.
func reopen(c *creator, rq request, obj int, flags uint64) verdict {
	var st unix.Stat_t
	if err := unix.Fstat(obj, &st); err != nil {
		return failed(errnoOf(err))
	}
	if flags&(unix.O_WRONLY|unix.O_RDWR) != 0 && hostFIFO(obj) {
		target, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(obj))
		return refused(hostFIFORule, target)
	}
	var sfs unix.Statfs_t
	if unix.Fstatfs(obj, &sfs) == nil && sfs.Type == unix.PROC_SUPER_MAGIC {
		// Reached through a descriptor (/proc/self/fd/N holding an
		// O_PATH of /proc/1/mem): the object must be the caller's own
		// too (procOwn).
		real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(obj))
		if err != nil || !procOwn(rq.pid, real) {
			return failed(unix.EACCES)
		}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(obj))
		if err != nil {
			return failed(unix.ENOENT)
		}
		kind := kExisted
		if strings.HasSuffix(real, ".sample") {
			kind = kOther // a hook sample is created, never rewritten
		}
		if r := c.names.denied(real, kind); r != "" {
			if readOnlyMount(obj) {
				return failed(unix.EROFS)
			}
			return refused(r, real)
		}
		if r := c.git.dirRuleAt(c.res.root, real, kExisted); r != "" {
			return refused(r, real)
		}
	case unix.S_IFDIR:
		if flags&unix.O_CREAT != 0 && flags&(unix.O_WRONLY|unix.O_RDWR|unix.O_TRUNC) == 0 {
			return failed(unix.EISDIR)
		}
	case unix.S_IFCHR:
		if st.Rdev == unix.Mkdev(5, 0) { // /dev/tty
			t, e := callerTTY(rq.pid, c.ctty, c.res.root)
			if e != 0 {
				return failed(e)
			}
			defer unix.Close(t)
			obj = t
		}
	case unix.S_IFIFO:
		// Without O_NONBLOCK, a read or write open waits for the other
		// end (O_RDWR never waits on Linux: fifo(7)).
		if acc := flags & unix.O_ACCMODE; acc != unix.O_RDWR && flags&unix.O_NONBLOCK == 0 {
			return c.waits.open(rq, obj, flags, true)
		}
	}
	f := int(flags) &^ (unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW)
	if st.Mode&unix.S_IFMT == unix.S_IFREG && flags&unix.O_NONBLOCK == 0 {
		// A lease: as in openExisting, never wait on the loop.
		nfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(obj), f|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err == unix.EWOULDBLOCK {
			return c.waits.open(rq, obj, flags, false)
		}
		if err == nil {
			clearNonblock(nfd)
		}
		return send(rq, nfd, err, flags)
	}
	nfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(obj), f|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	return send(rq, nfd, err, flags)
}

// send answers rq's notification with nfd, the descriptor an open returned
// (closed here), as the call's result; or with the open's error. An
// executable file (any x bit) is handed over in two steps — install,
// close srt's copy, then answer — so that the caller, which may execute
// it as soon as it has closed its own, never finds srt's copy still open
// for writing (ETXTBSY). Other files go in one step (ADDFD with SEND),
// which saves a wake-up.
//
// The caller's thread is not pinned to this CPU around ADDFD to have it
// woken here (tried for issue 19, BENCHMARKS.md "Lean supervisor"): the
// caller returns from its open still pinned, before srt can restore its
// mask, and a process it forks then keeps the one-CPU mask for good; and
// the gain was lost in the noise.
func send(rq request, nfd int, err error, flags uint64) verdict {
	if err != nil {
		return failed(errnoOf(err))
	}
	cloexec := flags&unix.O_CLOEXEC != 0
	var st unix.Stat_t
	if unix.Fstat(nfd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Mode&0o111 != 0 {
		n, err := seccomp.AddFD(rq.fd, rq.nt.ID, nfd, cloexec)
		unix.Close(nfd)
		if err != nil {
			return failed(errnoOf(err))
		}
		return verdict{val: int64(n)}
	}
	defer unix.Close(nfd)
	if _, err := seccomp.AddFDSend(rq.fd, rq.nt.ID, nfd, cloexec); err != nil {
		return failed(errnoOf(err))
	}
	return verdict{val: answered}
}

// clearNonblock takes back the O_NONBLOCK srt added to an open (to fail
// at once on a lease) that the caller did not ask for.
func clearNonblock(fd int) {
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err == nil {
		unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
	}
}
