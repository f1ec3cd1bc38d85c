package server

import "golang.org/x/sys/unix"

// killSession kills the host shell's process group. (Linux also finds
// the session's other groups through /proc; see kill_linux.go.)
func killSession(sid int) { unix.Kill(-sid, unix.SIGKILL) }
