package inside

// This file runs in the sandbox's PID 1: it binds the proxy ports, and
// the host loopback ports the allow-list names, on the sandbox's own
// loopback and hands the listening sockets to srt, which serves its
// proxies and relays on them from outside (sandbox/linux's
// network_linux.go and loopback_linux.go; the message is drawn in
// sandbox/linux/wire). It runs before the command: every port is taken
// before anything of the command's could bind it to answer in srt's
// place, and it stays taken while srt holds the socket, which the
// command cannot reach (PID 1 closes its copy, and srt is outside).

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/srt-go/srt/sandbox/linux/wire"
)

// sendListeners is PID 1's side: bind each spec on the sandbox's loopback
// and send the sockets. An IPv6 address that the namespace lacks is
// skipped; so is an IPv4 proxy port that cannot be bound, as long as one
// proxy port is. A relayed port (wire.ListenerLoopback) on an IPv4
// address that cannot be bound is an error: it would be left for the
// command to take.
func sendListeners(fd int, specs []wire.ListenSpec) error {
	var names []string
	var fds []int
	proxies := 0
	for _, s := range specs {
		ln, err := net.Listen("tcp", s.Addr)
		if err != nil {
			if ap, perr := netip.ParseAddrPort(s.Addr); s.Name == wire.ListenerLoopback && (perr != nil || ap.Addr().Is4()) {
				return fmt.Errorf("binding %s on the sandbox's loopback: %w", s.Addr, err)
			}
			continue
		}
		f, err := ln.(*net.TCPListener).File()
		ln.Close()
		if err != nil {
			return fmt.Errorf("listener %s: %w", s.Addr, err)
		}
		defer f.Close()
		names = append(names, s.Name)
		fds = append(fds, int(f.Fd()))
		if s.Name != wire.ListenerLoopback {
			proxies++
		}
	}
	if proxies == 0 {
		return fmt.Errorf("no proxy port could be bound on the sandbox's loopback")
	}
	return wire.SendListeners(fd, names, fds)
}
