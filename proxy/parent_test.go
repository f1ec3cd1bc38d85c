package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	xproxy "golang.org/x/net/proxy"
)

// parentSrc is the address the fixture parent dials from. The upstreams
// answer "via parent" only to it, so a response proves the route.
const parentSrc = "127.0.0.2"

// fwdProxy is a forward proxy fixture (CONNECT and absolute-URI plain
// HTTP) that requires Basic user:pw, maps every test name to 127.0.0.1
// and dials from parentSrc. It records the targets it was asked for.
type fwdProxy struct {
	srv     *httptest.Server
	mu      sync.Mutex
	targets []string // "CONNECT host:port" or "GET http://..."
}

func (f *fwdProxy) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.targets...)
}

func (f *fwdProxy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	_, port, _ := net.SplitHostPort(addr)
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(parentSrc)}, Timeout: 5 * time.Second}
	return d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", port))
}

func startParent(t *testing.T, useTLS bool) *fwdProxy {
	t.Helper()
	f := &fwdProxy{}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("user:p@ss"))
	fwd := forwardHandler(t, f.dial)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := r.Method + " " + r.RequestURI
		f.mu.Lock()
		f.targets = append(f.targets, target)
		f.mu.Unlock()
		if r.Header.Get("Proxy-Authorization") != want {
			w.Header().Set("Proxy-Authenticate", `Basic realm="fixture"`)
			http.Error(w, "auth please", http.StatusProxyAuthRequired)
			return
		}
		if r.Method == "TRACE" && r.Header.Get("Max-Forwards") == "0" {
			// RFC 9110 §9.3.8: the last recipient echoes the request.
			w.Header().Set("Content-Type", "message/http")
			r.Write(w)
			return
		}
		// The parent's credentials stop here.
		out := r.Clone(r.Context())
		out.Header.Del("Proxy-Authorization")
		fwd.ServeHTTP(w, out)
	})
	if useTLS {
		f.srv = httptest.NewTLSServer(h)
	} else {
		f.srv = httptest.NewServer(h)
	}
	t.Cleanup(f.srv.Close)
	return f
}

// url is the fixture's URL with userinfo (nil: none).
func (f *fwdProxy) url(user *url.Userinfo) *url.URL {
	u, _ := url.Parse(f.srv.URL)
	u.User = user
	return u
}

var parentUser = url.UserPassword("user", "p@ss")

// routeHandler answers "via parent" to connections from parentSrc and
// 403 "direct" to any other.
func routeHandler(w http.ResponseWriter, r *http.Request) {
	if h, _, _ := net.SplitHostPort(r.RemoteAddr); h != parentSrc {
		http.Error(w, "direct from "+h, http.StatusForbidden)
		return
	}
	if r.Header.Get("Proxy-Authorization") != "" {
		http.Error(w, "proxy header leaked", 500)
		return
	}
	fmt.Fprintf(w, "via parent %s %s", r.Host, r.URL.Path)
}

type parentEnv struct {
	*env
	parent *fwdProxy
	plain  *httptest.Server
	tls    *httptest.Server
	client *http.Client
}

func startParentEnv(t *testing.T, parentTLS bool, user *url.Userinfo, noProxy string, mods ...func(*Config)) *parentEnv {
	t.Helper()
	pe := &parentEnv{parent: startParent(t, parentTLS)}
	pe.plain = httptest.NewServer(http.HandlerFunc(routeHandler))
	t.Cleanup(pe.plain.Close)
	pe.tls = httptest.NewTLSServer(http.HandlerFunc(routeHandler))
	t.Cleanup(pe.tls.Close)
	pu := pe.parent.url(user)
	rules := baseRules
	rules.Allowed = append([]string{"other.test"}, baseRules.Allowed...)
	pe.env = startProxyWith(t, rules, func(c *Config) {
		c.Parent = NewParent(pu, pu, noProxy)
		if parentTLS {
			pool := x509.NewCertPool()
			pool.AddCert(pe.parent.srv.Certificate())
			c.Parent.TLS = &tls.Config{RootCAs: pool}
		}
		for _, m := range mods {
			m(c)
		}
	})
	pool := x509.NewCertPool()
	pool.AddCert(pe.tls.Certificate())
	proxyURL, _ := url.Parse("http://" + pe.httpAddr)
	pe.client = &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyURL(proxyURL), TLSClientConfig: &tls.Config{RootCAs: pool},
	}, Timeout: 10 * time.Second}
	t.Cleanup(pe.client.CloseIdleConnections)
	return pe
}

func (pe *parentEnv) get(t *testing.T, u string) (int, string, error) {
	t.Helper()
	resp, err := pe.client.Get(u)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// TestParentProxyRoutes: plain HTTP (absolute URI), HTTPS (CONNECT) and
// SOCKS5 all reach the upstream through the parent, with credentials,
// over TCP and over TLS to the parent, and srt resolves each destination
// first (to judge its addresses).
func TestParentProxyRoutes(t *testing.T) {
	for _, parentTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", parentTLS), func(t *testing.T) {
			pe := startParentEnv(t, parentTLS, parentUser, "")
			plainPort, tlsPort := portOf(t, pe.plain.URL), portOf(t, pe.tls.URL)
			code, b, err := pe.get(t, "http://allowed.test:"+plainPort+"/plain")
			if err != nil || code != 200 || b != "via parent allowed.test:"+plainPort+" /plain" {
				t.Fatalf("plain: %d %q %v", code, b, err)
			}
			code, b, err = pe.get(t, "https://example.com:"+tlsPort+"/tls")
			if err != nil || code != 200 || b != "via parent example.com:"+tlsPort+" /tls" {
				t.Fatalf("https: %d %q %v", code, b, err)
			}
			d, err := xproxy.SOCKS5("tcp", pe.socksAddr, nil, xproxy.Direct)
			if err != nil {
				t.Fatal(err)
			}
			sc := &http.Client{Transport: &http.Transport{DialContext: d.(xproxy.ContextDialer).DialContext}, Timeout: 10 * time.Second}
			defer sc.CloseIdleConnections()
			resp, err := sc.Get("http://other.test:" + plainPort + "/socks")
			if err != nil {
				t.Fatal(err)
			}
			if got := body(resp); got != "via parent other.test:"+plainPort+" /socks" {
				t.Fatalf("socks: %q", got)
			}
			resp.Body.Close()
			want := []string{"GET http://allowed.test:" + plainPort + "/plain", "CONNECT example.com:" + tlsPort, "CONNECT other.test:" + plainPort}
			if got := pe.parent.seen(); strings.Join(got, "|") != strings.Join(want, "|") {
				t.Fatalf("parent saw %q, want %q", got, want)
			}
			for _, h := range []string{"allowed.test", "example.com", "other.test"} {
				if !pe.res.looked(h) { // checkViaParent judges its addresses first
					t.Errorf("srt did not resolve %s before using the parent", h)
				}
			}
		})
	}
}

// TestParentProxyRefusals: a parent's 407 is a 502 with
// X-Proxy-Error: parent-proxy-refused (never passed on as a 407), a SOCKS5
// general failure, and no violation; a denied host never reaches the
// parent.
func TestParentProxyRefusals(t *testing.T) {
	pe := startParentEnv(t, false, nil, "")
	plainPort := portOf(t, pe.plain.URL)
	for _, raw := range []string{
		"CONNECT allowed.test:" + plainPort + " HTTP/1.1\r\nHost: allowed.test:" + plainPort + "\r\n\r\n",
		"GET http://allowed.test:" + plainPort + "/x HTTP/1.1\r\nHost: allowed.test:" + plainPort + "\r\n\r\n",
	} {
		rs := rawRequest(t, pe.httpAddr, raw, 1)
		if len(rs) != 1 {
			t.Fatalf("%q: no answer", raw)
		}
		r := rs[0]
		b := body(r)
		if r.StatusCode != 502 || r.Header.Get("X-Proxy-Error") != "parent-proxy-refused" || !strings.Contains(b, "407 Proxy Authentication Required") || r.Header.Get("Proxy-Authenticate") != "" {
			t.Fatalf("%q: %d %v %q", raw, r.StatusCode, r.Header, b)
		}
	}
	if rep := socksConnect(t, pe.socksAddr, "allowed.test", plainPort); rep != RepGeneralFailure {
		t.Fatalf("socks rep %d, want %d", rep, RepGeneralFailure)
	}
	if n := len(pe.parent.seen()); n != 3 {
		t.Fatalf("parent saw %d requests, want 3", n)
	}
	// Denied by srt's own rules: 403 as without a parent, a violation,
	// and nothing sent to the parent.
	rs := rawRequest(t, pe.httpAddr, "CONNECT denied.test:443 HTTP/1.1\r\nHost: denied.test:443\r\n\r\n", 1)
	if len(rs) != 1 || rs[0].StatusCode != 403 || rs[0].Header.Get("X-Proxy-Error") != errHdrPolicy {
		t.Fatalf("denied CONNECT: %v", rs)
	}
	rs = rawRequest(t, pe.httpAddr, "GET http://nope.test/ HTTP/1.1\r\nHost: nope.test\r\n\r\n", 1)
	if len(rs) != 1 || rs[0].StatusCode != 403 {
		t.Fatalf("denied GET: %v", rs)
	}
	if rep := socksConnect(t, pe.socksAddr, "denied.test", "443"); rep != RepNotAllowed {
		t.Fatalf("denied socks rep %d", rep)
	}
	if vs := pe.vio.wait(t, 3); len(vs) != 3 {
		t.Fatalf("violations %v, want the 3 denials only", vs)
	}
	if n := len(pe.parent.seen()); n != 3 {
		t.Fatalf("parent saw %v after denials", pe.parent.seen())
	}
}

// TestParentProxyNoProxy: a noProxy destination is dialled directly (the
// upstream sees srt, not the parent), others still go through.
func TestParentProxyNoProxy(t *testing.T) {
	pe := startParentEnv(t, false, parentUser, "example.com,allowed.test")
	plainPort, tlsPort := portOf(t, pe.plain.URL), portOf(t, pe.tls.URL)
	code, b, err := pe.get(t, "http://allowed.test:"+plainPort+"/")
	if err != nil || code != 403 || !strings.HasPrefix(b, "direct from 127.0.0.1") {
		t.Fatalf("noProxy plain: %d %q %v", code, b, err)
	}
	code, b, err = pe.get(t, "https://example.com:"+tlsPort+"/")
	if err != nil || code != 403 || !strings.HasPrefix(b, "direct from 127.0.0.1") {
		t.Fatalf("noProxy https: %d %q %v", code, b, err)
	}
	code, b, err = pe.get(t, "http://other.test:"+plainPort+"/")
	if err != nil || code != 200 || !strings.HasPrefix(b, "via parent") {
		t.Fatalf("other: %d %q %v", code, b, err)
	}
	if got := pe.parent.seen(); len(got) != 1 {
		t.Fatalf("parent saw %q, want only other.test", got)
	}
}

// TestParentProxyForbidden: Config.Forbidden applies to the parent's own
// address (the resolved-address guard does not).
func TestParentProxyForbidden(t *testing.T) {
	pe := startParentEnv(t, false, parentUser, "", func(c *Config) {
		c.Forbidden = func(netip.AddrPort) string { return "srtd listens there" }
	})
	code, b, err := pe.get(t, "http://allowed.test:"+portOf(t, pe.plain.URL)+"/")
	if err != nil || code == 200 || len(pe.parent.seen()) != 0 {
		t.Fatalf("forbidden parent: %d %q %v %v", code, b, err, pe.parent.seen())
	}
}
