package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"github.com/srt-go/srt/netrule"
)

var errTooManyFiles = syscall.EMFILE

// policyKey carries the *netrule.Policy a plain-HTTP request was judged
// under into transportDial, so one request never mixes two rule sets.
type policyKey struct{}

// dial connects to host:port after Decide allowed host under pol.
// decision is the Decide result (its Host is canonical).
//
// An IP literal was judged as an IP by Decide and is dialled as is. A name
// is resolved exactly once; every address goes through CheckResolved;
// refused addresses are dropped; the survivors are dialled in resolver
// order and the first that answers is returned. The address dialled is
// always one that was checked: nothing resolves the name again.
//
// If every address is refused, the error is a *RefusedError carrying the
// first refusal. Resolution and dial failures are returned wrapped.
func (s *Server) dial(ctx context.Context, pol *netrule.Policy, decision netrule.Decision, port int) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	defer cancel()
	host := decision.Host
	if ip, err := netip.ParseAddr(host); err == nil {
		return s.dialAddr(ctx, netip.AddrPortFrom(ip, uint16(port)))
	}
	addrs, err := s.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	isLocal := s.isLocal()
	var refused *netrule.Decision
	var lastErr error
	for _, a := range addrs {
		d := pol.CheckResolved(host, port, a, isLocal)
		if !d.Allowed {
			if refused == nil {
				refused = &d
			}
			continue
		}
		c, err := s.dialAddr(ctx, netip.AddrPortFrom(a.Unmap(), uint16(port)))
		if err == nil {
			return c, nil
		}
		lastErr = err
	}
	switch {
	case lastErr != nil:
		return nil, lastErr
	case refused != nil:
		return nil, &RefusedError{Decision: *refused}
	}
	return nil, fmt.Errorf("resolve %s: no addresses", host)
}

// dialAddr dials a destination address, unless Config.Forbidden or the
// parent's own addresses (Parent.Forbidden) refuse it.
func (s *Server) dialAddr(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
	return s.dialChecked(ctx, ap, s.forbidden)
}

// forbidden is the reason Config.Forbidden or Parent.Forbidden gives for
// a destination address, or "".
func (s *Server) forbidden(ap netip.AddrPort) string {
	if s.cfg.Forbidden != nil {
		if why := s.cfg.Forbidden(ap); why != "" {
			return why
		}
	}
	return s.cfg.Parent.Forbidden(ap)
}

// dialChecked dials ap unless forbidden gives a reason (a *RefusedError).
func (s *Server) dialChecked(ctx context.Context, ap netip.AddrPort, forbidden func(netip.AddrPort) string) (net.Conn, error) {
	if forbidden != nil {
		if why := forbidden(ap); why != "" {
			return nil, &RefusedError{Decision: netrule.Decision{Host: ap.Addr().String(), Reason: why}}
		}
	}
	c, err := s.dialer.DialContext(ctx, "tcp", ap.String())
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", ap, err)
	}
	s.log.LogAttrs(ctx, slog.LevelDebug, "upstream connected", slog.String("host", ap.String()))
	return c, nil
}

// transportDial is the plain-HTTP Transport's DialContext. The request
// was already judged by Decide; here the name is resolved and guarded.
func (s *Server) transportDial(ctx context.Context, network, addr string) (net.Conn, error) {
	pol, _ := ctx.Value(policyKey{}).(*netrule.Policy)
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil {
		return nil, fmt.Errorf("dial %s: bad port: %w", addr, err)
	}
	d := pol.Decide(host, port)
	if !d.Allowed { // only if the caller forgot to judge; never expected
		return nil, &RefusedError{Decision: d}
	}
	return s.dial(ctx, pol, d, port)
}

// isLocal returns a predicate for this host's interface addresses.
func (s *Server) isLocal() func(netip.Addr) bool {
	s.localMu.Lock()
	defer s.localMu.Unlock()
	if s.local == nil || time.Since(s.localAt) > 5*time.Second {
		m := make(map[netip.Addr]bool)
		addrs, err := s.localAddrs()
		if err != nil {
			s.log.Debug("listing interface addresses", slog.Any("error", err))
		}
		for _, a := range addrs {
			m[a.Unmap()] = true
		}
		s.local, s.localAt = m, time.Now()
	}
	local := s.local
	return func(a netip.Addr) bool { return local[a.Unmap()] }
}

func (s *Server) localAddrs() ([]netip.Addr, error) {
	if s.cfg.LocalAddrs != nil {
		return s.cfg.LocalAddrs()
	}
	ifas, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("interface addresses: %w", err)
	}
	var out []netip.Addr
	for _, ifa := range ifas {
		if ipn, ok := ifa.(*net.IPNet); ok {
			if a, ok := netip.AddrFromSlice(ipn.IP); ok {
				out = append(out, a.Unmap())
			}
		}
	}
	return out, nil
}

// isRefused reports whether err carries a resolved-address refusal.
func isRefused(err error) (*RefusedError, bool) {
	var re *RefusedError
	ok := errors.As(err, &re)
	return re, ok
}
