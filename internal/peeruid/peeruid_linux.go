package peeruid

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
)

// UID returns the uid owning the client end of c, a connection accepted
// on loopback: ErrNotLoopback when the peer is elsewhere, ErrUnknown
// when no socket of this network namespace matches. The client's socket
// is asked of the kernel by its addresses (sock_diag(7), through
// netlink.SocketGet), so the cost does not grow with the number of
// sockets other users keep open, as reading /proc/net/tcp would.
func UID(c net.Conn) (int, error) {
	remote, err := addrPort(c.RemoteAddr())
	if err != nil {
		return 0, err
	}
	if !remote.Addr().IsLoopback() {
		return 0, ErrNotLoopback
	}
	// The client's socket: its local address is our remote one.
	s, err := netlink.SocketGet(c.RemoteAddr(), c.LocalAddr())
	if err != nil {
		if errors.Is(err, netlink.ErrDumpInterrupted) {
			s, err = netlink.SocketGet(c.RemoteAddr(), c.LocalAddr())
		}
		if err != nil {
			return 0, fmt.Errorf("%w: %w", ErrUnknown, err)
		}
	}
	return int(s.UID), nil
}
