package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpproxy"

	"github.com/srt-go/srt/netrule"
)

// Parent is the upstream proxy srt's proxies go through (settings
// "network.parentProxy", else srt's own HTTP_PROXY / HTTPS_PROXY /
// NO_PROXY). Build it with NewParent; nil means every connection is
// dialled directly.
//
// Which connections use it (the reference 0.0.83's rules, which are
// curl's): CONNECT tunnels and SOCKS5 connections use HTTPS, else HTTP;
// plain-HTTP requests use HTTP only. A destination matched by NoProxy, and
// localhost, a name under .localhost or a loopback address always, is
// dialled directly. The matching is golang.org/x/net/http/httpproxy's:
// host suffixes ("corp", ".corp" and "*.corp" all match corp and its
// subdomains), IP literals, CIDR ranges, an optional ":port", "*" for
// every host.
//
// A Parent may also carry a MITM route (WithMITM, mitm.go): the
// destinations its Match accepts go to an HTTP proxy on a unix socket
// instead, whatever the parents and NoProxy say.
type Parent struct {
	// TLS configures the TLS connection to an https:// parent. Nil means
	// the system roots, the parent's host name as the server name. Tests
	// set RootCAs.
	TLS *tls.Config

	http, https *url.URL
	match       func(*url.URL) (*url.URL, error) // nil without http and https
	mitm        *MITMProxy                       // nil without a MITM route

	mu    sync.Mutex              // guards known
	known map[netip.AddrPort]bool // the parents' addresses seen so far
}

// NewParent returns the parent proxy for httpURL (plain HTTP) and
// httpsURL (CONNECT and SOCKS5; nil falls back to httpURL), each already
// checked (settings.ParseProxyURL), with noProxy a NO_PROXY list. Both
// nil gives nil.
func NewParent(httpURL, httpsURL *url.URL, noProxy string) *Parent {
	if httpsURL == nil {
		httpsURL = httpURL
	}
	if httpURL == nil && httpsURL == nil {
		return nil
	}
	cfg := httpproxy.Config{NoProxy: noProxy}
	if httpURL != nil {
		cfg.HTTPProxy = httpURL.String()
	}
	if httpsURL != nil {
		cfg.HTTPSProxy = httpsURL.String()
	}
	p := &Parent{http: httpURL, https: httpsURL, match: cfg.ProxyFunc(), known: make(map[netip.AddrPort]bool)}
	for _, u := range []*url.URL{httpURL, httpsURL} {
		if u == nil {
			continue
		}
		host, port := parentAddr(u)
		if a, err := netip.ParseAddr(host); err == nil {
			p.known[netip.AddrPortFrom(a.Unmap(), uint16(port))] = true
		} else if isLocalhostName(host) {
			p.known[netip.AddrPortFrom(netip.IPv6Loopback(), uint16(port))] = true
		}
	}
	return p
}

// Resolve looks up the parents' host names with r and adds their
// addresses to those Forbidden refuses. srt calls it once, when the policy
// is compiled (policy.NetworkOf); the proxies also add every address they
// dial a parent at. A name that does not resolve is skipped: srt cannot
// reach that parent either until it does, and then learns its address
// the first time it dials it.
func (p *Parent) Resolve(ctx context.Context, r Resolver) {
	if p == nil {
		return
	}
	for _, u := range []*url.URL{p.http, p.https} {
		if u == nil {
			continue
		}
		host, port := parentAddr(u)
		if _, err := netip.ParseAddr(host); err == nil || isLocalhostName(host) {
			continue
		}
		addrs, err := r.LookupNetIP(ctx, "ip", host)
		if err != nil {
			continue
		}
		for _, a := range addrs {
			p.learn(netip.AddrPortFrom(a.Unmap(), uint16(port)))
		}
	}
}

func (p *Parent) learn(ap netip.AddrPort) {
	p.mu.Lock()
	p.known[ap] = true
	p.mu.Unlock()
}

// ReasonParentAddress is the reason Forbidden gives.
const ReasonParentAddress = "the parent proxy listens there; the sandbox reaches it only through srt's proxies"

// Forbidden returns ReasonParentAddress when ap is an address a parent
// proxy listens on, else "" (also for a nil p). A parent on a loopback
// address (or named localhost) matches every loopback address of its
// port, as srtd's own addresses do (sandbox/linux ServerAddresses), and
// a parent on this host (loopback or one of its interface addresses)
// every address of this host on its port, where a listener on the
// wildcard address answers too. srt
// refuses the sandbox these addresses whatever the rules allow (the
// proxies' destinations, the Linux loopback relay): a parent that trusts
// its local clients, or srt's host, would otherwise be a way around srt's
// rules, and srt's own connections to it carry the credentials.
func (p *Parent) Forbidden(ap netip.AddrPort) string {
	if p == nil {
		return ""
	}
	// Each IPv4 address an IPv6 spelling embeds (NAT64, IPv4-compatible,
	// 6to4, Teredo) is judged too.
	for _, c := range netrule.Candidates(ap.Addr()) {
		if why := p.forbidden(netip.AddrPortFrom(c, ap.Port())); why != "" {
			return why
		}
	}
	return ""
}

// forbidden is Forbidden for one address form.
func (p *Parent) forbidden(ap netip.AddrPort) string {
	a := ap.Addr().Unmap()
	var known []netip.Addr // the parent's addresses on ap's port
	p.mu.Lock()
	for k := range p.known {
		if k.Port() == ap.Port() {
			known = append(known, k.Addr())
		}
	}
	p.mu.Unlock()
	onHost := false // a parent on this host listens on this port
	for _, k := range known {
		if k == a || k.IsLoopback() && a.IsLoopback() || k.IsUnspecified() {
			return ReasonParentAddress
		}
		onHost = onHost || k.IsLoopback() || hostAddr(k)
	}
	// A parent on this host may listen on the wildcard address: then
	// every address of this host reaches it on its port, not only the
	// one srt dials.
	if onHost && (a.IsLoopback() || a.IsUnspecified() || hostAddr(a)) {
		return ReasonParentAddress
	}
	return ""
}

// hostAddr reports whether a is assigned to one of this host's
// interfaces (read at each call: Forbidden asks only for a parent's
// port, which few connections use).
func hostAddr(a netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true // fail closed: this host's addresses are unknown
	}
	for _, ia := range addrs {
		if n, ok := ia.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == a.Unmap() {
				return true
			}
		}
	}
	return false
}

// userinfos are what of p's URLs' user information ScrubEnv looks for
// in a value: "user:password@" as written and "user@", and the password
// itself when it is not too short to be told from other text; none for a
// nil p.
func (p *Parent) userinfos() []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, u := range []*url.URL{p.http, p.https} {
		if u == nil || u.User == nil {
			continue
		}
		// With its '@': a user name alone is also a login name, found in
		// HOME and USER, which must stay.
		out = append(out, u.User.String()+"@", u.User.Username()+"@")
		if pw, ok := u.User.Password(); ok && len(pw) >= 4 {
			out = append(out, pw)
		}
	}
	return out
}

// isLocalhostName reports whether host is localhost or a name under
// .localhost (RFC 6761 §6.3: this host's loopback, whatever DNS says).
func isLocalhostName(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}

// redact is u as scheme://host:port with any userinfo, user name
// included, shown as "***@" (url.URL.Redacted keeps the user name, which
// is often a secret of its own). settings.ParseProxyURL's errors use a
// twin of it.
func redact(u *url.URL) string {
	if u == nil {
		return ""
	}
	if u.User != nil {
		return u.Scheme + "://***@" + u.Host
	}
	return u.Scheme + "://" + u.Host
}

// String describes p without credentials, for logs.
func (p *Parent) String() string {
	if p == nil {
		return "none"
	}
	var parts []string
	if p.mitm != nil {
		parts = append(parts, "mitm=unix:"+p.mitm.SocketPath)
	}
	if p.http != nil {
		parts = append(parts, "http="+redact(p.http))
	}
	if p.https != nil {
		parts = append(parts, "https="+redact(p.https))
	}
	return strings.Join(parts, " ")
}

// forTunnel returns the parent a CONNECT or SOCKS5 connection to
// host:port goes through (mitmURL for the MITM route), or nil to dial
// directly.
func (p *Parent) forTunnel(host string, port int) *url.URL {
	return p.lookup("https", host, port)
}

// forHTTP returns the parent a plain-HTTP request to host:port goes
// through (mitmURL for the MITM route), or nil.
func (p *Parent) forHTTP(host string, port int) *url.URL {
	return p.lookup("http", host, port)
}

// localhost and names under .localhost are never sent to a parent: they
// mean this host's loopback, and through a parent they would be the
// parent's. They are dialled directly, under the direct path's rules and
// resolved-address guard, as without a parent (httpproxy already does so
// for localhost and loopback literals). The MITM route is asked first.
func (p *Parent) lookup(scheme, host string, port int) *url.URL {
	if p == nil || isLocalhostName(host) {
		return nil
	}
	if p.mitm != nil && p.mitm.Match(host, port) {
		return mitmURL
	}
	if p.match == nil {
		return nil
	}
	u, err := p.match(&url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))})
	if err != nil {
		return nil // the URLs were checked; httpproxy only fails on a bad one
	}
	return u
}

// ParentError is a parent proxy's refusal of a CONNECT: any answer but
// 2xx. Its text names the parent without credentials.
type ParentError struct {
	// Parent names the parent: "parent proxy " and its URL, credentials
	// removed, or "MITM proxy unix:" and the socket path.
	Parent string
	// Target is the host:port asked for.
	Target string
	// Status is the parent's status line ("407 Proxy Authentication
	// Required").
	Status string
	// Code is the status code.
	Code int
}

func (e *ParentError) Error() string {
	return e.Parent + " refused CONNECT " + e.Target + ": " + e.Status
}

// parentAddr is the host:port of parent u, the scheme's default port when
// it has none.
func parentAddr(u *url.URL) (string, int) {
	port := 80
	if u.Scheme == "https" {
		port = 443
	}
	if ps := u.Port(); ps != "" {
		port, _ = strconv.Atoi(ps)
	}
	return u.Hostname(), port
}

// dialParentHop connects to parent u itself, TLS included for https://
// when withTLS.
//
// The resolved-address guard is not applied to it, nor the refusal of
// the parent's own addresses (Parent.Forbidden): the parent is the
// operator's choice (the settings file or srt's own environment, neither
// writable by the sandbox), and a parent on loopback or a private address
// is the usual setup. Config.Forbidden still is. The name is resolved
// here, once, so the Dialer only ever sees numeric addresses; every
// address dialled is added to those Parent.Forbidden refuses. The MITM
// route's placeholder is not dialled: its socket is (dialMITM).
func (s *Server) dialParentHop(ctx context.Context, u *url.URL, withTLS bool) (net.Conn, error) {
	if s.cfg.Parent.isMITM(u) {
		return s.dialMITM(ctx)
	}
	host, port := parentAddr(u)
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else if addrs, err = s.resolver.LookupNetIP(ctx, "ip", host); err != nil {
		return nil, fmt.Errorf("parent proxy %s: resolve: %w", redact(u), err)
	}
	var c net.Conn
	err := fmt.Errorf("parent proxy %s: resolve: no addresses", redact(u))
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a.Unmap(), uint16(port))
		s.cfg.Parent.learn(ap)
		if c, err = s.dialChecked(ctx, ap, s.cfg.Forbidden); err == nil {
			break
		}
	}
	if c == nil {
		return nil, err
	}
	if u.Scheme != "https" || !withTLS {
		return c, nil
	}
	cfg := &tls.Config{}
	if s.cfg.Parent.TLS != nil {
		cfg = s.cfg.Parent.TLS.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("parent proxy %s: TLS: %w", redact(u), err)
	}
	return tc, nil
}

// dialTunnel connects a CONNECT or SOCKS5 client to the destination
// Decide allowed: through the parent when one applies (after
// checkViaParent), else directly (dial, with the resolved-address guard).
func (s *Server) dialTunnel(ctx context.Context, pol *netrule.Policy, d netrule.Decision, port int) (net.Conn, error) {
	if !d.Allowed { // the callers judge first; never expected
		return nil, &RefusedError{Decision: d}
	}
	u := s.cfg.Parent.forTunnel(d.Host, port)
	if u == nil {
		return s.dial(ctx, pol, d, port)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	defer cancel()
	if err := s.checkViaParent(ctx, pol, d, port); err != nil {
		return nil, err
	}
	return s.connectVia(ctx, u, d.Host, port)
}

// checkViaParent judges, before anything is sent to a parent, the
// destination host:port that Decide allowed (d): the checks a direct dial
// makes, done the stricter way, since through a parent srt cannot choose
// which address is used.
//
// An IP literal is judged as the direct path judges it: Decide did, and
// Config.Forbidden and Parent.Forbidden must not refuse it. A name is
// resolved here (s's Resolver, under ctx, which the caller bounds by
// DialTimeout), and EVERY address must pass CheckResolved and both
// Forbidden hooks, where a direct dial drops the refused addresses and
// dials a good one; the first refusal is returned as a *RefusedError. A
// name that does not resolve here (a network where only the parent
// resolves names) is let through, logged at debug: the parent's own
// lookup is not checked, and a rebinding between the two lookups is the
// parent's to stop (SECURITY.md).
func (s *Server) checkViaParent(ctx context.Context, pol *netrule.Policy, d netrule.Decision, port int) error {
	if ip, err := netip.ParseAddr(d.Host); err == nil {
		if why := s.forbidden(netip.AddrPortFrom(ip.Unmap(), uint16(port))); why != "" {
			return &RefusedError{Decision: netrule.Decision{Host: d.Host, Reason: why}}
		}
		return nil
	}
	addrs, err := s.resolver.LookupNetIP(ctx, "ip", d.Host)
	if err != nil || len(addrs) == 0 {
		s.log.LogAttrs(ctx, slog.LevelDebug, "destination does not resolve here; the parent proxy resolves it unchecked",
			slog.String("host", d.Host), slog.Any("error", err))
		return nil
	}
	isLocal := s.isLocal()
	for _, a := range addrs {
		if r := pol.CheckResolved(d.Host, port, a, isLocal); !r.Allowed {
			return &RefusedError{Decision: r}
		}
		if why := s.forbidden(netip.AddrPortFrom(a.Unmap(), uint16(port))); why != "" {
			return &RefusedError{Decision: netrule.Decision{Host: a.Unmap().String(), Reason: why}}
		}
	}
	return nil
}

// connectVia opens a tunnel to host:port through parent u with CONNECT
// (RFC 9110 §9.3.6), with Proxy-Authorization Basic from u's userinfo.
// host is canonical (Decide's), so it holds no byte that could split the
// request; it is checked again anyway.
func (s *Server) connectVia(ctx context.Context, u *url.URL, host string, port int) (net.Conn, error) {
	if host == "" || strings.ContainsAny(host, " \t\r\n/@") {
		return nil, fmt.Errorf("parent proxy: refusing to CONNECT to %q", host)
	}
	label := s.cfg.Parent.label(u)
	target := net.JoinHostPort(host, strconv.Itoa(port))
	c, err := s.dialParentHop(ctx, u, true)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	req := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	if auth := proxyAuth(u); auth != "" {
		req += "Proxy-Authorization: " + auth + "\r\n"
	}
	req += "\r\n"
	if _, err := c.Write([]byte(req)); err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: reading its answer to CONNECT %s: %w", label, target, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		resp.Body.Close()
		c.Close()
		return nil, &ParentError{Parent: label, Target: target, Status: sanitize(resp.Status, 200), Code: resp.StatusCode}
	}
	if !stop() {
		c.Close()
		return nil, fmt.Errorf("%s: %w", label, ctx.Err())
	}
	c.SetDeadline(time.Time{})
	s.log.LogAttrs(ctx, slog.LevelDebug, "upstream connected through parent proxy",
		slog.String("host", target), slog.String("parent", label))
	if br.Buffered() > 0 {
		return &bufferedConn{Conn: c, r: br}, nil
	}
	return c, nil
}

// proxyAuth is the Proxy-Authorization value for u's userinfo, or "".
func proxyAuth(u *url.URL) string {
	if u.User == nil {
		return ""
	}
	pw, _ := u.User.Password()
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw))
}

// bufferedConn is a Conn whose first bytes were read ahead into r.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// CloseWrite half-closes the underlying connection when it can.
func (b *bufferedConn) CloseWrite() error {
	if cw, ok := b.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// isParentRefusal reports whether err carries a parent's refusal.
func isParentRefusal(err error) (*ParentError, bool) {
	var pe *ParentError
	ok := errors.As(err, &pe)
	return pe, ok
}

// logParentRefusal logs a parent's refusal (not a violation: srt's own
// rules allowed the destination).
func (s *Server) logParentRefusal(ctx context.Context, pe *ParentError) {
	s.log.LogAttrs(ctx, slog.LevelWarn, "parent proxy refused the connection",
		slog.String("host", pe.Target), slog.String("parent", pe.Parent), slog.String("status", pe.Status))
}

// parentKey carries the parent a plain-HTTP request goes through into
// the viaParent Transport.
type parentKey struct{}

// parentTransport is the Transport for plain-HTTP requests through
// Config.Parent. It forwards the request as is, absolute URI, to the
// parent (RFC 9112 §3.2.2), as curl and the reference do: a parent
// commonly refuses CONNECT to any port but 443, so tunnelling plain HTTP
// would fail behind the proxies this exists for. net/http adds
// Proxy-Authorization from the URL's userinfo (the client's own was
// removed as hop-by-hop) and speaks TLS to an https:// parent.
func (s *Server) parentTransport() *http.Transport {
	return &http.Transport{
		Proxy: func(r *http.Request) (*url.URL, error) {
			// Never nil: a nil proxy makes the Transport dial the
			// destination itself, past the resolved-address guard.
			if u, _ := r.Context().Value(parentKey{}).(*url.URL); u != nil {
				return u, nil
			}
			return nil, errors.New("parent proxy: none chosen for this request")
		},
		DialContext:         s.parentDial,
		TLSClientConfig:     s.cfg.Parent.TLS,
		DisableCompression:  true,
		MaxIdleConnsPerHost: 4,
		MaxIdleConns:        MaxIdleUpstream,
		IdleConnTimeout:     30 * time.Second,
	}
}

// parentDial is the viaParent Transport's DialContext: it dials the HTTP
// parent or the MITM route's socket, and nothing else.
func (s *Server) parentDial(ctx context.Context, network, addr string) (net.Conn, error) {
	if s.cfg.Parent.mitm != nil && addr == mitmURL.Host {
		ctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
		defer cancel()
		return s.dialMITM(ctx)
	}
	u := s.cfg.Parent.http
	if u == nil {
		return nil, errors.New("parent proxy: no http parent")
	}
	host, port := parentAddr(u)
	if want := net.JoinHostPort(host, strconv.Itoa(port)); addr != want {
		return nil, fmt.Errorf("parent proxy: transport asked for %s, not the parent %s", addr, want)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	defer cancel()
	return s.dialParentHop(ctx, u, false)
}

// RuleParentTrace is the Rule of the violation reported when a TRACE or
// TRACK request is refused on the route through a parent proxy.
const RuleParentTrace = "no TRACE through a parent proxy"

// refuseViaParent judges a plain-HTTP request that Decide allowed (d) and
// that would go through a parent, before anything is sent to it. When it
// refuses, it writes the answer, reports the violation and returns true.
//
// TRACE and TRACK get 405: the parent answers a TRACE with Max-Forwards: 0
// itself, echoing the request, and with it the Proxy-Authorization srt
// added (RFC 9110 §9.3.8). Then checkViaParent: a refused address gets
// the direct path's 403 (X-Proxy-Error: blocked-by-sandbox-runtime).
func (s *Server) refuseViaParent(ctx context.Context, bw *bufio.Writer, pol *netrule.Policy, d netrule.Decision, method string, port int) bool {
	if m := strings.ToUpper(method); m == "TRACE" || m == "TRACK" {
		r := netrule.Decision{Host: d.Host, Rule: RuleParentTrace,
			Reason: m + " is not forwarded to a parent proxy: its echo would carry srt's credentials for it"}
		writeResponse(bw, "405 Method Not Allowed", errHdrAddress, cleanBody("Request to "+d.Host+" blocked: "+r.Reason+"\n"))
		s.violation("http", r, port)
		return true
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	defer cancel()
	err := s.checkViaParent(cctx, pol, d, port)
	if err == nil {
		return false
	}
	re, ok := isRefused(err)
	if !ok { // checkViaParent only refuses; never expected
		re = &RefusedError{Decision: netrule.Decision{Host: d.Host, Reason: err.Error()}}
	}
	writePlainRefusal(bw, "Connection to "+d.Host+" blocked: "+re.Decision.Reason+"\n", errHdrAddress)
	s.violation("http", re.Decision, port)
	return true
}

// canonicalAuthority is the authority of an absolute URI for canonical
// host (Decide's, an IPv6 literal without brackets), with port when the
// client gave one (explicit).
func canonicalAuthority(host string, port int, explicit bool) string {
	if explicit {
		return net.JoinHostPort(host, strconv.Itoa(port))
	}
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}
