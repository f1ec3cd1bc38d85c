package main

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// forwardedSignals are relayed to the command through the sandbox's PID 1.
var forwardedSignals = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2}

// inheritedFDs lists the descriptors above 2 that srt's caller passed
// (open and not close-on-exec), so the command gets them too.
func inheritedFDs() []int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			continue
		}
		out = append(out, fd)
	}
	return out
}
