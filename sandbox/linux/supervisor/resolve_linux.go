package supervisor

// Names resolved inside the sandbox's root, from srt's side: the root
// itself, a cache of resolved directories, the caller's /proc/self,
// symbolic links followed by hand, and what srt can tell of the mounts
// there.

import (
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/srt-go/srt/policy"
	"golang.org/x/sys/unix"
)

// where is a name resolved in the sandbox: its parent directory as an
// O_PATH descriptor of srt's, the final component, and the real path.
type where struct {
	dir      int
	name     string
	real     string
	trailing bool // the caller wrote a trailing slash
	// cached: dir is the resolver's cached descriptor, not the
	// where's own; close leaves it open (resolver.forgetDirs closes it
	// once the call is answered).
	cached bool
}

func (w where) close() {
	if w.dir >= 0 && !w.cached {
		unix.Close(w.dir)
	}
}

// resolver resolves names in the sandbox's root. It is used by the
// notification loop's thread only.
type resolver struct {
	// root is the sandbox's root directory (O_PATH), opened from the first
	// caller's /proc/PID/root and kept: every process of the sandbox has
	// that root, since chroot, pivot_root, setns and mount are refused by
	// the seccomp filter. -1 until then.
	root int
	// dirs caches directories resolved in root, by the path asked for:
	// only paths without symbolic links, ".", ".." or doubled slashes
	// (the directory's real path is the path itself). Every name the
	// sandbox creates is created here, so the cache is emptied whenever a
	// path could come to lead elsewhere: after each rename, mkdir and
	// symlink and each rename that moved a directory. A cached directory
	// that is removed meanwhile stays removed: creating in it fails with
	// ENOENT, as it would. Lookups hand out the cached descriptor itself
	// (where.cached), so a forgotten one is closed only by release, once
	// the call that used it is answered.
	dirs map[string]cachedDir
	// retired are the forgotten descriptors release closes.
	retired []int
}

type cachedDir struct {
	fd   int
	real string
}

func newResolver() *resolver { return &resolver{root: -1, dirs: map[string]cachedDir{}} }

// forgetDirs empties the directory cache; its descriptors stay open
// until release.
func (c *resolver) forgetDirs() {
	for _, d := range c.dirs {
		c.retired = append(c.retired, d.fd)
	}
	clear(c.dirs)
}

// release closes the descriptors forgetDirs retired. Called once no
// where of the call being answered is in use.
func (c *resolver) release() {
	for _, fd := range c.retired {
		unix.Close(fd)
	}
	c.retired = c.retired[:0]
}

func (c *resolver) close() {
	c.forgetDirs()
	c.release()
	if c.root >= 0 {
		unix.Close(c.root)
		c.root = -1
	}
}

// rootOf returns the sandbox's root, opening it from pid's the first time.
func (c *resolver) rootOf(pid int) (int, unix.Errno) {
	if c.root < 0 {
		fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, unix.ENOENT
		}
		c.root = fd
	}
	return c.root, 0
}

// resolve finds the parent directory of p (relative to the caller's dirfd
// or working directory) inside the sandbox's root.
func (c *resolver) resolve(pid, root int, dirfd int32, p string) (where, unix.Errno) {
	w := where{dir: -1}
	if p == "" {
		return w, unix.ENOENT
	}
	full := p
	if !strings.HasPrefix(p, "/") {
		link := "/proc/" + strconv.Itoa(pid) + "/cwd"
		if dirfd != unix.AT_FDCWD {
			if dirfd < 0 {
				return w, unix.EBADF
			}
			link = "/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(int(dirfd))
		}
		base, err := os.Readlink(link)
		if err != nil {
			if errnoOf(err) == unix.ENAMETOOLONG {
				return w, unix.ENAMETOOLONG // a directory deeper than PATH_MAX
			}
			return w, unix.EBADF
		}
		if !strings.HasPrefix(base, "/") {
			return w, unix.ENOTDIR
		}
		if strings.HasSuffix(base, " (deleted)") {
			// The directory was removed: the kernel says ENOENT, and
			// the path read back names something else, if anything.
			var st unix.Stat_t
			if unix.Stat(link, &st) != nil || st.Nlink == 0 {
				return w, unix.ENOENT
			}
		}
		full = base + "/" + p
	}
	return c.resolveIn(pid, root, full)
}

// resolveIn resolves the parent of the absolute path full in root. The
// kernel does it (openat2 RESOLVE_IN_ROOT); when that fails with ENOENT
// or ELOOP and the path may go through /proc (srt's thread is not in the
// sandbox's PID namespace, so procfs' "self" names nothing for it, and
// RESOLVE_IN_ROOT follows no magic link such as /proc/self/cwd), the
// path is resolved component by component instead (procDir).
func (c *resolver) resolveIn(pid, root int, full string) (where, unix.Errno) {
	w := where{dir: -1}
	full = procSelf(pid, full)
	trimmed := strings.TrimRight(full, "/")
	w.trailing = len(trimmed) != len(full)
	if trimmed == "" {
		return w, unix.EEXIST // "/"
	}
	i := strings.LastIndexByte(trimmed, '/')
	dir, name := trimmed[:i+1], trimmed[i+1:]
	if name == "." || name == ".." {
		return w, unix.EEXIST
	}
	if d, ok := c.dirs[dir]; ok {
		w.dir, w.name, w.real, w.cached = d.fd, name, path.Join(d.real, name), true
		return w, 0
	}
	fd, err := openInRoot(root, dir)
	if err == unix.ENOENT || err == unix.ELOOP {
		if real, ok := procDir(pid, root, dir); ok {
			fd, err = openInRoot(root, real)
		}
	}
	if err != nil {
		return w, errnoOf(err)
	}
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || !strings.HasPrefix(real, "/") {
		unix.Close(fd)
		return w, unix.ENOENT
	}
	if (real == "/" && dir == "/" || dir == real+"/") && !strings.Contains(real, " (deleted)") && !policy.Within(real, "/proc") {
		if len(c.dirs) >= 1024 {
			c.forgetDirs()
		}
		c.dirs[dir] = cachedDir{fd: fd, real: real}
		w.cached = true
	}
	w.dir, w.name, w.real = fd, name, path.Join(real, name)
	return w, 0
}

// openInRoot opens directory dir (absolute) of the sandbox as O_PATH;
// symbolic links and ".." stay inside root, magic links are refused.
func openInRoot(root int, dir string) (int, error) {
	for {
		fd, err := unix.Openat2(root, dir, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err == unix.EAGAIN || err == unix.EINTR {
			continue // a rename elsewhere in the mount: retry (openat2(2))
		}
		return fd, err
	}
}

// procSelf rewrites a leading /proc/self or /proc/thread-self into the
// caller's own directory of the sandbox's procfs.
func procSelf(pid int, p string) string {
	var rest string
	var thread bool
	switch {
	case p == "/proc/self" || strings.HasPrefix(p, "/proc/self/"):
		rest = p[len("/proc/self"):]
	case p == "/proc/thread-self" || strings.HasPrefix(p, "/proc/thread-self/"):
		rest, thread = p[len("/proc/thread-self"):], true
	default:
		return p
	}
	tgid, tid, ok := nsIDs(pid)
	if !ok {
		return p
	}
	if thread {
		return "/proc/" + strconv.Itoa(tgid) + "/task/" + strconv.Itoa(tid) + rest
	}
	return "/proc/" + strconv.Itoa(tgid) + rest
}

// procDir resolves directory path dir of the sandbox component by
// component, following symbolic links by reading them and rewriting
// /proc/self (procSelf) wherever a link leads there (/dev/fd is a link
// to /proc/self/fd). A magic link met on the way (/proc/N/cwd/…) is
// followed by the path it shows. It returns a path without links, which
// openInRoot opens; false when there is nothing to rewrite or the walk
// fails. The result need not be what the kernel would reach: whatever it
// names, the rules are checked on the real path of the directory the
// call is then made in.
func procDir(pid, root int, dir string) (string, bool) {
	if !strings.Contains(dir, "/proc") && !strings.HasPrefix(dir, "/dev/") {
		return "", false
	}
	parts := strings.Split(dir, "/")
	cur := "/"
	buf := make([]byte, 4096)
	for links := 0; len(parts) > 0; {
		part := parts[0]
		parts = parts[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			continue
		}
		next := procSelf(pid, path.Join(cur, part))
		fd, err := unix.Openat2(root, next, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err != nil {
			return "", false
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		if err != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
			unix.Close(fd)
			if err != nil {
				return "", false
			}
			cur = next
			continue
		}
		if strings.HasPrefix(next, "/proc/") && !procOwn(pid, next) {
			unix.Close(fd)
			return "", false // another process's magic link (procOwn)
		}
		n, err := unix.Readlinkat(fd, "", buf)
		unix.Close(fd)
		if links++; err != nil || links > 40 {
			return "", false
		}
		target := string(buf[:n])
		if !strings.HasPrefix(target, "/") {
			target = path.Join(path.Dir(next), target)
		}
		parts = append(strings.Split(target, "/"), parts...)
		cur = "/"
	}
	return cur, true
}

// followFinal follows w's final component while it is a symbolic link
// (open without O_NOFOLLOW, link with AT_SYMLINK_FOLLOW), resolving each
// target in the sandbox's root. A magic link of the sandbox's procfs
// (/proc/N/fd/M, reached from /dev/stdout or /dev/fd/M) is followed by
// the kernel to its object, returned as obj (O_PATH; -1 otherwise): the
// object exists, and w is closed.
func (c *resolver) followFinal(pid, root int, w where) (_ where, obj int, _ unix.Errno) {
	buf := make([]byte, 4096)
	for range 40 {
		var st unix.Stat_t
		if err := unix.Fstatat(w.dir, w.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
			return w, -1, 0
		}
		if strings.HasPrefix(w.real, "/proc/") {
			var sfs unix.Statfs_t
			if unix.Fstatfs(w.dir, &sfs) == nil && sfs.Type == unix.PROC_SUPER_MAGIC {
				// A procfs link: a magic link jumps to its object
				// without a path walk; procfs' other links are
				// relative and stay in procfs. Only the caller's
				// own (procOwn).
				if !procOwn(pid, w.real) {
					w.close()
					return where{dir: -1}, -1, unix.EACCES
				}
				o, err := unix.Openat(w.dir, w.name, unix.O_PATH|unix.O_CLOEXEC, 0)
				w.close()
				if err != nil {
					return where{dir: -1}, -1, errnoOf(err)
				}
				return where{dir: -1}, o, 0
			}
		}
		n, err := unix.Readlinkat(w.dir, w.name, buf)
		if err != nil {
			w.close()
			return where{dir: -1}, -1, errnoOf(err)
		}
		target := string(buf[:n])
		if !strings.HasPrefix(target, "/") {
			target = path.Dir(w.real) + "/" + target
		}
		w.close()
		var e unix.Errno
		if w, e = c.resolveIn(pid, root, target); e != 0 {
			return w, -1, e
		}
	}
	w.close()
	return where{dir: -1}, -1, unix.ELOOP
}

// isFile reports whether the sandbox has a file (not a directory) at real
// path p; for the record only.
func (c *resolver) isFile(p string) bool {
	if c.root < 0 {
		return false
	}
	fd, err := unix.Openat2(c.root, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR
}

// readOnlyMount reports whether obj (any descriptor) lies on a read-only
// mount: a protected path srt bound read-only, whose writes the kernel
// refuses with EROFS before any name rule applies.
func readOnlyMount(obj int) bool {
	var sfs unix.Statfs_t
	return unix.Fstatfs(obj, &sfs) == nil && sfs.Flags&unix.ST_RDONLY != 0
}

// readOnlyAt is readOnlyMount for name in dir.
func readOnlyAt(dir int, name string) bool {
	fd, err := unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return readOnlyMount(fd)
}

// mountPoint reports whether name in dir is a mount point of the sandbox
// (a path srt bound: a protected one or a pinned parent). The kernel
// refuses to rename one with EBUSY only when it is a mount point in the
// caller's mount namespace (is_local_mountpoint), and srt's thread is in
// another one, so srt checks itself: the name's mount is not its
// directory's (lookups from a descriptor of the sandbox's tree cross the
// sandbox's mounts).
func mountPoint(dir int, name string) bool {
	var d, e unix.Statx_t
	if unix.Statx(dir, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &d) != nil ||
		unix.Statx(dir, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &e) != nil {
		return false
	}
	return d.Mnt_id != e.Mnt_id
}

// procOwn reports whether real path p, inside the sandbox's procfs, is
// the caller's own directory there (/proc/TGID/…). srt's thread owns the
// sandbox's user namespace, which gives it every capability there: the
// kernel would let it open another process's /proc/N/mem or fd/M for
// writing, where the caller itself could not. So srt works only on the
// caller's own procfs files.
func procOwn(pid int, p string) bool {
	tgid, _, ok := nsIDs(pid)
	return ok && policy.Within(p, "/proc/"+strconv.Itoa(tgid))
}
