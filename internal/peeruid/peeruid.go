// Package peeruid tells which local user owns the other end of a loopback
// TCP connection, so that a server on loopback can refuse other users'
// connections before it reads a byte from them.
//
// TCP has no SO_PEERCRED, but both ends of a loopback connection are
// sockets of this host, and the kernel lists every TCP socket with its
// owner's uid (proc(5), /proc/net/tcp and /proc/net/tcp6: the "uid"
// column). The client's socket is the entry whose local address is the
// connection's remote address and whose remote address is its local one.
package peeruid

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// ErrNotLoopback is returned for a connection whose peer is not on this
// host's loopback: its owner cannot be known.
var ErrNotLoopback = errors.New("peer is not on loopback")

// ErrUnknown is returned when no socket of this host matches the
// connection (the client closed it meanwhile, or the connection crosses
// network namespaces).
var ErrUnknown = errors.New("no local socket matches the connection")

// addrPort returns a's address, without IPv4-mapped IPv6 wrapping.
func addrPort(a net.Addr) (netip.AddrPort, error) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("%v: not a TCP address", a)
	}
	ap := ta.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}

// Filter returns a listener whose Accept hands on only the connections
// from loopback peers that allow(uid) accepts; the others are closed at
// once, before a byte is read, and reported to refused (which may be nil
// and must not block). A peer that is not on loopback, or a platform
// where UID is not offered, passes: Filter cannot tell its owner, and the
// server's own authentication still applies. A loopback peer whose owner
// cannot be found is refused (fail closed).
func Filter(ln net.Listener, allow func(uid int) bool, refused func(peer net.Addr, uid int, err error)) net.Listener {
	return &filter{Listener: ln, allow: allow, refused: refused}
}

type filter struct {
	net.Listener
	allow   func(int) bool
	refused func(net.Addr, int, error)
}

// Accept implements net.Listener.
func (f *filter) Accept() (net.Conn, error) {
	for {
		c, err := f.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uid, err := UID(c)
		switch {
		case errors.Is(err, ErrNotLoopback), errors.Is(err, errors.ErrUnsupported):
			return c, nil
		case err == nil && f.allow(uid):
			return c, nil
		}
		if f.refused != nil {
			f.refused(c.RemoteAddr(), uid, err)
		}
		c.Close()
	}
}
