package supervisor

// Lock files the sandbox leaves in git directories.

import (
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// lockSet are the lock files (*.lock directly in a git directory) the
// sandbox created; those still there, the same inode, are removed when
// the sandbox has ended (removeAll): a lock left behind (config.lock
// whose rename srt refused, index.lock of a killed git) makes the host's
// git fail afterwards. At most maxLocks are kept. Used by the
// notification loop's thread only.
type lockSet struct {
	locks []lockFile
}

// lockFile is a lock file the sandbox created.
type lockFile struct {
	dir      int // O_PATH descriptor of its directory, srt's own
	name     string
	dev, ino uint64
}

// maxLocks bounds a lockSet; beyond it the oldest are forgotten
// (closed): a git directory holds a handful of lock names.
const maxLocks = 256

// note records nfd, just created as name in directory dir (real path
// real), when it is a git directory's lock file.
func (c *lockSet) note(dir int, name, real string, nfd int) {
	if !strings.HasSuffix(name, ".lock") || !(path.Base(path.Dir(real)) == ".git" || isGitDir(dir, "")) {
		return
	}
	var st unix.Stat_t
	if unix.Fstat(nfd, &st) != nil {
		return
	}
	d, err := unix.Openat(dir, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	if len(c.locks) == maxLocks {
		unix.Close(c.locks[0].dir)
		c.locks = c.locks[1:]
	}
	c.locks = append(c.locks, lockFile{dir: d, name: name, dev: uint64(st.Dev), ino: st.Ino})
}

// removeAll removes the recorded lock files that are still what the
// sandbox created.
func (c *lockSet) removeAll() {
	for _, l := range c.locks {
		var st unix.Stat_t
		if unix.Fstatat(l.dir, l.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && uint64(st.Dev) == l.dev && st.Ino == l.ino {
			unix.Unlinkat(l.dir, l.name, 0)
		}
		unix.Close(l.dir)
	}
	c.locks = nil
}
