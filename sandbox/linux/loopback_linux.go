package linux

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/srt-go/srt/internal/halfclose"
	"github.com/srt-go/srt/netrule"
	"github.com/srt-go/srt/proxy"
	"github.com/srt-go/srt/sandbox/linux/wire"
	"github.com/srt-go/srt/violation"
)

// This file runs in srt: the host side of the sandbox's relayed loopback
// ports (issue 17, "Allow-listed host loopback ports just work"). PID 1's
// side is sandbox/linux/inside's listeners_linux.go.
//
// The sandbox has a loopback of its own, so "localhost:3000" in
// allowedDomains reached nothing: NO_PROXY sends localhost past the
// proxies, to the sandbox's empty loopback, and a client that ignores the
// proxy variables (psql, a program with its own dialer) goes there too.
// For each entry netrule.Policy.LoopbackPorts lists, PID 1 binds that
// address and port on the sandbox's loopback before the command runs and
// hands the socket to srt with the proxies'; srt accepts on it from
// outside and relays each connection to the host's loopback, judged
// afresh by the session's current rules (netrule.Policy.LoopbackTargets)
// and by the proxies' guard on srtd's own addresses.

// ProtocolLoopback is the violation.Violation Protocol of a refused
// connection to a relayed loopback port.
const ProtocolLoopback = "loopback"

// relayDialTimeout bounds one dial of the host's loopback.
const relayDialTimeout = 10 * time.Second

// loopbackRelay relays the sandbox's wire.ListenerLoopback sockets to the
// host's loopback. It is safe for concurrent use by every listener of one
// sandbox.
type loopbackRelay struct {
	// policy returns the session's current rules (the proxies', which
	// SetPolicy replaces).
	policy func() *netrule.Policy
	// forbidden refuses srtd's addresses and the parent proxy's.
	forbidden func(netip.AddrPort) string
	// srv is the session's proxies: a relayed connection is an opaque
	// tunnel, refused where they refuse one (proxy.Server.MustInspect).
	srv         *proxy.Server
	onViolation func(violation.Violation)
	log         *slog.Logger
	// dial connects to a host address ("tcp", "ip:port"): a net.Dialer's,
	// a stand-in in tests.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// slots bounds the relayed connections open at once, across every
	// listener: one token per connection, as proxy.Config.MaxConns
	// bounds the proxies'.
	slots chan struct{}

	limitMu     sync.Mutex // guards limitAt and limitFolded
	limitAt     time.Time  // when the last over-the-limit refusal was reported
	limitFolded int        // refusals since, not yet reported
}

// newLoopbackRelay returns the relay of a sandbox whose proxies are srv,
// bounded to maxConns connections at once (0: proxy.DefaultMaxConns).
func newLoopbackRelay(srv *proxy.Server, forbidden func(netip.AddrPort) string, maxConns int, onViolation func(violation.Violation), lg *slog.Logger) *loopbackRelay {
	if maxConns <= 0 {
		maxConns = proxy.DefaultMaxConns
	}
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	return &loopbackRelay{
		policy: srv.Policy, forbidden: forbidden, srv: srv, onViolation: onViolation, log: lg,
		dial: (&net.Dialer{}).DialContext, slots: make(chan struct{}, maxConns),
	}
}

// loopbackListeners is what PID 1 binds for the relay: the allow-list's
// host loopback ports (netrule.Policy.LoopbackPorts) but the proxies'. It
// returns an error when there are more than wire.MaxLoopbackListeners.
func loopbackListeners(pol *netrule.Policy) ([]wire.ListenSpec, error) {
	aps := pol.LoopbackPorts(HTTPProxyPort, SOCKSProxyPort)
	if len(aps) > wire.MaxLoopbackListeners {
		return nil, fmt.Errorf("network.allowedDomains names %d host loopback addresses and ports; at most %d are relayed into a sandbox", len(aps), wire.MaxLoopbackListeners)
	}
	out := make([]wire.ListenSpec, 0, len(aps))
	for _, ap := range aps {
		out = append(out, wire.ListenSpec{Name: wire.ListenerLoopback, Addr: ap.String()})
	}
	return out, nil
}

// serve accepts on ln, a socket on the sandbox's loopback, until ctx ends,
// and relays each connection; it returns once every connection it
// accepted is closed.
func (r *loopbackRelay) serve(ctx context.Context, ln net.Listener) {
	var wg sync.WaitGroup
	defer wg.Wait()
	defer ln.Close()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	at, err := netip.ParseAddrPort(ln.Addr().String())
	if err != nil {
		r.log.Debug("loopback relay", "error", err)
		return
	}
	at = netip.AddrPortFrom(at.Addr().Unmap(), at.Port())
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if ctx.Err() == nil && (errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE)) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			return
		}
		backoff = 0
		select {
		case r.slots <- struct{}{}:
		default:
			reset(c)
			r.overLimit(at)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-r.slots }()
			r.relay(ctx, c, at)
		}()
	}
}

// relay judges one connection the sandbox made to at and, when allowed,
// pipes it to the first host loopback target that answers. A refused
// connection is reset (the client sees ECONNRESET, never an answer of
// someone else's) and recorded.
func (r *loopbackRelay) relay(ctx context.Context, c net.Conn, at netip.AddrPort) {
	targets, d := r.policy().LoopbackTargets(at)
	var refused *netrule.Decision
	if len(targets) == 0 {
		refused = &d
	}
	if len(targets) > 0 {
		// The relay cannot see into what it carries: refused for a host
		// requests to which are filtered, under either name.
		for _, h := range []string{at.Addr().String(), "localhost"} {
			if r.srv.MustInspect(h, int(at.Port())) {
				targets, refused = nil, &netrule.Decision{Host: h, Reason: r.srv.OpaqueRefusal(h, int(at.Port())), Rule: "opaque tunnel"}
				break
			}
		}
	}
	var up net.Conn
	for _, t := range targets {
		if why := r.forbidden(t); why != "" {
			if refused == nil {
				refused = &netrule.Decision{Host: t.Addr().String(), Reason: why}
			}
			continue
		}
		dctx, cancel := context.WithTimeout(ctx, relayDialTimeout)
		conn, err := r.dial(dctx, "tcp", t.String())
		cancel()
		if err == nil {
			up = conn
			break
		}
		r.log.Debug("loopback relay", "host", t.String(), "error", err)
	}
	if up == nil {
		reset(c)
		if refused != nil {
			r.report(at, refused.Reason, refused.Rule)
		}
		return
	}
	stop := context.AfterFunc(ctx, func() { c.Close(); up.Close() })
	defer stop()
	r.log.Debug("loopback relayed", "host", up.RemoteAddr().String())
	halfclose.Pipe(c, up)
}

// overLimit records a connection refused over the bound, at most once
// a second, as the proxies do.
func (r *loopbackRelay) overLimit(at netip.AddrPort) {
	r.limitMu.Lock()
	r.limitFolded++
	now := time.Now()
	if !r.limitAt.IsZero() && now.Sub(r.limitAt) < time.Second {
		r.limitMu.Unlock()
		return
	}
	n := r.limitFolded
	r.limitAt, r.limitFolded = now, 0
	r.limitMu.Unlock()
	reason := fmt.Sprintf("%s: this sandbox already has %d connections open to its relayed loopback ports", proxy.RuleConnLimit, cap(r.slots))
	if n > 1 {
		reason += fmt.Sprintf("; %d connections refused since the last report", n)
	}
	r.log.Warn("loopback relay connection refused: limit reached", "limit", cap(r.slots), "refused", n)
	r.report(at, reason, proxy.RuleConnLimit)
}

// report records one refused connection to at.
func (r *loopbackRelay) report(at netip.AddrPort, reason, rule string) {
	if r.onViolation == nil {
		return
	}
	v := violation.Violation{
		Time:     time.Now(),
		Action:   violation.NetworkOutbound,
		Target:   at.String(),
		Reason:   reason,
		Protocol: ProtocolLoopback,
		Rule:     rule,
	}
	v.Raw = v.Line()
	r.onViolation(v)
}

// reset closes c with a TCP reset rather than an orderly end of stream,
// so a client tells a refusal from an empty answer.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}
