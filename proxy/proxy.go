// Package proxy implements the host-side filtering proxies of one sandbox
// session: an HTTP proxy (CONNECT tunnels and absolute-URI plain HTTP) and
// a SOCKS5 proxy (RFC 1928, CONNECT only). They are the sandboxed
// command's only way out of its network namespace (seed 003 "Architecture
// d'isolation réseau"; srt-notes §4.6, §4.9).
//
// Every connection is judged by a netrule.Policy, which can be swapped
// while connections are open (SetPolicy, for --control-fd). A host name is
// resolved once, each address is checked by the resolved-address guard
// (netrule.Policy.CheckResolved), and the proxy dials exactly an address it
// checked, so there is no second lookup for DNS rebinding to race
// (escape-classes.md item 9). A SOCKS5 name is judged before it is
// resolved, so a denied name never reaches DNS (item 7).
//
// A Server is made for one session and is not shared between concurrent
// sandboxes. Its listeners are provided by the caller, so the package makes
// no decision about who may connect. In production they are the TCP
// sockets the sandbox's PID 1 binds on the sandbox's private loopback and
// hands to srt (sandbox/linux/network_linux.go): only processes in that
// network namespace can reach them, so no credential is needed.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"github.com/srt-go/srt/credential"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srt-go/srt/netrule"
	"github.com/srt-go/srt/violation"
)

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = errors.New("proxy: server closed")

// Resolver looks up host names. *net.Resolver implements it.
type Resolver interface {
	// LookupNetIP returns the addresses of host; network is "ip".
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer opens upstream connections. *net.Dialer implements it. The proxy
// only ever passes "tcp" and a numeric "ip:port" address.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// Config configures a Server. The zero Config is valid and denies every
// destination.
type Config struct {
	// Policy is the initial rule set. Nil denies everything (an empty
	// allow-list, srt-notes §1.2). Replace it with Server.SetPolicy.
	Policy *netrule.Policy
	// Resolver resolves allowed host names. Nil means net.DefaultResolver.
	Resolver Resolver
	// Dialer dials the checked upstream address. Nil means a net.Dialer.
	Dialer Dialer
	// OnViolation is called once per refused connection or request, from
	// the goroutine serving that client, after the refusal has been
	// written. Calls may be concurrent. It must return quickly (append to a
	// buffered store or channel): a slow callback delays closing that
	// client's connection, though never other clients. Nil means refusals
	// are not reported.
	OnViolation func(violation.Violation)
	// Logger receives debug lines about accepted and failed connections
	// (key "host"). Nil discards them. Refusals are reported through
	// OnViolation, not logged.
	Logger *slog.Logger
	// LocalAddrs lists this host's interface addresses, which an allowed
	// name must not resolve to. Nil means net.InterfaceAddrs, re-read at
	// most every 5 seconds.
	LocalAddrs func() ([]netip.Addr, error)
	// DialTimeout bounds resolving and dialing one upstream. Zero means
	// 10s.
	DialTimeout time.Duration
	// HandshakeTimeout bounds reading a request's headers or the SOCKS5
	// negotiation. Zero means 30s.
	HandshakeTimeout time.Duration
	// IdleTimeout bounds the wait for the next request on a kept-alive
	// plain-HTTP client connection. Zero means 2 minutes.
	IdleTimeout time.Duration
	// Forbidden, when not nil, is asked about every address just before
	// it is dialled, whatever the rules allowed: a non-empty reason
	// refuses it (a *RefusedError, reported as a violation). srt uses it
	// for the addresses srtd listens on, which no sandbox may reach.
	Forbidden func(netip.AddrPort) string
	// MaxConns bounds the client connections the Server's proxies (HTTP
	// and SOCKS5 together, every listener) serve at once, and with them
	// the upstream connections they open: a client connection holds at
	// most one upstream at a time, and the plain-HTTP pool keeps at most
	// MaxIdleUpstream idle ones. A connection over the bound is accepted
	// and closed at once (after a 503 on the HTTP proxy), so it holds no
	// descriptor, and is reported as a violation with Rule
	// RuleConnLimit, at most once a second (issue 16, "Descriptor
	// exhaustion"). Zero means DefaultMaxConns; negative is an error.
	MaxConns int
	// Parent, when not nil, is the upstream proxy connections go through
	// (see Parent for which): after Decide allowed the destination and
	// every address it resolves to here passed the resolved-address guard
	// and Forbidden (a name that does not resolve here is the parent's to
	// judge), srt connects to the parent instead. The parent's own
	// addresses are refused as destinations (Parent.Forbidden). Fixed for
	// the Server's life (SetPolicy does not change it).
	Parent *Parent
	// Terminate, when not nil, terminates TLS in allowed CONNECT tunnels
	// (terminate.go). Fixed for the Server's life.
	Terminate *Terminate
	// Filtering is request filtering (filter.go): the FilterRequest hook,
	// HTTPRules, RefuseOpaqueTunnels and the rest. The zero value filters
	// nothing.
	Filtering
	// Credentials, when not nil, are the sandbox's masked secrets
	// (credential.Set, issue 18): their sentinels are replaced by the
	// real values in requests to each secret's hosts over TLS srt
	// terminated (and in cleartext only if the Set allows it), SigV4
	// requests signed with a masked key are re-signed, and every real
	// value is replaced by its sentinel in whatever goes back to the
	// client. Fixed for the Server's life.
	Credentials *credential.Set
}

// DefaultMaxConns is Config.MaxConns when zero: generous for one
// command's egress, far below the descriptor limit of a process that
// serves it.
const DefaultMaxConns = 1024

// RuleConnLimit is the Rule of the violation reported when a connection
// is refused for Config.MaxConns.
const RuleConnLimit = "connection limit"

// MaxIdleUpstream bounds the idle upstream connections the plain-HTTP
// pool keeps, across every host.
const MaxIdleUpstream = 8

// RefusedError is returned by the dial path when the resolved-address
// guard refuses every address a name resolved to.
type RefusedError struct {
	Decision netrule.Decision
}

func (e *RefusedError) Error() string {
	return "connection to " + e.Decision.Host + " refused: " + e.Decision.Reason
}

// Server holds the two proxies of one session. Use New; serve with
// HTTP().Serve and SOCKS5().Serve; stop with Close.
type Server struct {
	cfg       Config
	log       *slog.Logger
	resolver  Resolver
	dialer    Dialer
	policy    atomic.Pointer[netrule.Policy]
	transport *http.Transport // plain HTTP, dialled directly
	viaParent *http.Transport // plain HTTP through Config.Parent; nil without one
	term      *terminator     // Config.Terminate's state; nil without it
	active    atomic.Int64    // client connections being served
	limit     connLimit

	mu        sync.Mutex // guards the fields below
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[net.Conn]context.CancelFunc // client and upstream; cancel may be nil
	wg        sync.WaitGroup                  // connection goroutines; Add under mu

	localMu sync.Mutex // guards localAt and local
	localAt time.Time
	local   map[netip.Addr]bool
}

// New returns a Server for cfg. It does not listen; it returns an error
// only for an invalid Config (a negative MaxConns, a Terminate without a
// CA or with a negative bound).
func New(cfg Config) (*Server, error) {
	if cfg.MaxConns < 0 {
		return nil, fmt.Errorf("proxy: MaxConns %d: want 0 (the default) or more", cfg.MaxConns)
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		resolver:  cfg.Resolver,
		dialer:    cfg.Dialer,
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[net.Conn]context.CancelFunc),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.resolver == nil {
		s.resolver = net.DefaultResolver
	}
	if s.dialer == nil {
		s.dialer = &net.Dialer{}
	}
	if s.cfg.DialTimeout <= 0 {
		s.cfg.DialTimeout = 10 * time.Second
	}
	if s.cfg.HandshakeTimeout <= 0 {
		s.cfg.HandshakeTimeout = 30 * time.Second
	}
	if s.cfg.IdleTimeout <= 0 {
		s.cfg.IdleTimeout = 2 * time.Minute
	}
	s.policy.Store(cfg.Policy)
	if cfg.Parent != nil {
		s.viaParent = s.parentTransport()
	}
	if cfg.Terminate != nil {
		t, err := newTerminator(s, *cfg.Terminate)
		if err != nil {
			return nil, err
		}
		s.term = t
	}
	s.transport = &http.Transport{
		Proxy:               nil, // never chain to srt's own HTTP_PROXY
		DialContext:         s.transportDial,
		DisableCompression:  true, // pass Accept-Encoding through untouched
		MaxIdleConnsPerHost: 4,
		MaxIdleConns:        MaxIdleUpstream,
		IdleConnTimeout:     30 * time.Second,
	}
	s.decodeForCredentials()
	return s, nil
}

// SetPolicy replaces the rule set. Requests and connections started after
// it returns use p; open CONNECT and SOCKS5 tunnels are not re-judged, but
// every later request on a kept-alive plain-HTTP connection is. Nil denies
// everything. Safe to call concurrently with serving.
func (s *Server) SetPolicy(p *netrule.Policy) {
	s.policy.Store(p)
	// A pooled upstream connection was checked under the old rules.
	s.closeIdle()
}

// closeIdle closes the pooled plain-HTTP upstream connections and those
// of terminated tunnels.
func (s *Server) closeIdle() {
	s.transport.CloseIdleConnections()
	if s.viaParent != nil {
		s.viaParent.CloseIdleConnections()
	}
	if s.term != nil {
		s.term.upstream.CloseIdleConnections()
	}
}

// Policy returns the rule set in force.
func (s *Server) Policy() *netrule.Policy { return s.policy.Load() }

// ActiveConns returns the number of client connections being served.
func (s *Server) ActiveConns() int { return int(s.active.Load()) }

// Close stops every Serve (which then returns ErrServerClosed), closes
// every client and upstream connection, and waits for the connection
// goroutines to exit. It is idempotent and returns nil.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for ln := range s.listeners {
		ln.Close()
	}
	for c, cancel := range s.conns {
		if cancel != nil {
			cancel()
		}
		c.Close()
	}
	s.mu.Unlock()
	s.closeIdle()
	s.wg.Wait()
	return nil
}

// track registers c so Close can close it. For a client connection
// (cancel != nil) it also counts a goroutine. It reports false after
// Close.
func (s *Server) track(c net.Conn, cancel context.CancelFunc) bool {
	ok, _ := s.trackClient(c, cancel)
	return ok
}

// trackClient is track, which for a client connection (cancel != nil)
// also refuses one over Config.MaxConns: ok false and full true. The
// count is checked and raised under mu, so concurrent accept loops never
// overshoot it.
func (s *Server) trackClient(c net.Conn, cancel context.CancelFunc) (ok, full bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, false
	}
	if cancel != nil && s.active.Load() >= int64(s.cfg.MaxConns) {
		return false, true
	}
	s.conns[c] = cancel
	if cancel != nil {
		s.wg.Add(1)
		s.active.Add(1)
	}
	return true, false
}

func (s *Server) untrack(c net.Conn) {
	s.mu.Lock()
	cancel, ok := s.conns[c]
	delete(s.conns, c)
	s.mu.Unlock()
	if ok && cancel != nil {
		s.active.Add(-1)
		s.wg.Done()
	}
}

// serve is the accept loop shared by both proxies; proto ("http" or
// "socks5") says which, for the answer to a connection over
// Config.MaxConns. Cancelling ctx closes ln and every connection accepted
// from it.
func (s *Server) serve(ctx context.Context, ln net.Listener, proto string, handle func(context.Context, net.Conn)) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		ln.Close()
	}()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()

	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errTooManyFiles) {
				// Out of descriptors or a transient timeout: back off like
				// net/http.Server does rather than spin.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			return fmt.Errorf("accept on %s: %w", ln.Addr(), err)
		}
		backoff = 0
		cctx, cancel := context.WithCancel(ctx)
		if ok, full := s.trackClient(c, cancel); !ok {
			cancel()
			if full {
				s.refuseOverLimit(c, ln.Addr(), proto)
				continue
			}
			c.Close()
			return ErrServerClosed
		}
		go func() {
			defer s.untrack(c)
			defer cancel()
			defer c.Close()
			stopc := context.AfterFunc(cctx, func() { c.Close() })
			defer stopc()
			handle(cctx, c)
		}()
	}
}

// refuseOverLimit answers a client connection over Config.MaxConns and
// closes it at once, so it holds no descriptor: the HTTP proxy writes a
// 503 first (a fresh socket's send buffer takes it without blocking; the
// deadline is a guard), SOCKS5 just closes, since its reply needs a
// negotiation first. The refusal is logged at Warn and reported through
// OnViolation, both at most once per limitReportEvery.
func (s *Server) refuseOverLimit(c net.Conn, at net.Addr, proto string) {
	reason := fmt.Sprintf("%s: this sandbox already has %d connections open to its proxies", RuleConnLimit, s.cfg.MaxConns)
	if proto == "http" {
		body := "Connection refused by the sandbox runtime: " + reason + "\n"
		c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nX-Proxy-Error: "+errHdrAddress+
			"\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: "+
			strconv.Itoa(len(body))+"\r\n\r\n"+body)
	}
	c.Close()
	report, n := s.limit.refused(time.Now())
	if !report {
		return
	}
	s.log.Warn("proxy connection refused: limit reached", "limit", s.cfg.MaxConns, "proxy", proto, "refused", n)
	if s.cfg.OnViolation == nil {
		return
	}
	if n > 1 {
		reason += fmt.Sprintf("; %d connections refused since the last report", n)
	}
	v := violation.Violation{
		Time:   time.Now(),
		Action: violation.NetworkOutbound,
		Target: at.String(),
		Reason: reason,
		Rule:   RuleConnLimit,
	}
	v.Raw = v.Line()
	s.cfg.OnViolation(v)
}

// target is a destination as the client named it.
type target struct {
	host string // as sent by the client, brackets removed
	port int
}

// violation reports a refusal through OnViolation. Callers call it after
// writing the refusal, so a slow callback never delays the client's answer.
func (s *Server) violation(proto string, d netrule.Decision, port int) {
	if s.cfg.OnViolation == nil {
		return
	}
	v := violation.Violation{
		Time:     time.Now(),
		Action:   violation.NetworkOutbound,
		Target:   net.JoinHostPort(d.Host, strconv.Itoa(port)),
		Reason:   d.Reason,
		Protocol: proto,
		Rule:     d.Rule,
	}
	v.Raw = v.Line()
	s.cfg.OnViolation(v)
}
