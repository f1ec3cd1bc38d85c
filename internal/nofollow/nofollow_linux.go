// Package nofollow walks absolute paths one component at a time without
// following any symbolic link, for the checks srt and the sandbox's PID 1
// make of mounts that must be where they were planned.
package nofollow

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Open opens absolute path p (O_PATH) one component at a time, refusing a
// symbolic link at any component (an error wrapping ELOOP), and returns
// it with its parent directory, both O_PATH and close-on-exec; the caller
// closes both. For "/" parent is -1.
func Open(p string) (fd, parent int, err error) {
	fd, err = unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, -1, err
	}
	parent = -1
	for _, name := range strings.Split(strings.Trim(p, "/"), "/") {
		if name == "" {
			continue
		}
		next, err := unix.Openat(fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			closeBoth(fd, parent)
			return -1, -1, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
			closeBoth(fd, parent)
			unix.Close(next)
			if err == nil {
				err = fmt.Errorf("%s is a symbolic link: %w", name, unix.ELOOP)
			}
			return -1, -1, err
		}
		if parent >= 0 {
			unix.Close(parent)
		}
		parent, fd = fd, next
	}
	return fd, parent, nil
}

// Stat is the stat(2) of what Open reaches.
func Stat(p string) (unix.Stat_t, error) {
	var st unix.Stat_t
	fd, parent, err := Open(p)
	if err != nil {
		return st, err
	}
	defer closeBoth(fd, parent)
	return st, unix.Fstat(fd, &st)
}

func closeBoth(a, b int) {
	if a >= 0 {
		unix.Close(a)
	}
	if b >= 0 {
		unix.Close(b)
	}
}
