package inside

// This file runs in the sandbox's PID 1: it binds the proxy ports on the
// sandbox's own loopback and hands the listening sockets to srt, which
// serves its proxies on them from outside (sandbox/linux's
// network_linux.go; the message is drawn in sandbox/linux/wire).

import (
	"fmt"
	"net"

	"github.com/srt-go/srt/sandbox/linux/wire"
)

// sendListeners is PID 1's side: bind each spec on the sandbox's loopback
// and send the sockets. An IPv6 address that the namespace lacks is
// skipped.
func sendListeners(fd int, specs []wire.ListenSpec) error {
	var names []string
	var fds []int
	for _, s := range specs {
		ln, err := net.Listen("tcp", s.Addr)
		if err != nil {
			continue
		}
		f, err := ln.(*net.TCPListener).File()
		ln.Close()
		if err != nil {
			continue
		}
		defer f.Close()
		names = append(names, s.Name)
		fds = append(fds, int(f.Fd()))
	}
	if len(fds) == 0 {
		return fmt.Errorf("no proxy port could be bound on the sandbox's loopback")
	}
	return wire.SendListeners(fd, names, fds)
}
