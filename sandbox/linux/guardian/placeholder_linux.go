package guardian

// This file runs in the guardian process: the placeholders and lock files
// it makes on the host, and the checks that it removes only its own.

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// lockName is the lock file of path in dir: a hash, so that any path
// fits in one name.
func lockName(dir, path string) string {
	sum := sha256.Sum256([]byte(path))
	return filepath.Join(dir, hex.EncodeToString(sum[:16]))
}

// openParent opens path's directory (O_PATH), refusing to follow any
// symbolic link on the way (openat2 RESOLVE_NO_SYMLINKS), and returns it
// with path's last component.
func openParent(path string) (pfd int, name string, err error) {
	parent, name := filepath.Split(path)
	pfd, err = unix.Openat2(unix.AT_FDCWD, parent, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return -1, "", fmt.Errorf("placeholder %s: %w", path, err)
	}
	return pfd, name, nil
}

// createPlaceholder creates an empty file or directory name in directory
// pfd, never through a link (O_EXCL|O_NOFOLLOW, mkdirat), and returns a
// descriptor of what it created (the file it wrote; the directory,
// O_PATH), or -1 when something already exists there.
func createPlaceholder(pfd int, name string, dir bool, content string) (int, error) {
	var err error
	fd := -1
	if dir {
		if err = unix.Mkdirat(pfd, name, 0o755); err == nil {
			fd, err = unix.Openat(pfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
	} else {
		fd, err = unix.Openat(pfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if err == nil && content != "" {
			unix.Write(fd, []byte(content))
		}
	}
	if errors.Is(err, unix.EEXIST) {
		return -1, nil
	}
	if err != nil {
		return -1, fmt.Errorf("placeholder %s: %w", name, err)
	}
	return fd, nil
}

// holdObject opens what is at name in pfd (O_PATH, not following a
// link), -1 when nothing is: held, its inode cannot be given to another
// file, which a marker of device and inode would take for the
// placeholder.
func holdObject(pfd int, name string) int {
	fd, err := unix.Openat(pfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
}

// writeMarker records the placeholder's identity in its lock file, so that
// whichever guardian is last can tell the placeholder from a file a person
// created at the same name. obj is the placeholder, held (holdObject).
func writeMarker(fd, obj int) {
	var st unix.Stat_t
	if obj < 0 || unix.Fstat(obj, &st) != nil {
		return
	}
	unix.Ftruncate(fd, 0)
	unix.Pwrite(fd, []byte(fmt.Sprintf("%d %d %d\n", st.Dev, st.Ino, st.Size)), 0)
}

// readMarker returns the placeholder's device, inode and size as created.
func readMarker(fd int) (dev, ino uint64, size int64, ok bool) {
	buf := make([]byte, 96)
	n, _ := unix.Pread(fd, buf, 0)
	f := strings.Fields(string(buf[:max(n, 0)]))
	if len(f) != 3 {
		return 0, 0, 0, false
	}
	d, err1 := strconv.ParseUint(f[0], 10, 64)
	i, err2 := strconv.ParseUint(f[1], 10, 64)
	sz, err3 := strconv.ParseInt(f[2], 10, 64)
	return d, i, sz, err1 == nil && err2 == nil && err3 == nil
}

func sameFile(fd int, path string) bool {
	var a, b unix.Stat_t
	return unix.Fstat(fd, &a) == nil && unix.Stat(path, &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino
}
