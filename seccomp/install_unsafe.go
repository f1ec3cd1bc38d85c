//go:build linux

package seccomp

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// setModeFilter calls
// seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog).
func setModeFilter(filter []unix.SockFilter) error {
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	r1, _, errno := unix.Syscall(unix.SYS_SECCOMP,
		unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(filter)
	if errno != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER, TSYNC): %w", errno)
	}
	if r1 != 0 {
		// With TSYNC a positive return is the ID of a thread that could
		// not be synchronized (it already has a divergent filter); no
		// thread got the new filter.
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER, TSYNC): thread %d cannot be synchronized", r1)
	}
	return nil
}

// setModeFilterListener calls seccomp(SECCOMP_SET_MODE_FILTER,
// TSYNC|TSYNC_ESRCH|NEW_LISTENER, &prog) and returns the listener.
func setModeFilterListener(filter []unix.SockFilter) (int, error) {
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	const flags = unix.SECCOMP_FILTER_FLAG_TSYNC | unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH |
		unix.SECCOMP_FILTER_FLAG_NEW_LISTENER
	r1, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags,
		uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(filter)
	if errno != 0 {
		// ESRCH: a thread could not be synchronized; nothing installed.
		return -1, fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER, TSYNC|TSYNC_ESRCH|NEW_LISTENER): %w", errno)
	}
	return int(r1), nil
}

// setThreadFilterListener calls seccomp(SECCOMP_SET_MODE_FILTER,
// TSYNC_ESRCH|NEW_LISTENER, &prog), for the calling thread only, and
// returns the listener.
func setThreadFilterListener(filter []unix.SockFilter) (int, error) {
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	const flags = unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH | unix.SECCOMP_FILTER_FLAG_NEW_LISTENER
	r1, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags,
		uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(filter)
	if errno != 0 {
		return -1, fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER, TSYNC_ESRCH|NEW_LISTENER): %w", errno)
	}
	return int(r1), nil
}

// setThreadFilter calls seccomp(SECCOMP_SET_MODE_FILTER, 0, &prog), for
// the calling thread only.
func setThreadFilter(filter []unix.SockFilter) error {
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(filter)
	if errno != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", errno)
	}
	return nil
}
