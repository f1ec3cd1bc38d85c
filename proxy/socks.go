package proxy

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/srt-go/srt/internal/halfclose"
	"github.com/srt-go/srt/netrule"
)

// SOCKS5 constants (RFC 1928).
const (
	socksVersion = 0x05

	methodNoAuth       = 0x00 // §3
	methodNoAcceptable = 0xff // §3

	cmdConnect = 0x01 // §4; BIND (2) and UDP ASSOCIATE (3) are refused

	atypIPv4   = 0x01 // §5
	atypDomain = 0x03
	atypIPv6   = 0x04
)

// SOCKS5 reply codes, RFC 1928 §6.
const (
	RepSucceeded          = 0x00
	RepGeneralFailure     = 0x01
	RepNotAllowed         = 0x02 // connection not allowed by ruleset
	RepNetworkUnreachable = 0x03
	RepHostUnreachable    = 0x04
	RepConnectionRefused  = 0x05
	RepCommandUnsupported = 0x07
	RepAddressUnsupported = 0x08
)

// SOCKS5Proxy is the SOCKS5 proxy of a Server.
type SOCKS5Proxy struct{ s *Server }

// SOCKS5 returns the Server's SOCKS5 proxy.
func (s *Server) SOCKS5() *SOCKS5Proxy { return &SOCKS5Proxy{s} }

// Serve accepts SOCKS5 clients on ln; its lifetime and return value are
// those of HTTPProxy.Serve.
//
// It speaks RFC 1928 with the no-authentication method only and the
// CONNECT command only, for IPv4, IPv6 and domain-name addresses. The rule
// check runs on the name the client sent, before any DNS lookup, so a
// refused name is never resolved.
//
// Replies: refused by the rules or by the resolved-address guard, REP=2;
// name not found or host unreachable, REP=4; connection refused, REP=5;
// network unreachable, REP=3; BIND or UDP ASSOCIATE, REP=7; unknown address
// type, REP=8; refused by Config.Parent (a non-2xx answer to its CONNECT),
// REP=1. A client that offers no "no authentication" method gets
// method 0xFF and the connection is closed.
//
// A refused destination on port 22 instead gets REP=0 followed by an SSH
// identification line and a plaintext SSH_MSG_DISCONNECT carrying the
// reason (see writeSSHRefusal), so that ssh run through the proxy prints
// "Received disconnect ...: <reason>" instead of a bare failure.
func (p *SOCKS5Proxy) Serve(ctx context.Context, ln net.Listener) error {
	return p.s.serve(ctx, ln, "socks5", p.s.serveSOCKSConn)
}

func (s *Server) serveSOCKSConn(ctx context.Context, c net.Conn) {
	c.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	br := bufio.NewReader(c)
	t, rep, err := socksHandshake(br, c)
	if err != nil {
		if rep != 0 {
			writeSOCKSReply(c, rep, netip.AddrPort{})
		}
		return
	}
	pol := s.policy.Load()
	d := pol.Decide(t.host, t.port)
	if d.Allowed && s.mustInspect(d.Host, t.port) {
		d = netrule.Decision{Host: d.Host, Reason: s.opaqueRefusal(d.Host, t.port, "SOCKS5 tunnels are never TLS-terminated; use the HTTP proxy with network.tlsTerminate"), Rule: opaqueRule}
	}
	if !d.Allowed {
		s.socksRefuse(c, br, d, t.port)
		return
	}
	up, err := s.dialTunnel(ctx, pol, d, t.port)
	if err != nil {
		if re, ok := isRefused(err); ok {
			s.socksRefuse(c, br, re.Decision, t.port)
			return
		}
		if pe, ok := isParentRefusal(err); ok {
			s.logParentRefusal(ctx, pe)
			writeSOCKSReply(c, RepGeneralFailure, netip.AddrPort{})
			return
		}
		s.log.LogAttrs(ctx, slog.LevelDebug, "SOCKS5 upstream failed", slog.String("host", d.Host), slog.Any("error", err))
		writeSOCKSReply(c, dialErrorRep(err), netip.AddrPort{})
		return
	}
	if !s.track(up, nil) {
		up.Close()
		return
	}
	defer s.untrack(up)
	bnd, _ := netip.ParseAddrPort(up.LocalAddr().String())
	if err := writeSOCKSReply(c, RepSucceeded, bnd); err != nil {
		up.Close()
		return
	}
	c.SetDeadline(time.Time{})
	if n := br.Buffered(); n > 0 { // data sent before our reply
		b, _ := br.Peek(n)
		if _, err := up.Write(b); err != nil {
			up.Close()
			return
		}
	}
	halfclose.Pipe(c, up)
}

// socksRefuse answers a refused request and reports the violation.
func (s *Server) socksRefuse(c net.Conn, br *bufio.Reader, d netrule.Decision, port int) {
	if port == 22 {
		if writeSOCKSReply(c, RepSucceeded, netip.AddrPortFrom(netip.IPv4Unspecified(), 0)) == nil {
			writeSSHRefusal(c, d.Reason)
			drainAndClose(c, br)
		}
	} else {
		writeSOCKSReply(c, RepNotAllowed, netip.AddrPort{})
	}
	s.violation("socks5", d, port)
}

// drainAndClose half-closes c and reads what the client still sends (its
// own SSH identification and KEXINIT) for up to two seconds, so that
// closing does not reset the connection before the client has read our
// disconnect message: a close with unread input sends RST, and a RST can
// discard data the peer has not read yet.
func drainAndClose(c net.Conn, br *bufio.Reader) {
	if cw, ok := c.(halfclose.CloseWriter); ok {
		cw.CloseWrite()
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	io.Copy(io.Discard, io.LimitReader(br, 1<<20))
}

// socksHandshake runs method negotiation (RFC 1928 §3) and reads the
// request (§4). On error, rep is the reply to send (0: send none).
func socksHandshake(br *bufio.Reader, w io.Writer) (target, byte, error) {
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return target{}, 0, err
	}
	if hdr[0] != socksVersion {
		return target{}, 0, errors.New("not SOCKS version 5")
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return target{}, 0, err
	}
	method := byte(methodNoAcceptable)
	for _, m := range methods {
		if m == methodNoAuth {
			method = methodNoAuth
		}
	}
	if _, err := w.Write([]byte{socksVersion, method}); err != nil {
		return target{}, 0, err
	}
	if method == methodNoAcceptable {
		return target{}, 0, errors.New("client offers no acceptable method")
	}

	var req [4]byte // VER CMD RSV ATYP
	if _, err := io.ReadFull(br, req[:]); err != nil {
		return target{}, 0, err
	}
	if req[0] != socksVersion {
		return target{}, RepGeneralFailure, errors.New("bad request version")
	}
	var host string
	switch req[3] {
	case atypIPv4:
		var a [4]byte
		if _, err := io.ReadFull(br, a[:]); err != nil {
			return target{}, 0, err
		}
		host = netip.AddrFrom4(a).String()
	case atypIPv6:
		var a [16]byte
		if _, err := io.ReadFull(br, a[:]); err != nil {
			return target{}, 0, err
		}
		host = netip.AddrFrom16(a).String()
	case atypDomain:
		n, err := br.ReadByte()
		if err != nil {
			return target{}, 0, err
		}
		name := make([]byte, n)
		if _, err := io.ReadFull(br, name); err != nil {
			return target{}, 0, err
		}
		host = string(name) // Decide refuses anything malformed
	default:
		return target{}, RepAddressUnsupported, errors.New("unknown address type")
	}
	var pb [2]byte
	if _, err := io.ReadFull(br, pb[:]); err != nil {
		return target{}, 0, err
	}
	port := int(binary.BigEndian.Uint16(pb[:]))
	if req[1] != cmdConnect {
		return target{}, RepCommandUnsupported, errors.New("only CONNECT is supported")
	}
	if port == 0 {
		return target{}, RepGeneralFailure, errors.New("port 0")
	}
	return target{host: host, port: port}, 0, nil
}

// writeSOCKSReply writes VER REP RSV ATYP BND.ADDR BND.PORT (RFC 1928 §6).
// An invalid bnd is sent as 0.0.0.0:0.
func writeSOCKSReply(w io.Writer, rep byte, bnd netip.AddrPort) error {
	b := []byte{socksVersion, rep, 0x00}
	a := bnd.Addr().Unmap()
	switch {
	case a.Is4():
		b = append(b, atypIPv4)
		b = append(b, a.AsSlice()...)
	case a.Is6():
		b = append(b, atypIPv6)
		b = append(b, a.AsSlice()...)
	default:
		b = append(b, atypIPv4, 0, 0, 0, 0)
	}
	b = binary.BigEndian.AppendUint16(b, bnd.Port())
	_, err := w.Write(b)
	return err
}

// dialErrorRep maps an upstream failure to a reply code.
func dialErrorRep(err error) byte {
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return RepConnectionRefused
	case errors.Is(err, syscall.ENETUNREACH):
		return RepNetworkUnreachable
	case errors.As(err, &dnsErr), errors.Is(err, syscall.EHOSTUNREACH), isTimeout(err):
		return RepHostUnreachable
	}
	return RepHostUnreachable
}
