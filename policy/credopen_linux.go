package policy

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// openNoFollow opens path (already resolved through the link guard, so
// holding no symbolic link) for reading without following a symbolic
// link anywhere on it (openat2(2) RESOLVE_NO_SYMLINKS) and without
// blocking on a fifo: a parent directory swapped for a link between the
// guard's resolution and this open is refused (ELOOP) instead of leading
// srt to read, and inject, another file (found by the second adversarial
// review). Kernels before 5.6 have no openat2: the last component alone
// is then not followed (O_NOFOLLOW), as where a container's seccomp
// filter refuses openat2 (EPERM).
func openNoFollow(path string) (*os.File, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) { // no openat2, or a seccomp filter refusing it
		return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}
