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
// localhost or a loopback address always, is dialled directly. The
// matching is golang.org/x/net/http/httpproxy's: host suffixes ("corp",
// ".corp" and "*.corp" all match corp and its subdomains), IP literals,
// CIDR ranges, an optional ":port", "*" for every host.
type Parent struct {
	// TLS configures the TLS connection to an https:// parent. Nil means
	// the system roots, the parent's host name as the server name. Tests
	// set RootCAs.
	TLS *tls.Config

	http, https *url.URL
	match       func(*url.URL) (*url.URL, error)
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
	return &Parent{http: httpURL, https: httpsURL, match: cfg.ProxyFunc()}
}

// String describes p without credentials, for logs.
func (p *Parent) String() string {
	if p == nil {
		return "none"
	}
	var parts []string
	if p.http != nil {
		parts = append(parts, "http="+p.http.Redacted())
	}
	if p.https != nil {
		parts = append(parts, "https="+p.https.Redacted())
	}
	return strings.Join(parts, " ")
}

// forTunnel returns the parent a CONNECT or SOCKS5 connection to
// host:port goes through, or nil to dial directly.
func (p *Parent) forTunnel(host string, port int) *url.URL {
	return p.lookup("https", host, port)
}

// forHTTP returns the parent a plain-HTTP request to host:port goes
// through, or nil.
func (p *Parent) forHTTP(host string, port int) *url.URL {
	return p.lookup("http", host, port)
}

func (p *Parent) lookup(scheme, host string, port int) *url.URL {
	if p == nil {
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
	// Parent is the parent's URL, credentials removed.
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
	return "parent proxy " + e.Parent + " refused CONNECT " + e.Target + ": " + e.Status
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
// The resolved-address guard is not applied to it: the parent is the
// operator's choice (the settings file or srt's own environment, neither
// writable by the sandbox), and a parent on loopback or a private address
// is the usual setup. Config.Forbidden still is. The name is resolved
// here, once, so the Dialer only ever sees numeric addresses.
func (s *Server) dialParentHop(ctx context.Context, u *url.URL, withTLS bool) (net.Conn, error) {
	host, port := parentAddr(u)
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else if addrs, err = s.resolver.LookupNetIP(ctx, "ip", host); err != nil {
		return nil, fmt.Errorf("parent proxy %s: resolve: %w", u.Redacted(), err)
	}
	var c net.Conn
	err := fmt.Errorf("parent proxy %s: resolve: no addresses", u.Redacted())
	for _, a := range addrs {
		if c, err = s.dialAddr(ctx, netip.AddrPortFrom(a.Unmap(), uint16(port))); err == nil {
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
		return nil, fmt.Errorf("parent proxy %s: TLS: %w", u.Redacted(), err)
	}
	return tc, nil
}

// dialTunnel connects a CONNECT or SOCKS5 client to the destination
// Decide allowed: through the parent when one applies, else directly
// (dial, with the resolved-address guard).
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
	return s.connectVia(ctx, u, d.Host, port)
}

// connectVia opens a tunnel to host:port through parent u with CONNECT
// (RFC 9110 §9.3.6), with Proxy-Authorization Basic from u's userinfo.
// host is canonical (Decide's), so it holds no byte that could split the
// request; it is checked again anyway.
func (s *Server) connectVia(ctx context.Context, u *url.URL, host string, port int) (net.Conn, error) {
	if host == "" || strings.ContainsAny(host, " \t\r\n/@") {
		return nil, fmt.Errorf("parent proxy: refusing to CONNECT to %q", host)
	}
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
		return nil, fmt.Errorf("parent proxy %s: %w", u.Redacted(), err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("parent proxy %s: reading its answer to CONNECT %s: %w", u.Redacted(), target, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		resp.Body.Close()
		c.Close()
		return nil, &ParentError{Parent: u.Redacted(), Target: target, Status: sanitize(resp.Status, 200), Code: resp.StatusCode}
	}
	if !stop() {
		c.Close()
		return nil, fmt.Errorf("parent proxy %s: %w", u.Redacted(), ctx.Err())
	}
	c.SetDeadline(time.Time{})
	s.log.LogAttrs(ctx, slog.LevelDebug, "upstream connected through parent proxy",
		slog.String("host", target), slog.String("parent", u.Redacted()))
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
// parent, and nothing else.
func (s *Server) parentDial(ctx context.Context, network, addr string) (net.Conn, error) {
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
