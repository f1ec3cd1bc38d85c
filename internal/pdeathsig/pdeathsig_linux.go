package pdeathsig

import (
	"runtime"

	"golang.org/x/sys/unix"
)

func startPinned(start func() (int, error)) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		pid, err := start()
		started <- err
		if err == nil {
			// WNOWAIT: wait for the exit without reaping, so that the
			// caller's Wait still gets the status.
			var info unix.Siginfo
			for unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
			}
		}
		runtime.UnlockOSThread()
	}()
	return <-started
}
