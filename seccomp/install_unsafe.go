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
