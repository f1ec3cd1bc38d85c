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

// createPlaceholder creates an empty file or directory at path, refusing to
// follow any symbolic link on the way (openat2 RESOLVE_NO_SYMLINKS). It
// reports false when something already exists there.
func createPlaceholder(path string, dir bool, content string) (bool, error) {
	parent, name := filepath.Split(path)
	pfd, err := unix.Openat2(unix.AT_FDCWD, parent, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return false, fmt.Errorf("placeholder %s: %w", path, err)
	}
	defer unix.Close(pfd)
	if dir {
		err = unix.Mkdirat(pfd, name, 0o755)
	} else {
		var fd int
		fd, err = unix.Openat(pfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if err == nil {
			if content != "" {
				unix.Write(fd, []byte(content))
			}
			unix.Close(fd)
		}
	}
	if errors.Is(err, unix.EEXIST) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("placeholder %s: %w", path, err)
	}
	return true, nil
}

// writeMarker records the placeholder's identity in its lock file, so that
// whichever guardian is last can tell the placeholder from a file a person
// created at the same name.
func writeMarker(fd int, path string) {
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil {
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
