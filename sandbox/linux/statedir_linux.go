package linux

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// StateDir returns srt's private per-user directory, creating it: it holds
// the placeholder locks, the mount point of every sandbox's private TMPDIR
// and (with the network) the proxies' sockets. It is
// $XDG_RUNTIME_DIR/srt when that is set and usable, else /tmp/srt-UID.
//
// The directory must be a real directory owned by the caller with mode
// 0700: a directory another user created first (a squatter in /tmp) or a
// symbolic link is refused with an error, never used.
func StateDir() (string, error) {
	uid := os.Getuid()
	var dir string
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) && ownedPrivateDir(x, uid) {
		dir = filepath.Join(x, "srt")
	} else {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("srt-%d", uid))
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return "", fmt.Errorf("state directory: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return "", fmt.Errorf("state directory: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != uid || st.Mode&0o077 != 0 {
		return "", fmt.Errorf("state directory %s is not a directory owned by uid %d with mode 0700; remove it", dir, uid)
	}
	for _, sub := range []string{"locks", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil && !os.IsExist(err) {
			return "", fmt.Errorf("state directory: %w", err)
		}
	}
	return dir, nil
}

func ownedPrivateDir(path string, uid int) bool {
	var st unix.Stat_t
	return unix.Stat(path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR &&
		int(st.Uid) == uid && st.Mode&0o022 == 0
}
