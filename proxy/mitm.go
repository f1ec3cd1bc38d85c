package proxy

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
)

// MITMProxy is network.mitmProxy for the proxies (reference 0.0.83
// "mitmProxy"; issue 17): an HTTP proxy on a unix socket that the
// connections to some domains go through instead of being dialled (or sent
// to the parent proxy). It is a route of Parent (Parent.WithMITM): srt
// speaks to it exactly as to a parent, CONNECT host:port for CONNECT
// tunnels and SOCKS5, absolute-URI requests for plain HTTP, after the same
// checks (Decide, then checkViaParent: every address the name resolves to
// here must pass the resolved-address guard and Forbidden; a name that
// does not resolve here is forwarded, for the MITM proxy to resolve).
//
// With Config.Terminate, a CONNECT whose host Match accepts is not
// terminated by srt (the MITM proxy terminates it), unless request
// filtering must see its requests (httpRules names the host, or
// refuseOpaqueTunnels): then srt terminates it, filters each request, and
// sends it upstream in its own TLS through a CONNECT to the MITM proxy,
// which must then be trusted by Terminate.RootCAs (tlsTerminate's
// extraCaCertPaths). A filtered host that srt would not terminate
// (excludeDomains) is refused, as without a MITM proxy: srt never hands a
// tunnel it must inspect to a proxy it cannot see into.
type MITMProxy struct {
	// SocketPath is the proxy's unix socket, absolute. It is connected to
	// for each upstream connection; a missing or refusing socket fails
	// that connection (502), not srt's start.
	SocketPath string
	// Match reports whether a connection to host (canonical, Decide's)
	// and port goes through the proxy. Required.
	Match func(host string, port int) bool
}

// mitmURL is the placeholder URL the MITM route goes by inside the
// proxies (Parent.lookup's answer, the plain-HTTP Transport's proxy and
// pool key). Its name is under .invalid (RFC 6761 §6.4) and is never
// resolved nor dialled: dialParentHop and parentDial connect SocketPath
// instead.
var mitmURL = &url.URL{Scheme: "http", Host: "srt-mitm-proxy.invalid:80"}

// WithMITM returns p with m as its MITM route (a new Parent when p is
// nil), or p itself for a nil m. It wins over p's parents for the
// destinations m.Match accepts; localhost and names under .localhost are
// never sent to it, as never to a parent.
func (p *Parent) WithMITM(m *MITMProxy) *Parent {
	if m == nil {
		return p
	}
	if p == nil {
		p = &Parent{known: make(map[netip.AddrPort]bool)}
	}
	p.mitm = m
	return p
}

// isMITM reports whether u is the MITM route's placeholder URL.
func (p *Parent) isMITM(u *url.URL) bool {
	return p != nil && p.mitm != nil && u == mitmURL
}

// label names route u in errors and logs: "MITM proxy unix:<path>", or
// "parent proxy <URL without credentials>".
func (p *Parent) label(u *url.URL) string {
	if p.isMITM(u) {
		return "MITM proxy unix:" + p.mitm.SocketPath
	}
	return "parent proxy " + redact(u)
}

// PeerError is the refusal of a MITM proxy socket that srt does not
// trust: its listener, or the socket file or its directory, belongs to
// another user than srt's or root, or the directory lets any user replace
// the file. Another local user could otherwise bind the path first (a
// socket in /tmp) and receive the traffic srt routes there.
type PeerError struct {
	// Socket is the socket path.
	Socket string
	// Reason says which check failed.
	Reason string
}

func (e *PeerError) Error() string {
	return "MITM proxy unix:" + e.Socket + " is not trusted: " + e.Reason
}

// trustedUID reports whether uid may own the MITM proxy's socket, its
// directory and its listener: srt's own user or root.
func trustedUID(uid uint32) bool { return uid == 0 || uid == uint32(os.Getuid()) }

// socketPeerUID returns the user id of the process listening at the other
// end of c (SO_PEERCRED, LOCAL_PEERCRED). A variable so that the tests can
// stand in for another user.
var socketPeerUID = peerUID

// dialMITM connects to the MITM proxy's socket, under ctx.
//
// Before connecting: the socket's directory must belong to srt's user or
// root and must not be writable by every user unless sticky, and the
// socket itself (not followed if a link) must be a socket of srt's user
// or root; then no other user can swap the file between this check and
// the connection. After connecting, the listener's user (the peer
// credentials) must be srt's or root too. A failed check is a *PeerError,
// logged at warn; a missing or refusing socket is the dial's error.
func (s *Server) dialMITM(ctx context.Context) (net.Conn, error) {
	path := s.cfg.Parent.mitm.SocketPath
	if err := checkSocketPath(path); err != nil {
		return nil, s.mitmRefused(ctx, err)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("MITM proxy unix:%s: %w", path, err)
	}
	uid, err := socketPeerUID(c)
	if err != nil {
		c.Close()
		return nil, s.mitmRefused(ctx, &PeerError{Socket: path, Reason: "cannot read its peer credentials: " + err.Error()})
	}
	if !trustedUID(uid) {
		c.Close()
		return nil, s.mitmRefused(ctx, &PeerError{Socket: path, Reason: fmt.Sprintf("its listener runs as uid %d, neither srt's (%d) nor root", uid, os.Getuid())})
	}
	return c, nil
}

// mitmRefused logs err, a *PeerError or the path check's failure, at
// warn, and returns it.
func (s *Server) mitmRefused(ctx context.Context, err error) error {
	s.log.LogAttrs(ctx, slog.LevelWarn, "MITM proxy socket refused", slog.Any("error", err))
	return err
}

// checkSocketPath makes dialMITM's checks before the connection: see
// there. A missing file is not a *PeerError but the lstat's error.
func checkSocketPath(path string) error {
	dir := filepath.Dir(path)
	di, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("MITM proxy unix:%s: %w", path, err)
	}
	if uid, ok := fileUID(di); !ok || !trustedUID(uid) {
		return &PeerError{Socket: path, Reason: fmt.Sprintf("its directory %s belongs to uid %d, neither srt's (%d) nor root", dir, uid, os.Getuid())}
	}
	if di.Mode().Perm()&0o002 != 0 && di.Mode()&fs.ModeSticky == 0 {
		return &PeerError{Socket: path, Reason: "its directory " + dir + " is writable by every user and not sticky: any user could replace the socket"}
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("MITM proxy unix:%s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return &PeerError{Socket: path, Reason: "it is not a socket (" + fi.Mode().Type().String() + "); links are not followed"}
	}
	if uid, ok := fileUID(fi); !ok || !trustedUID(uid) {
		return &PeerError{Socket: path, Reason: fmt.Sprintf("the socket file belongs to uid %d, neither srt's (%d) nor root", uid, os.Getuid())}
	}
	return nil
}

// mitmOpaque reports whether an allowed CONNECT to host:port that
// Config.Terminate would terminate is instead tunnelled opaquely to the
// MITM proxy, which terminates it itself: the MITM route takes host, and
// request filtering need not see its requests (mustInspect). See
// MITMProxy for why a filtered host is still terminated by srt.
func (s *Server) mitmOpaque(host string, port int) bool {
	return s.cfg.Parent.isMITM(s.cfg.Parent.forTunnel(host, port)) && !s.mustInspect(host, port)
}
