// Package peeruid tells which local user owns the other end of a loopback
// TCP connection, so that a server on loopback can refuse other users'
// connections before it reads a byte from them.
//
// TCP has no SO_PEERCRED, but both ends of a loopback connection are
// sockets of this host, and the kernel tells each TCP socket's owner
// (sock_diag(7): inet_diag_msg's idiag_uid, as ss -e shows it). The
// client's socket is the one whose local address is the connection's
// remote address and whose remote address is its local one.
package peeruid

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// ErrUnknown is returned when no full socket of this network namespace
// matches the connection: the client closed it meanwhile (TIME_WAIT),
// or it is not of this host.
var ErrUnknown = errors.New("no local socket matches the connection")

// ErrNoSocket is wrapped by UID's error when the kernel has no socket at
// all for the connection's addresses (ENOENT): with a listener that
// others may reach from other hosts, such a peer is a remote one.
var ErrNoSocket = errors.New("no socket of this host")

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
// whose peer socket belongs to a user allow accepts; the others are
// closed at once, before a byte is read, and reported to refused (which
// may be nil and must not block). Every peer is looked up, whatever its
// address. One whose owner cannot be told is refused (fail closed),
// except, with remote set (a listener reachable from other hosts), one
// for which this host has no socket at all (ErrNoSocket): a remote
// client, which the server's own authentication then faces. On a
// platform where UID is not offered every peer passes.
//
// The owners are looked up off the accept loop, at most maxChecks at
// once, so that a flood of connections from another user costs the
// server's own client a queue position, not a serial lookup each.
func Filter(ln net.Listener, allow func(uid int) bool, remote bool, refused func(peer net.Addr, uid int, err error)) net.Listener {
	f := &filter{Listener: ln, allow: allow, remote: remote, refused: refused,
		ready: make(chan net.Conn), errs: make(chan error), done: make(chan struct{}), checks: make(chan struct{}, maxChecks)}
	go f.loop()
	return f
}

// maxChecks bounds the owner lookups in flight.
const maxChecks = 32

type filter struct {
	net.Listener
	allow   func(int) bool
	remote  bool
	refused func(net.Addr, int, error)
	ready   chan net.Conn
	errs    chan error // the inner listener's passing errors
	checks  chan struct{}
	done    chan struct{} // closed when the inner listener failed
	err     error         // its error, set before done is closed
}

// loop accepts from the inner listener and checks each peer. An error
// other than the listener's closing (EMFILE, ECONNABORTED, …) is handed
// to one Accept, as net/http expects to retry, and the loop goes on
// after a pause that grows while the errors last.
func (f *filter) loop() {
	var pause time.Duration
	for {
		c, err := f.Listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				f.err = err
				close(f.done)
				return
			}
			select {
			case f.errs <- err:
			case <-time.After(time.Second):
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			time.Sleep(pause)
			continue
		}
		pause = 0
		f.checks <- struct{}{}
		go func() {
			defer func() { <-f.checks }()
			if !f.check(c) {
				c.Close()
				return
			}
			select {
			case f.ready <- c:
			case <-f.done:
				c.Close()
			}
		}()
	}
}

// check reports whether c's peer may be served, reporting a refusal.
func (f *filter) check(c net.Conn) bool {
	uid, err := UID(c)
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		return true
	case f.remote && errors.Is(err, ErrNoSocket):
		return true
	case err == nil && f.allow(uid):
		return true
	}
	if f.refused != nil {
		f.refused(c.RemoteAddr(), uid, err)
	}
	return false
}

// Accept implements net.Listener.
func (f *filter) Accept() (net.Conn, error) {
	select {
	case c := <-f.ready:
		return c, nil
	case err := <-f.errs:
		return nil, err
	case <-f.done:
		return nil, f.err
	}
}
