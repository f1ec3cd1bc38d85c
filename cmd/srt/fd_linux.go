package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// forwardedSignals are relayed to the command through the sandbox's PID 1.
var forwardedSignals = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2}

// checkPassFDs checks that every --pass-fd descriptor is open. Only these
// reach the command: descriptors srt's caller left open by accident (an
// IDE's directory handle, say) would let the command read and write
// through them past every mount, so they are not passed by default.
func checkPassFDs(fds []int) ([]int, error) {
	for _, fd := range fds {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			return nil, fmt.Errorf("--pass-fd %d is not usable: %w", fd, err)
		}
	}
	return fds, nil
}
