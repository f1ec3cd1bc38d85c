package proxy

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/srt-go/srt/netrule"
)

// guardedParentEnv is a parentEnv whose rules do not allow loopback
// literals, so the resolved-address guard has something to refuse, and
// whose resolver maps the names below.
func guardedParentEnv(t *testing.T) *parentEnv {
	t.Helper()
	pol, err := netrule.Compile(netrule.Rules{
		Allowed:         []string{"loop.test", "bad.test", "mixed.test", "nx.test", "good.test"},
		DeniedAddresses: []string{"203.0.113.0/24"},
	})
	if err != nil {
		t.Fatal(err)
	}
	res := &fakeResolver{hosts: map[string][]netip.Addr{
		"loop.test":  {loop4},
		"bad.test":   {netip.MustParseAddr("203.0.113.5")},
		"mixed.test": {netip.MustParseAddr("8.8.8.8"), netip.MustParseAddr("203.0.113.6")},
		"good.test":  {netip.MustParseAddr("8.8.8.8")},
	}}
	return startParentEnv(t, false, parentUser, "", func(c *Config) {
		c.Policy = pol
		c.Resolver = res
		c.LocalAddrs = func() ([]netip.Addr, error) { return nil, nil }
	})
}

// TestParentProxyResolvedGuard: through a parent, a name that resolves
// here is refused when ANY of its addresses fails the resolved-address
// guard (loopback, deniedResolvedAddresses), on all three routes, as a
// violation, with nothing sent to the parent; a name that does not
// resolve here is forwarded.
func TestParentProxyResolvedGuard(t *testing.T) {
	pe := guardedParentEnv(t)
	port := portOf(t, pe.plain.URL)
	for _, host := range []string{"loop.test", "bad.test", "mixed.test"} {
		rs := rawRequest(t, pe.httpAddr, "CONNECT "+host+":"+port+" HTTP/1.1\r\nHost: "+host+":"+port+"\r\n\r\n", 1)
		if len(rs) != 1 || rs[0].StatusCode != 403 || rs[0].Header.Get("X-Proxy-Error") != errHdrAddress {
			t.Fatalf("CONNECT %s: %v", host, rs)
		}
		rs = rawRequest(t, pe.httpAddr, "GET http://"+host+":"+port+"/ HTTP/1.1\r\nHost: "+host+":"+port+"\r\n\r\n", 1)
		if len(rs) != 1 || rs[0].StatusCode != 403 || rs[0].Header.Get("X-Proxy-Error") != errHdrAddress {
			t.Fatalf("GET %s: %v", host, rs)
		}
		if rep := socksConnect(t, pe.socksAddr, host, port); rep != RepNotAllowed {
			t.Fatalf("SOCKS5 %s: rep %d", host, rep)
		}
	}
	vs := pe.vio.wait(t, 9)
	var resolvedDenied int
	for _, v := range vs {
		if v.Reason == netrule.ReasonResolvedDenied {
			resolvedDenied++
		}
	}
	if resolvedDenied != 6 {
		t.Errorf("violations %v: want 6 for deniedResolvedAddresses", vs)
	}
	if got := pe.parent.seen(); len(got) != 0 {
		t.Fatalf("parent saw %q", got)
	}
	// Not resolvable here: the parent resolves it (the fixture maps
	// every name to 127.0.0.1).
	code, b, err := pe.get(t, "http://nx.test:"+port+"/nx")
	if err != nil || code != 200 || b != "via parent nx.test:"+port+" /nx" {
		t.Fatalf("nx.test: %d %q %v", code, b, err)
	}
}

// TestParentProxyTrace: TRACE and TRACK are never sent to a parent (it
// would echo srt's Proxy-Authorization): 405 and a violation.
func TestParentProxyTrace(t *testing.T) {
	pe := startParentEnv(t, false, parentUser, "")
	port := portOf(t, pe.plain.URL)
	for _, m := range []string{"TRACE", "TRACK", "trace"} {
		rs := rawRequest(t, pe.httpAddr, m+" http://allowed.test:"+port+"/ HTTP/1.1\r\nHost: allowed.test:"+port+"\r\nMax-Forwards: 0\r\n\r\n", 1)
		if len(rs) != 1 {
			t.Fatalf("%s: no answer", m)
		}
		b := body(rs[0])
		if rs[0].StatusCode != 405 || strings.Contains(b, "Basic") || strings.Contains(b, "Proxy-Authorization") {
			t.Fatalf("%s: %d %q", m, rs[0].StatusCode, b)
		}
	}
	for _, v := range pe.vio.wait(t, 3) {
		if v.Rule != RuleParentTrace {
			t.Errorf("violation %+v", v)
		}
	}
	if got := pe.parent.seen(); len(got) != 0 {
		t.Fatalf("parent saw %q", got)
	}
}

// TestParentProxyOwnAddress: the sandbox cannot reach the parent itself,
// even where the rules allow its address (127.0.0.1 is allowed here):
// CONNECT, plain HTTP and SOCKS5 to it, or to another loopback address
// on its port, are refused as violations and the parent sees nothing.
func TestParentProxyOwnAddress(t *testing.T) {
	pol, err := netrule.Compile(netrule.Rules{Allowed: []string{"127.0.0.1", "127.0.0.3"}})
	if err != nil {
		t.Fatal(err)
	}
	pe := startParentEnv(t, false, parentUser, "", func(c *Config) { c.Policy = pol })
	pport := portOf(t, pe.parent.srv.URL)
	for _, host := range []string{"127.0.0.1", "127.0.0.3"} {
		target := net.JoinHostPort(host, pport)
		rs := rawRequest(t, pe.httpAddr, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n", 1)
		if len(rs) != 1 || rs[0].StatusCode != 403 || !strings.Contains(body(rs[0]), ReasonParentAddress) {
			t.Fatalf("CONNECT %s: %v", target, rs)
		}
		rs = rawRequest(t, pe.httpAddr, "GET http://"+target+"/ HTTP/1.1\r\nHost: "+target+"\r\n\r\n", 1)
		if len(rs) != 1 || rs[0].StatusCode != 403 {
			t.Fatalf("GET %s: %v", target, rs)
		}
		if rep := socksConnect(t, pe.socksAddr, host, pport); rep != RepNotAllowed {
			t.Fatalf("SOCKS5 %s: rep %d", target, rep)
		}
	}
	pe.vio.wait(t, 6)
	if got := pe.parent.seen(); len(got) != 0 {
		t.Fatalf("parent saw %q", got)
	}
}

// TestParentForbidden: Parent.Forbidden knows a literal parent, a
// localhost one, and a named one once Resolve ran.
func TestParentForbidden(t *testing.T) {
	mk := func(raw string) *Parent {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		return NewParent(u, nil, "")
	}
	ap := netip.MustParseAddrPort
	if mk("http://10.1.2.3:3128").Forbidden(ap("10.1.2.3:3128")) == "" {
		t.Error("literal parent not forbidden")
	}
	if mk("http://10.1.2.3:3128").Forbidden(ap("10.1.2.3:3129")) != "" {
		t.Error("another port forbidden")
	}
	if mk("http://localhost:3128").Forbidden(ap("127.0.0.5:3128")) == "" {
		t.Error("localhost parent: loopback not forbidden")
	}
	// A parent on this host's loopback, perhaps listening on the
	// wildcard address: this host's other addresses on its port too.
	var hostIP netip.Addr
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, ia := range addrs {
			if n, ok := ia.(*net.IPNet); ok && !n.IP.IsLoopback() {
				hostIP, _ = netip.AddrFromSlice(n.IP)
				break
			}
		}
	}
	if hostIP.IsValid() {
		if mk("http://127.0.0.1:3128").Forbidden(netip.AddrPortFrom(hostIP.Unmap(), 3128)) == "" {
			t.Errorf("loopback parent: this host's address %s not forbidden on its port", hostIP)
		}
		if mk("http://127.0.0.1:3128").Forbidden(netip.AddrPortFrom(hostIP.Unmap(), 3129)) != "" {
			t.Errorf("loopback parent: this host's address %s forbidden on another port", hostIP)
		}
	} else {
		t.Log("no non-loopback interface address: the wildcard case is not tested")
	}
	for _, a := range []string{"[64:ff9b::7f00:1]:3128", "[::127.0.0.1]:3128", "[::ffff:127.0.0.1]:3128"} {
		if mk("http://127.0.0.1:3128").Forbidden(ap(a)) == "" {
			t.Errorf("loopback parent: %s, which embeds 127.0.0.1, not forbidden", a)
		}
	}
	if mk("http://127.0.0.1:3128").Forbidden(ap("192.0.2.77:3128")) != "" {
		t.Error("loopback parent: a remote address forbidden")
	}
	p := mk("http://user@proxy.corp:8080")
	if p.Forbidden(ap("10.9.9.9:8080")) != "" {
		t.Error("forbidden before Resolve")
	}
	p.Resolve(context.Background(), &fakeResolver{hosts: map[string][]netip.Addr{"proxy.corp": {netip.MustParseAddr("10.9.9.9")}}})
	if p.Forbidden(ap("10.9.9.9:8080")) == "" {
		t.Error("resolved parent not forbidden")
	}
	var nilParent *Parent
	if nilParent.Forbidden(ap("10.9.9.9:8080")) != "" {
		t.Error("nil parent forbids")
	}
}

// TestParentRedacted: neither a password nor a user name alone appears
// in Parent.String or a ParentError.
func TestParentRedacted(t *testing.T) {
	for _, raw := range []string{"http://secretuser@proxy:3128", "http://secretuser:secretpw@proxy:3128"} {
		u, _ := url.Parse(raw)
		p := NewParent(u, u, "")
		if s := p.String(); strings.Contains(s, "secret") || !strings.Contains(s, "http://***@proxy:3128") {
			t.Errorf("%s: String %q", raw, s)
		}
		if s := redact(u); s != "http://***@proxy:3128" {
			t.Errorf("redact %q", s)
		}
	}
}

// TestParentProxyCanonicalHost: plain HTTP through a parent carries the
// host spelling srt judged, in the absolute URI and in Host.
func TestParentProxyCanonicalHost(t *testing.T) {
	pe := startParentEnv(t, false, parentUser, "")
	port := portOf(t, pe.plain.URL)
	rs := rawRequest(t, pe.httpAddr, "GET http://Allowed.TEST:"+port+"/c HTTP/1.1\r\nHost: Allowed.TEST:"+port+"\r\n\r\n", 1)
	if len(rs) != 1 || rs[0].StatusCode != 200 {
		t.Fatalf("GET: %v", rs)
	}
	if b := body(rs[0]); b != "via parent allowed.test:"+port+" /c" {
		t.Fatalf("origin saw %q", b)
	}
	if got := pe.parent.seen(); len(got) != 1 || got[0] != "GET http://allowed.test:"+port+"/c" {
		t.Fatalf("parent saw %q", got)
	}
}

// TestParentProxyLocalhost: a name under .localhost is never sent to the
// parent (there it would be the parent's loopback); it is dialled
// directly, under the direct path's guard.
func TestParentProxyLocalhost(t *testing.T) {
	pol, err := netrule.Compile(netrule.Rules{Allowed: []string{"app.localhost", "localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	pe := startParentEnv(t, false, parentUser, "", func(c *Config) {
		c.Policy = pol
		c.Resolver = &fakeResolver{hosts: map[string][]netip.Addr{"app.localhost": {loop4}, "localhost": {loop4}}}
	})
	port := portOf(t, pe.plain.URL)
	for _, host := range []string{"app.localhost", "localhost"} {
		code, b, err := pe.get(t, "http://"+host+":"+port+"/")
		if err != nil || code != 403 || !strings.HasPrefix(b, "direct from 127.0.0.1") {
			t.Fatalf("%s: %d %q %v", host, code, b, err)
		}
		if rep := socksConnect(t, pe.socksAddr, host, port); rep != RepSucceeded { // the tunnel route
			t.Fatalf("SOCKS5 %s: rep %d", host, rep)
		}
	}
	if got := pe.parent.seen(); len(got) != 0 {
		t.Fatalf("parent saw %q", got)
	}
}
