//go:build unix && !linux

package policy

import (
	"os"
	"syscall"
)

// openNoFollow opens path for reading without following a final
// symbolic link and without blocking on a fifo.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}
