package server

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// killSession kills every process of session sid (the host shell's
// session: its background jobs included). A process that called setsid
// itself has left the session and is not found; a host shell is not a
// sandbox (seed 000, backend none).
func killSession(sid int) {
	unix.Kill(-sid, unix.SIGKILL)
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the ")" closing comm: state ppid pgrp session …
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 3 && f[3] == strconv.Itoa(sid) {
			unix.Kill(pid, unix.SIGKILL)
		}
	}
}
