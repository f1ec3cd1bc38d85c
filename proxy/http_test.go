package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/srt-go/srt/netrule"
)

var baseRules = netrule.Rules{
	Allowed: []string{"allowed.test", "example.com", "denied.test", "127.0.0.1", "nx.test"},
	Denied:  []string{"denied.test"},
	DeniedReasons: map[string]string{
		"denied.test": "denied.test is blocked; use allowed.test instead",
	},
}

const deniedReason = "denied.test is blocked; use allowed.test instead"

func TestHTTPRawAnswers(t *testing.T) {
	e := startProxy(t, baseRules)
	srv, _ := origin(t)
	port := portOf(t, srv.URL)
	closed := listen(t)
	closedPort := portOf(t, closed.Addr().String())
	closed.Close()

	tests := []struct {
		name       string
		raw        string
		status     string // full status line after "HTTP/1.1 "
		xerr       string
		body       string
		violations int
	}{
		{
			name:   "plain-allowed",
			raw:    "GET http://allowed.test:" + port + "/x HTTP/1.1\r\nHost: allowed.test:" + port + "\r\n\r\n",
			status: "200 OK", body: "hello from origin allowed.test:" + port + " /x",
		},
		{
			name:   "plain-denied-with-reason",
			raw:    "GET http://denied.test:" + port + "/ HTTP/1.1\r\nHost: denied.test:" + port + "\r\n\r\n",
			status: "403 Forbidden", xerr: errHdrPolicy,
			body:       "Connection blocked by network allowlist: " + deniedReason + "\n",
			violations: 1,
		},
		{
			name:   "plain-not-listed",
			raw:    "GET http://other.test:" + port + "/ HTTP/1.1\r\n\r\n",
			status: "403 Forbidden", xerr: errHdrPolicy,
			body:       "Connection blocked by network allowlist: host is not on the allow list\n",
			violations: 1,
		},
		{
			name:   "plain-host-mismatch",
			raw:    "GET http://allowed.test:" + port + "/ HTTP/1.1\r\nHost: evil.test\r\n\r\n",
			status: "403 Forbidden", xerr: errHdrPolicy,
			body:       `Connection blocked by network allowlist: Host header "evil.test" does not match the request target "allowed.test"` + "\n",
			violations: 1,
		},
		{
			name:   "plain-two-hosts",
			raw:    "GET http://allowed.test:" + port + "/ HTTP/1.1\r\nHost: allowed.test\r\nHost: evil.test\r\n\r\n",
			status: "400 Bad Request", body: "more than one Host header\n",
		},
		{
			name:   "plain-metadata",
			raw:    "GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\n\r\n",
			status: "403 Forbidden", xerr: errHdrPolicy,
			body:       "Connection blocked by network allowlist: cloud metadata endpoint\n",
			violations: 1,
		},
		{
			name:   "connect-denied",
			raw:    "CONNECT denied.test:443 HTTP/1.1\r\nHost: denied.test:443\r\n\r\n",
			status: "403 " + deniedReason, xerr: errHdrPolicy, body: deniedReason + "\n",
			violations: 1,
		},
		{
			name:   "connect-not-listed",
			raw:    "CONNECT other.test:443 HTTP/1.1\r\n\r\n",
			status: "403 host is not on the allow list", xerr: errHdrPolicy,
			body: "host is not on the allow list\n", violations: 1,
		},
		{
			name:   "connect-ip-spelling-metadata",
			raw:    "CONNECT 2852039166:80 HTTP/1.1\r\n\r\n",
			status: "403 cloud metadata endpoint", xerr: errHdrPolicy,
			body: "cloud metadata endpoint\n", violations: 1,
		},
		{
			name:   "connect-upstream-refused",
			raw:    "CONNECT allowed.test:" + closedPort + " HTTP/1.1\r\n\r\n",
			status: "502 Bad Gateway",
		},
		{
			name:   "connect-nxdomain",
			raw:    "CONNECT nx.test:443 HTTP/1.1\r\n\r\n",
			status: "502 Bad Gateway",
		},
		{name: "connect-no-port", raw: "CONNECT allowed.test HTTP/1.1\r\n\r\n", status: "400 Bad Request"},
		{name: "connect-port-zero", raw: "CONNECT allowed.test:0 HTTP/1.1\r\n\r\n", status: "400 Bad Request"},
		{name: "origin-form", raw: "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n", status: "400 Bad Request"},
		{name: "https-absolute", raw: "GET https://allowed.test/ HTTP/1.1\r\n\r\n", status: "400 Bad Request"},
		{name: "garbage", raw: "\x16\x03\x01 hello\r\n\r\n", status: "400 Bad Request"},
		{name: "obs-fold", raw: "GET http://allowed.test/ HTTP/1.1\r\nX: a\r\n b\r\n\r\n", status: "400 Bad Request"},
	}
	want := 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resps := rawRequest(t, e.httpAddr, tt.raw, 1)
			if len(resps) != 1 {
				t.Fatalf("no response")
			}
			r := resps[0]
			if r.Status != tt.status {
				t.Errorf("status %q, want %q", r.Status, tt.status)
			}
			if got := r.Header.Get("X-Proxy-Error"); got != tt.xerr {
				t.Errorf("X-Proxy-Error %q, want %q", got, tt.xerr)
			}
			if b := body(r); tt.body != "" && b != tt.body {
				t.Errorf("body %q, want %q", b, tt.body)
			}
			want += tt.violations
			e.vio.wait(t, want)
		})
	}
	vs := e.vio.wait(t, want)
	if v := vs[0]; v.Target != "denied.test:"+port || v.Reason != deniedReason || v.Protocol != "http" ||
		v.Action != "network-outbound" || v.Rule != "denied.test" ||
		v.Raw != "deny network-outbound denied.test:"+port+" ("+deniedReason+")" {
		t.Errorf("violation %+v", v)
	}
}

// TestHTTPKeepAliveSmuggling: every request on a kept-alive connection is
// judged, so a second pipelined request to a denied host is refused
// (escape-classes.md item 8).
func TestHTTPKeepAliveSmuggling(t *testing.T) {
	e := startProxy(t, baseRules)
	srv, hits := origin(t)
	port := portOf(t, srv.URL)
	raw := "GET http://allowed.test:" + port + "/1 HTTP/1.1\r\nHost: allowed.test:" + port + "\r\n\r\n" +
		"GET http://allowed.test:" + port + "/2 HTTP/1.1\r\nHost: allowed.test:" + port + "\r\n\r\n" +
		"GET http://denied.test:" + port + "/3 HTTP/1.1\r\nHost: denied.test:" + port + "\r\n\r\n" +
		"GET http://allowed.test:" + port + "/4 HTTP/1.1\r\nHost: allowed.test:" + port + "\r\n\r\n"
	resps := rawRequest(t, e.httpAddr, raw, 4)
	if len(resps) != 3 {
		t.Fatalf("got %d responses, want 3 (the connection closes after the refusal)", len(resps))
	}
	for i, want := range []int{200, 200, 403} {
		if resps[i].StatusCode != want {
			t.Errorf("response %d: %s, want %d", i, resps[i].Status, want)
		}
	}
	if hits.get() != 2 {
		t.Errorf("origin saw %d requests, want 2", hits.get())
	}
}

// TestResolvedAddressGuard: an allowed name that resolves to loopback is
// refused unless the IP literal is allowed too (srt-notes §4.9).
func TestResolvedAddressGuard(t *testing.T) {
	srv, hits := origin(t)
	port := portOf(t, srv.URL)
	const reason = "resolved to a loopback address"

	e := startProxy(t, netrule.Rules{Allowed: []string{"allowed.test"}})
	resps := rawRequest(t, e.httpAddr, "CONNECT allowed.test:"+port+" HTTP/1.1\r\n\r\n", 1)
	if r := resps[0]; r.Status != "403 "+reason || r.Header.Get("X-Proxy-Error") != errHdrAddress ||
		body(r) != "Connection to allowed.test blocked: "+reason+"\n" {
		t.Errorf("CONNECT: %s %v", r.Status, r.Header)
	}
	resps = rawRequest(t, e.httpAddr, "GET http://allowed.test:"+port+"/ HTTP/1.1\r\n\r\n", 1)
	if r := resps[0]; r.Status != "403 Forbidden" || r.Header.Get("X-Proxy-Error") != errHdrAddress ||
		body(r) != "Connection to allowed.test blocked: "+reason+"\n" {
		t.Errorf("plain: %s %v", r.Status, r.Header)
	}
	if rep := socksConnect(t, e.socksAddr, "allowed.test", port); rep != RepNotAllowed {
		t.Errorf("SOCKS5 REP=%d, want 2", rep)
	}
	vs := e.vio.wait(t, 3)
	for _, v := range vs {
		if v.Reason != reason || v.Target != "allowed.test:"+port {
			t.Errorf("violation %+v", v)
		}
	}
	if hits.get() != 0 {
		t.Fatalf("origin reached %d times", hits.get())
	}

	// Allowing the literal (with its port) exempts the address.
	e.srv.SetPolicy(netrule.MustCompile(netrule.Rules{Allowed: []string{"allowed.test", "127.0.0.1:" + port}}))
	resps = rawRequest(t, e.httpAddr, "GET http://allowed.test:"+port+"/ HTTP/1.1\r\n\r\n", 1)
	if resps[0].StatusCode != 200 {
		t.Errorf("with literal allowed: %s", resps[0].Status)
	}

	// network.deniedResolvedAddresses wins over the allowed literal, on
	// every protocol.
	e.srv.SetPolicy(netrule.MustCompile(netrule.Rules{Allowed: []string{"allowed.test", "127.0.0.1:" + port}, DeniedAddresses: []string{"127.0.0.0/8"}}))
	resps = rawRequest(t, e.httpAddr, "GET http://allowed.test:"+port+"/ HTTP/1.1\r\n\r\n", 1)
	if r := resps[0]; r.StatusCode != 403 || body(r) != "Connection to allowed.test blocked: "+netrule.ReasonResolvedDenied+"\n" {
		t.Errorf("deniedResolvedAddresses, plain: %s %q", r.Status, body(r))
	}
	resps = rawRequest(t, e.httpAddr, "CONNECT allowed.test:"+port+" HTTP/1.1\r\n\r\n", 1)
	if resps[0].StatusCode != 403 {
		t.Errorf("deniedResolvedAddresses, CONNECT: %s", resps[0].Status)
	}
	if rep := socksConnect(t, e.socksAddr, "allowed.test", port); rep != RepNotAllowed {
		t.Errorf("deniedResolvedAddresses, SOCKS5 REP=%d, want 2", rep)
	}
	if hits.get() != 1 {
		t.Fatalf("origin reached %d times, want 1", hits.get())
	}
}

func TestSetPolicyLive(t *testing.T) {
	e := startProxy(t, netrule.Rules{})
	srv, _ := origin(t)
	req := "GET http://allowed.test:" + portOf(t, srv.URL) + "/ HTTP/1.1\r\n\r\n"
	if r := rawRequest(t, e.httpAddr, req, 1)[0]; r.StatusCode != 403 {
		t.Fatalf("empty allow list: %s", r.Status)
	}
	e.srv.SetPolicy(netrule.MustCompile(baseRules))
	if r := rawRequest(t, e.httpAddr, req, 1)[0]; r.StatusCode != 200 {
		t.Fatalf("after SetPolicy: %s", r.Status)
	}
}

func TestGoClientHTTPAndHTTPS(t *testing.T) {
	e := startProxy(t, baseRules)
	srv, _ := origin(t)
	tlsSrv := newTLSOrigin(t)
	pool := x509.NewCertPool()
	pool.AddCert(tlsSrv.Certificate())
	proxyURL, _ := url.Parse("http://" + e.httpAddr)
	client := &http.Client{Transport: &http.Transport{
		Proxy:           http.ProxyURL(proxyURL),
		TLSClientConfig: &tls.Config{RootCAs: pool},
	}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()

	get := func(u string) (*http.Response, error) {
		resp, err := client.Get(u)
		if err == nil {
			resp.Body = io.NopCloser(strings.NewReader(body(resp)))
		}
		return resp, err
	}
	// Plain HTTP, twice over one kept-alive proxy connection.
	for range 2 {
		resp, err := get("http://allowed.test:" + portOf(t, srv.URL) + "/go")
		if err != nil || resp.StatusCode != 200 || body(resp) != "hello from origin allowed.test:"+portOf(t, srv.URL)+" /go" {
			t.Fatalf("plain: %v %v", resp, err)
		}
	}
	resp, err := get("https://example.com:" + portOf(t, tlsSrv.URL) + "/tls")
	if err != nil || resp.StatusCode != 200 || body(resp) != "tls ok /tls" {
		t.Fatalf("https: %v %v", resp, err)
	}
	_, err = get("https://denied.test:" + portOf(t, tlsSrv.URL) + "/")
	if err == nil || !strings.Contains(err.Error(), deniedReason) {
		t.Fatalf("denied https: %v", err)
	}
}

// TestConnectHalfClose: the client finishes sending first; the upstream's
// answer, written after it sees EOF, still arrives.
func TestConnectHalfClose(t *testing.T) {
	e := startProxy(t, baseRules)
	up := listen(t)
	defer up.Close()
	go func() {
		c, err := up.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		n, _ := io.Copy(io.Discard, c)
		fmt.Fprintf(c, "got %d bytes", n)
	}()
	c, err := net.Dial("tcp", e.httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT allowed.test:%s HTTP/1.1\r\nHost: allowed.test\r\n\r\n", portOf(t, up.Addr().String()))
	br := bufio.NewReader(c)
	line, _ := br.ReadString('\n')
	blank, _ := br.ReadString('\n')
	if line != "HTTP/1.1 200 Connection Established\r\n" || blank != "\r\n" {
		t.Fatalf("CONNECT answer %q %q", line, blank)
	}
	if e.srv.ActiveConns() != 1 {
		t.Errorf("ActiveConns = %d, want 1", e.srv.ActiveConns())
	}
	c.Write(make([]byte, 100000))
	c.(*net.TCPConn).CloseWrite()
	rest, _ := io.ReadAll(br)
	if string(rest) != "got 100000 bytes" {
		t.Fatalf("after half-close: %q", rest)
	}
}

func newTLSOrigin(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "tls ok %s", r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestResolvedGuardHostAndMetadata: a name resolving to one of this host's
// interface addresses, or to a metadata address, is refused; allowing the
// metadata literal does not help, and a good address among bad ones is
// the one dialled.
func TestResolvedGuardHostAndMetadata(t *testing.T) {
	up := echoServer(t)
	_, port, _ := net.SplitHostPort(up)
	iface := netip.MustParseAddr("198.51.100.7")
	pol := netrule.MustCompile(netrule.Rules{Allowed: []string{"iface.test", "meta.test", "mixed.test", "169.254.169.254", "127.0.0.1:" + port}})
	res := &fakeResolver{hosts: map[string][]netip.Addr{
		"iface.test": {iface},
		"meta.test":  {netip.MustParseAddr("::ffff:169.254.169.254")},
		"mixed.test": {netip.MustParseAddr("10.0.0.1"), loop4},
	}}
	srv, _ := New(Config{Policy: pol, Resolver: res,
		LocalAddrs: func() ([]netip.Addr, error) { return []netip.Addr{iface}, nil }})
	ln := listen(t)
	go srv.HTTP().Serve(context.Background(), ln)
	defer srv.Close()
	for host, want := range map[string]string{
		"iface.test": "403 resolved to an address of this host",
		"meta.test":  "403 resolved to a cloud metadata address",
	} {
		r := rawRequest(t, ln.Addr().String(), "CONNECT "+host+":"+port+" HTTP/1.1\r\n\r\n", 1)
		if len(r) != 1 || r[0].Status != want {
			t.Errorf("%s: %v, want %q", host, r, want)
		}
	}
	c, _ := connectVia(t, ln.Addr().String(), "mixed.test:"+port) // 10.0.0.1 dropped, 127.0.0.1 dialled
	c.Close()
}
