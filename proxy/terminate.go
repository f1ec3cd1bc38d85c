package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/srt-go/srt/mitm"
	"github.com/srt-go/srt/netrule"
)

// Terminate configures TLS termination in CONNECT tunnels
// (network.tlsTerminate; seed 003 "Terminaison TLS"; issue 17). The zero
// value of each field but CA is the safe default.
//
// An allowed CONNECT whose target Exclude does not name takes one of
// MaxTunnels slots, is answered 200, and its first byte is read. A TLS
// handshake record (0x16) is terminated in this process with a leaf the
// CA mints; the decrypted HTTP/1.1 or HTTP/2 (by ALPN) is served with no
// listener, each request judged (judgeTerminated) and forwarded, in its
// client's protocol (HTTP/1.1 when the upstream has no HTTP/2; see
// upstreams), over a certificate-verified TLS connection to exactly the
// CONNECT target, dialled like an opaque tunnel's (resolved-address
// guard, Forbidden, Config.Parent). Anything else is tunnelled opaquely, as without
// Terminate, and frees its slot. SOCKS5 is never terminated.
//
// Answers on the wire, besides those of HTTPProxy.Serve:
//
//	too many tunnels         503 before the 200, X-Proxy-Error: too-many-tunnels
//	no byte or no handshake  connection closed at HandshakeTimeout
//	  within HandshakeTimeout
//	server name or Host /    421 Misdirected Request, X-Proxy-Error: host-mismatch,
//	  :authority not the       for each request on the tunnel
//	  CONNECT target
//	address guard refused    403, X-Proxy-Error: blocked-by-sandbox-runtime
//	upstream certificate     502, X-Proxy-Error: upstream-certificate, body
//	  not trusted              naming the host and the verification error
//	upstream failure         502 Bad Gateway
type Terminate struct {
	// CA mints the leaf certificates shown to the sandboxed client.
	// Required.
	CA *mitm.CA
	// Exclude reports the destinations tunnelled opaquely instead
	// (network.tlsTerminate.excludeDomains). Nil excludes none. It is
	// given the canonical host (netrule.CanonicalHost) and the port.
	Exclude func(host string, port int) bool
	// RootCAs verifies the upstream's certificate: the host's roots plus
	// network.tlsTerminate.extraCaCertPaths. Nil means the system pool.
	RootCAs *x509.CertPool
	// MaxTunnels bounds the tunnels terminated at once; past it a CONNECT
	// is answered 503 with X-Proxy-Error: too-many-tunnels. Zero means
	// 256.
	MaxTunnels int
	// HandshakeTimeout bounds the time from a CONNECT to the end of the
	// client's TLS handshake. Zero means 10s.
	HandshakeTimeout time.Duration
	// AllowHostMismatch turns off the check that the TLS server name, the
	// CONNECT target and every request's Host/:authority name the same
	// host (network.requireHostMatch: false). The zero value checks.
	AllowHostMismatch bool
}

// Defaults of Terminate (the reference 0.0.83's).
const (
	DefaultMaxTunnels       = 256
	DefaultHandshakeTimeout = 10 * time.Second
)

// Rules of the violations a terminated tunnel reports.
const (
	// RuleTunnelLimit: a CONNECT refused for Terminate.MaxTunnels.
	RuleTunnelLimit = "tunnel limit"
	// RuleHostMatch: a request whose TLS server name, Host or :authority
	// does not name the CONNECT target (network.requireHostMatch).
	RuleHostMatch = "host-match"
)

// X-Proxy-Error values of terminated tunnels.
const (
	errHdrTunnels    = "too-many-tunnels"
	errHdrHostMatch  = "host-mismatch"
	errHdrUpstreamCA = "upstream-certificate"
)

// tlsRecordHandshake is the first byte of a TLS ClientHello record (RFC
// 8446 §5.1, ContentType handshake).
const tlsRecordHandshake = 0x16

// maxStreams bounds the concurrent HTTP/2 streams of one terminated
// tunnel, and with it the upstream requests that tunnel has in flight.
const maxStreams = 100

// maxUpstreamPerHost bounds the upstream connections terminated tunnels
// open to one host:port, across tunnels (more requests wait for one).
const maxUpstreamPerHost = 32

// terminator is a Server's TLS termination state.
type terminator struct {
	cfg      Terminate     // defaults applied
	slots    chan struct{} // one token per tunnel being terminated
	limit    connLimit     // rate-limits the too-many-tunnels report
	upstream upstreams     // to the CONNECT targets, verified against RootCAs
	errLog   *slog.Logger
}

func newTerminator(s *Server, cfg Terminate) (*terminator, error) {
	if cfg.CA == nil {
		return nil, errors.New("proxy: Terminate.CA is required")
	}
	if cfg.MaxTunnels < 0 || cfg.HandshakeTimeout < 0 {
		return nil, fmt.Errorf("proxy: Terminate: MaxTunnels %d, HandshakeTimeout %v: want 0 (the default) or more", cfg.MaxTunnels, cfg.HandshakeTimeout)
	}
	if cfg.MaxTunnels == 0 {
		cfg.MaxTunnels = DefaultMaxTunnels
	}
	if cfg.HandshakeTimeout == 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	t := &terminator{cfg: cfg, slots: make(chan struct{}, cfg.MaxTunnels), errLog: s.log}
	tr := func() *http.Transport {
		return &http.Transport{
			Proxy:       nil, // Config.Parent is applied by dialTunnel
			DialContext: s.terminatedDial,
			TLSClientConfig: &tls.Config{
				RootCAs:    cfg.RootCAs,
				MinVersion: tls.VersionTLS12,
				// ServerName is left empty: the Transport sets it to the
				// URL's host, which is always the CONNECT target.
			},
			TLSHandshakeTimeout: s.cfg.DialTimeout,
			DisableCompression:  true, // pass Accept-Encoding through untouched
			MaxIdleConnsPerHost: 4,
			MaxIdleConns:        MaxIdleUpstream,
			IdleConnTimeout:     30 * time.Second,
			// Bulk bodies: read and write the upstream in 64 KiB rather
			// than 4 KiB steps (HTTP/1.1 only; HTTP/2 has its own).
			ReadBufferSize:  upstreamBufSize,
			WriteBufferSize: upstreamBufSize,
		}
	}
	t.upstream.h2 = tr()
	t.upstream.h2.ForceAttemptHTTP2 = true
	t.upstream.h2.MaxConnsPerHost = maxUpstreamPerHost
	t.upstream.h1 = tr()
	t.upstream.h1.Protocols = new(http.Protocols)
	t.upstream.h1.Protocols.SetHTTP1(true)
	// One HTTP/1.1 tunnel has one request in flight, so one connection
	// per tunnel never makes a request wait for another tunnel's.
	t.upstream.h1.MaxConnsPerHost = cfg.MaxTunnels
	return t, nil
}

// upstreamBufSize is the HTTP/1.1 upstream connections' read and write
// buffer size.
const upstreamBufSize = 64 << 10

// upstreams are the Transports terminated requests are forwarded with, one
// per client protocol: a request keeps the protocol its client chose, as
// through an opaque tunnel. An HTTP/2 client's (h2) speaks HTTP/2 when the
// upstream offers it, so its streams (and gRPC) stay streams of one
// connection; an HTTP/1.1 client's (h1) speaks only HTTP/1.1, which moves
// a bulk body with no flow control, no window updates and no hand-over
// between goroutines (an HTTP/1.1 client through an HTTP/2 upstream
// leg measured 50% of an opaque tunnel's throughput, through an HTTP/1.1
// one 74%: BENCHMARKS.md, "TLS termination").
type upstreams struct {
	h1, h2 *http.Transport
}

// forRequest is the Transport for r, a request as its client sent it.
func (u upstreams) forRequest(r *http.Request) *http.Transport {
	if r.ProtoMajor >= 2 {
		return u.h2
	}
	return u.h1
}

// CloseIdleConnections closes both Transports' idle connections.
func (u upstreams) CloseIdleConnections() {
	u.h1.CloseIdleConnections()
	u.h2.CloseIdleConnections()
}

// excluded reports whether host:port is tunnelled opaquely.
func (t *terminator) excluded(host string, port int) bool {
	return t.cfg.Exclude != nil && t.cfg.Exclude(host, port)
}

// tunnel is one terminated CONNECT tunnel, as it was judged.
type tunnel struct {
	pol  *netrule.Policy
	d    netrule.Decision // allowed; d.Host is canonical
	port int
	sni  string // the client's TLS server name, lower-cased; "" for none
}

// tunnelKey carries a request's *tunnel into terminatedDial.
type tunnelKey struct{}

// terminate serves an allowed CONNECT to d.Host:port that is to be
// terminated. c is the client connection, br and bw its buffers.
func (s *Server) terminate(ctx context.Context, c net.Conn, br *bufio.Reader, bw *bufio.Writer, pol *netrule.Policy, d netrule.Decision, port int) {
	t := s.term
	select {
	case t.slots <- struct{}{}:
	default:
		s.refuseTunnel(ctx, bw, d, port)
		return
	}
	held := true
	release := func() {
		if held {
			held = false
			<-t.slots
		}
	}
	defer release()

	c.SetDeadline(time.Now().Add(t.cfg.HandshakeTimeout))
	bw.WriteString("HTTP/1.1 200 Connection Established\r\n\r\n")
	if err := bw.Flush(); err != nil {
		return
	}
	first, err := br.Peek(1)
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelDebug, "terminated tunnel: no first byte", slog.String("host", d.Host), slog.Any("error", err))
		return
	}
	if first[0] != tlsRecordHandshake {
		release()
		c.SetDeadline(time.Time{})
		if s.mustInspect(d.Host, port) {
			// Filtered requests, or refuseOpaqueTunnels: a tunnel that
			// carries no TLS cannot be seen into. Its 200 is sent, so it
			// can only be closed.
			s.violation("connect", netrule.Decision{Host: d.Host, Reason: s.opaqueRefusal(d.Host, port, "it does not carry TLS"), Rule: opaqueRule}, port)
			return
		}
		s.opaqueAfter200(ctx, c, br, pol, d, port)
		return
	}
	tn := &tunnel{pol: pol, d: d, port: port}
	tc := tls.Server(&readAheadConn{Conn: c, r: br}, t.tlsConfig(d.Host))
	if err := tc.HandshakeContext(ctx); err != nil {
		s.log.LogAttrs(ctx, slog.LevelDebug, "terminated tunnel: TLS handshake failed", slog.String("host", d.Host), slog.Any("error", err))
		return
	}
	c.SetDeadline(time.Time{})
	tn.sni = strings.ToLower(tc.ConnectionState().ServerName)
	s.serveTunnel(ctx, tc, tn)
}

// tlsConfig is the server side of a tunnel to host. The leaf is always
// host's, unless AllowHostMismatch, when it is the client's server name's
// if that is a DNS name (the reference 0.0.83 does the same).
func (t *terminator) tlsConfig(host string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			name := host
			if t.cfg.AllowHostMismatch && hello.ServerName != "" {
				if canon, ip, err := netrule.CanonicalHost(hello.ServerName); err == nil && !ip.IsValid() {
					name = canon
				}
			}
			return t.cfg.CA.Leaf(name)
		},
	}
}

// opaqueAfter200 tunnels a CONNECT that carries no TLS opaquely, as
// without Terminate. Its 200 has been sent, so a refusal or failure can
// only close the connection (and be reported).
func (s *Server) opaqueAfter200(ctx context.Context, c net.Conn, br *bufio.Reader, pol *netrule.Policy, d netrule.Decision, port int) {
	up, err := s.dialTunnel(ctx, pol, d, port)
	if err != nil {
		if re, ok := isRefused(err); ok {
			s.violation("connect", re.Decision, port)
			return
		}
		if pe, ok := isParentRefusal(err); ok {
			s.logParentRefusal(ctx, pe)
			return
		}
		s.log.LogAttrs(ctx, slog.LevelDebug, "CONNECT upstream failed", slog.String("host", d.Host), slog.Any("error", err))
		return
	}
	s.pipeTunnel(c, br, up)
}

// refuseTunnel answers a CONNECT past Terminate.MaxTunnels 503 and reports
// it at most once per limitReportEvery, as refuseOverLimit does.
func (s *Server) refuseTunnel(ctx context.Context, bw *bufio.Writer, d netrule.Decision, port int) {
	t := s.term
	reason := fmt.Sprintf("%s: this sandbox already has %d TLS-terminated tunnels open", RuleTunnelLimit, t.cfg.MaxTunnels)
	writeResponse(bw, "503 Service Unavailable", errHdrTunnels, "Connection refused by the sandbox runtime: "+reason+"\n")
	report, n := t.limit.refused(time.Now())
	if !report {
		return
	}
	s.log.LogAttrs(ctx, slog.LevelWarn, "CONNECT refused: tunnel limit reached", slog.Int("limit", t.cfg.MaxTunnels), slog.Int("refused", n))
	if n > 1 {
		reason += fmt.Sprintf("; %d tunnels refused since the last report", n)
	}
	s.violation("connect", netrule.Decision{Host: d.Host, Reason: reason, Rule: RuleTunnelLimit}, port)
}

// serveTunnel serves the decrypted HTTP on tc until the client or the
// idle timeout ends it, or ctx is cancelled.
func (s *Server) serveTunnel(ctx context.Context, tc *tls.Conn, tn *tunnel) {
	done := make(chan struct{})
	var once sync.Once
	finish := func() { once.Do(func() { close(done) }) }
	hs := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.serveTerminated(w, r, tn, finish)
		}),
		ReadHeaderTimeout: s.cfg.HandshakeTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: maxStreams},
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnState: func(_ net.Conn, st http.ConnState) {
			// A hijacked connection (an Upgrade) is finished by its
			// handler, once it is done with it.
			if st == http.StateClosed {
				finish()
			}
		},
	}
	hs.Serve(&oneConnListener{c: tc, done: done, ctx: ctx})
}

// oneConnListener hands http.Server.Serve one connection, then blocks
// until done is closed (the connection is finished) or ctx is cancelled,
// so Serve returns when the tunnel ends. Nothing listens anywhere.
type oneConnListener struct {
	c    net.Conn // nil once accepted
	done <-chan struct{}
	ctx  context.Context
}

// Accept is called by one goroutine (Serve's) at a time.
func (l *oneConnListener) Accept() (net.Conn, error) {
	if c := l.c; c != nil {
		l.c = nil
		return c, nil
	}
	select {
	case <-l.done:
	case <-l.ctx.Done():
	}
	return nil, net.ErrClosed
}

// Close does nothing: the connection is closed by whoever serves it.
func (l *oneConnListener) Close() error { return nil }

// Addr is a placeholder: there is no listening address.
func (l *oneConnListener) Addr() net.Addr { return &net.TCPAddr{} }

// readAheadConn reads through r, which holds bytes already read from
// Conn. (parent.go has a twin; this one stays with the code using it.)
type readAheadConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *readAheadConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// terminatedDial is the upstream Transport's DialContext: it dials the
// request's tunnel target exactly as an opaque tunnel would (dialTunnel:
// the resolved-address guard, Forbidden, Config.Parent), and nothing else.
func (s *Server) terminatedDial(ctx context.Context, network, addr string) (net.Conn, error) {
	tn, _ := ctx.Value(tunnelKey{}).(*tunnel)
	if tn == nil { // only if a request bypassed serveTerminated; never expected
		return nil, fmt.Errorf("dial %s: not a terminated tunnel's request", addr)
	}
	if want := net.JoinHostPort(tn.d.Host, strconv.Itoa(tn.port)); addr != want {
		return nil, fmt.Errorf("dial %s: the tunnel's target is %s", addr, want)
	}
	return s.dialTunnel(ctx, tn.pol, tn.d, tn.port)
}
