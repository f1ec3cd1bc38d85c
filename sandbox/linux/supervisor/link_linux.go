package supervisor

// symlink, symlinkat, link and linkat: a new name for a target (a
// symlink's) or for an existing object (a hard link's), which must not
// give a protected file a writable second name.

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// symlinkAt performs symlink(2) of name w pointing at target.
func symlinkAt(c *creator, w where, target string) verdict {
	if r := c.names.symlinkDenied(w.real); r != "" {
		return refused(r, w.real)
	}
	if r := c.git.dirRule(w, kOther); r != "" {
		return refused(r, w.real)
	}
	c.res.forgetDirs()
	return done(unix.Symlinkat(target, w.dir, w.name))
}

// linkAt performs link(2) of name w to name2 (relative to dirfd2; with
// AT_EMPTY_PATH and no name, the object of descriptor dirfd2).
func linkAt(c *creator, rq request, w where, dirfd2 int32, name2 string, flags uint64) verdict {
	if r := c.names.denied(w.real, kOther); r != "" {
		return refused(r, w.real)
	}
	if r := c.git.dirRule(w, kOther); r != "" {
		return refused(r, w.real)
	}
	if flags&unix.AT_EMPTY_PATH != 0 && name2 == "" {
		if dirfd2 < 0 {
			return failed(unix.EBADF)
		}
		o, err := unix.Open("/proc/"+strconv.Itoa(rq.pid)+"/fd/"+strconv.Itoa(int(dirfd2)), unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return failed(unix.EBADF)
		}
		defer unix.Close(o)
		return linkObject(c, o, w)
	}
	o, e := c.res.resolve(rq.pid, rq.root, dirfd2, name2)
	if e != 0 {
		return failed(e)
	}
	if flags&unix.AT_SYMLINK_FOLLOW != 0 {
		var obj int
		if o, obj, e = c.res.followFinal(rq.pid, rq.root, o); e != 0 {
			return failed(e)
		}
		if obj >= 0 {
			// A magic link (/proc/self/fd/N: naming an O_TMPFILE).
			defer unix.Close(obj)
			return linkObject(c, obj, w)
		}
	}
	defer o.close()
	if r := c.names.denied(o.real, kExisted); r != "" {
		if readOnlyAt(o.dir, o.name) {
			return failed(unix.EXDEV) // a bind mount of its own
		}
		return refused(r, o.real)
	}
	var ost unix.Stat_t
	if unix.Fstatat(o.dir, o.name, &ost, unix.AT_SYMLINK_NOFOLLOW) == nil && ost.Mode&unix.S_IFMT == unix.S_IFLNK {
		// A hard link to a symbolic link is a symbolic link.
		if r := c.names.symlinkDenied(w.real); r != "" {
			return refused(r, w.real)
		}
	}
	return done(unix.Linkat(o.dir, o.name, w.dir, w.name, 0))
}

// linkObject gives object o (O_PATH, reached through a descriptor of the
// caller's) the new name w: a second name for a protected file would be
// a way to write it, so o's real path is checked too. Through the magic
// link, not AT_EMPTY_PATH, which needs CAP_DAC_READ_SEARCH before Linux
// 6.10.
func linkObject(c *creator, o int, w where) verdict {
	var st unix.Stat_t
	if unix.Fstat(o, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		if r := c.names.symlinkDenied(w.real); r != "" {
			return refused(r, w.real)
		}
	}
	if real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(o)); err == nil {
		if r := c.names.denied(real, kExisted); r != "" {
			if readOnlyMount(o) {
				return failed(unix.EXDEV)
			}
			return refused(r, real)
		}
	}
	return done(unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(o), w.dir, w.name, unix.AT_SYMLINK_FOLLOW))
}
