package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// openControlFD checks that fd is open for reading and returns it as a
// file, made close-on-exec so that it reaches neither bubblewrap nor the
// command (the reference puts /dev/null in its slot; we leave the slot
// empty). srt refuses to run without a channel the caller asked for.
func openControlFD(fd int) (*os.File, error) {
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return nil, fmt.Errorf("--control-fd %d is not usable: %w; refusing to run the command without the control channel it asks for", fd, err)
	}
	if fl&unix.O_ACCMODE == unix.O_WRONLY {
		return nil, fmt.Errorf("--control-fd %d is not usable: it is open for writing only; refusing to run the command without the control channel it asks for", fd)
	}
	unix.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), controlName(fd)), nil
}
