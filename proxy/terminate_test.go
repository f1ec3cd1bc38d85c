package proxy

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/srt-go/srt/mitm"
	"github.com/srt-go/srt/netrule"
)

// termEnv is a proxy terminating TLS in front of a real TLS upstream
// (httptest's, whose certificate names example.com and 127.0.0.1).
type termEnv struct {
	*env
	ca     *mitm.CA
	caPool *x509.CertPool // trusts the proxy's CA only
	up     *httptest.Server
	upPool *x509.CertPool // trusts the upstream only
	target string         // "example.com:<upstream port>"
	hits   *int64Counter
}

// upstreamHandler answers with what it saw, and a trailer. /stream sends
// one chunk, then waits for the client to say it got it (via release).
func upstreamHandler(hits *int64Counter, release chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.inc()
		if hasToken(r.Header, "Connection", "upgrade") {
			c, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer c.Close()
			brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + r.Header.Get("Upgrade") + "\r\n\r\n")
			brw.Flush()
			io.Copy(c, brw)
			return
		}
		if r.URL.Path == "/stream" {
			io.WriteString(w, "first\n")
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-time.After(5 * time.Second):
			}
			io.WriteString(w, "second\n")
			return
		}
		w.Header().Set("Trailer", "X-Sum")
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "proto=%d host=%s path=%s body=%s proxyauth=%q", r.ProtoMajor, r.Host, r.URL.Path, b, r.Header.Get("Proxy-Authorization"))
		w.Header().Set("X-Sum", "42")
	})
}

func startTerm(t testing.TB, rules netrule.Rules, upH2 bool, mod func(*Terminate), cfgMods ...func(*Config)) *termEnv {
	t.Helper()
	ca, err := mitm.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	te := &termEnv{ca: ca, caPool: x509.NewCertPool(), upPool: x509.NewCertPool(), hits: &int64Counter{}}
	te.caPool.AddCert(ca.Certificate())
	te.up = httptest.NewUnstartedServer(upstreamHandler(te.hits, make(chan struct{})))
	te.up.EnableHTTP2 = upH2
	te.up.StartTLS()
	t.Cleanup(te.up.Close)
	te.upPool.AddCert(te.up.Certificate())
	_, port, _ := net.SplitHostPort(te.up.Listener.Addr().String())
	te.target = "example.com:" + port
	term := &Terminate{CA: ca, RootCAs: te.upPool}
	if mod != nil {
		mod(term)
	}
	te.env = startProxyWith(t, rules, func(c *Config) {
		c.Terminate = term
		for _, m := range cfgMods {
			m(c)
		}
	})
	return te
}

// client is a Go client using the proxy, trusting roots, speaking only
// HTTP/2 when h2 and only HTTP/1.1 otherwise.
func (te *termEnv) client(roots *x509.CertPool, h2 bool) *http.Client {
	tr := &http.Transport{
		Proxy:           http.ProxyURL(&url.URL{Scheme: "http", Host: te.httpAddr}),
		TLSClientConfig: &tls.Config{RootCAs: roots},
		Protocols:       new(http.Protocols),
	}
	if h2 {
		tr.Protocols.SetHTTP2(true)
	} else {
		tr.Protocols.SetHTTP1(true)
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func fetchAll(t *testing.T, c *http.Client, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func TestTerminateHTTP1AndHTTP2(t *testing.T) {
	for _, upH2 := range []bool{true, false} {
		te := startTerm(t, baseRules, upH2, nil)
		for _, h2 := range []bool{false, true} {
			// The upstream leg keeps the client's protocol, when the
			// upstream speaks it (upstreams).
			wantUp := map[bool]int{true: 2, false: 1}[upH2 && h2]
			c := te.client(te.caPool, h2)
			req, _ := http.NewRequest("POST", "https://"+te.target+"/p", strings.NewReader("payload"))
			req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
			resp, body := fetchAll(t, c, req)
			want := fmt.Sprintf("proto=%d host=%s path=/p body=payload proxyauth=\"\"", wantUp, te.target)
			if resp.StatusCode != 200 || body != want {
				t.Errorf("client h2=%v upstream h2=%v: %d %q, want %q", h2, upH2, resp.StatusCode, body, want)
			}
			if got := map[bool]int{true: 2, false: 1}[h2]; resp.ProtoMajor != got {
				t.Errorf("client spoke HTTP/%d, want %d", resp.ProtoMajor, got)
			}
			if resp.Trailer.Get("X-Sum") != "42" {
				t.Errorf("h2=%v: trailer %v", h2, resp.Trailer)
			}
			leaf := resp.TLS.PeerCertificates[0]
			if leaf.Issuer.CommonName != te.ca.Certificate().Subject.CommonName || len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != "example.com" {
				t.Errorf("leaf issued by %q for %v", leaf.Issuer.CommonName, leaf.DNSNames)
			}
			c.CloseIdleConnections()
		}
	}
}

// TestTerminateStreams: a response of unknown length reaches the client
// as it comes, not when it ends.
func TestTerminateStreams(t *testing.T) {
	te := startTerm(t, baseRules, true, nil)
	release := make(chan struct{})
	te.up.Config.Handler = upstreamHandler(te.hits, release)
	for _, h2 := range []bool{false, true} {
		resp, err := te.client(te.caPool, h2).Get("https://" + te.target + "/stream")
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		t0 := time.Now()
		if l, err := br.ReadString('\n'); l != "first\n" || err != nil || time.Since(t0) > 3*time.Second {
			t.Fatalf("h2=%v: first chunk %q %v after %v", h2, l, err, time.Since(t0))
		}
		release <- struct{}{}
		if l, _ := br.ReadString('\n'); l != "second\n" {
			t.Errorf("second chunk %q", l)
		}
		resp.Body.Close()
	}
}

// pausingBody returns its reads, one per Read, then blocks until
// resume is closed, then returns io.EOF.
type pausingBody struct {
	reads  [][]byte
	resume chan struct{}
}

func (b *pausingBody) Read(p []byte) (int, error) {
	if len(b.reads) == 0 {
		<-b.resume
		return 0, io.EOF
	}
	n := copy(p, b.reads[0])
	b.reads = b.reads[1:]
	return n, nil
}

// flushRecorder is an http.ResponseWriter that sends on flushed the
// length of the body written at each Flush.
type flushRecorder struct {
	*httptest.ResponseRecorder
	flushed chan int
}

func (f *flushRecorder) Flush() { f.flushed <- f.Body.Len() }

// TestStreamBodyFlushesBeforeWaiting: what an upstream of unknown length
// has sent is flushed before the proxy waits for more, also when it
// filled the proxy's buffer (a full read is no sign more is coming), and
// is not flushed read by read while more is ready.
func TestStreamBodyFlushesBeforeWaiting(t *testing.T) {
	for _, reads := range [][]int{{10}, {copyBufSize}, {copyBufSize, copyBufSize, 7}} {
		body := &pausingBody{resume: make(chan struct{})}
		want := 0
		for _, n := range reads {
			body.reads = append(body.reads, make([]byte, n))
			want += n
		}
		w := &flushRecorder{ResponseRecorder: httptest.NewRecorder(), flushed: make(chan int, 1)}
		done := make(chan error, 1)
		go func() { done <- streamBody(w, body) }()
		for got := -1; got != want; {
			select {
			case got = <-w.flushed:
			case <-time.After(5 * time.Second):
				t.Fatalf("reads %v: %d bytes flushed while the upstream waits, want %d", reads, got, want)
			}
		}
		close(body.resume)
		go func() {
			for range w.flushed { // any flush after the end
			}
		}()
		if err := <-done; err != nil {
			t.Errorf("reads %v: %v", reads, err)
		}
		close(w.flushed)
	}
}

// tlsTunnel opens a CONNECT tunnel to target and a TLS client on it
// with server name sni, not verifying (the test looks at the leaf).
func tlsTunnel(t *testing.T, proxyAddr, target, sni string, alpn ...string) (*tls.Conn, *bufio.Reader) {
	t.Helper()
	c, _ := connectVia(t, proxyAddr, target)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	tc := tls.Client(c, &tls.Config{ServerName: sni, InsecureSkipVerify: true, NextProtos: alpn})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.Close() })
	return tc, bufio.NewReader(tc)
}

func roundTrip(t *testing.T, tc *tls.Conn, br *bufio.Reader, raw string) *http.Response {
	t.Helper()
	if _, err := io.WriteString(tc, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(strings.NewReader(string(b)))
	return resp
}

// TestTerminateFronting: a server name, Host, absolute-form target or
// :authority that is not the CONNECT target is answered 421, reported,
// and never reaches the upstream; the leaf is always the target's.
func TestTerminateFronting(t *testing.T) {
	te := startTerm(t, baseRules, true, nil)
	_, port, _ := net.SplitHostPort(te.target)
	cases := []struct{ name, sni, raw string }{
		{"SNI", "other.test", "GET / HTTP/1.1\r\nHost: " + te.target + "\r\n\r\n"},
		{"SNI not a DNS name", "bad_name.test", "GET / HTTP/1.1\r\nHost: " + te.target + "\r\n\r\n"},
		{"Host", "example.com", "GET / HTTP/1.1\r\nHost: other.test\r\n\r\n"},
		{"Host port", "example.com", "GET / HTTP/1.1\r\nHost: example.com:1\r\n\r\n"},
		{"Host without port", "example.com", "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"}, // means :443
		{"absolute form", "example.com", "GET https://other.test:" + port + "/ HTTP/1.1\r\nHost: " + te.target + "\r\n\r\n"},
	}
	for i, tc := range cases {
		conn, br := tlsTunnel(t, te.httpAddr, te.target, tc.sni)
		if leaf := conn.ConnectionState().PeerCertificates[0]; leaf.DNSNames[0] != "example.com" {
			t.Errorf("%s: leaf for %v", tc.name, leaf.DNSNames)
		}
		resp := roundTrip(t, conn, br, tc.raw)
		if resp.StatusCode != http.StatusMisdirectedRequest || resp.Header.Get("X-Proxy-Error") != errHdrHostMatch {
			t.Errorf("%s: %s %v", tc.name, resp.Status, resp.Header)
		}
		vs := te.vio.wait(t, i+1)
		if v := vs[i]; v.Rule != RuleHostMatch || v.Target != te.target || v.Protocol != "connect" {
			t.Errorf("%s: violation %+v", tc.name, v)
		}
	}
	// HTTP/2 with an :authority that is not the target.
	req, _ := http.NewRequest("GET", "https://"+te.target+"/", nil)
	req.Host = "other.test"
	resp, _ := fetchAll(t, te.client(te.caPool, true), req)
	if resp.StatusCode != http.StatusMisdirectedRequest || resp.ProtoMajor != 2 || resp.Header.Get("X-Proxy-Error") != errHdrHostMatch {
		t.Errorf(":authority: %s HTTP/%d %v", resp.Status, resp.ProtoMajor, resp.Header)
	}
	if v := te.vio.wait(t, len(cases)+1)[len(cases)]; v.Rule != RuleHostMatch {
		t.Errorf(":authority: violation %+v", v)
	}
	if n := te.hits.get(); n != 0 {
		t.Errorf("the upstream saw %d requests", n)
	}
	// The good request on the same footing goes through.
	conn, br := tlsTunnel(t, te.httpAddr, te.target, "EXAMPLE.com")
	if resp := roundTrip(t, conn, br, "GET / HTTP/1.1\r\nHost: "+te.target+"\r\n\r\n"); resp.StatusCode != 200 {
		t.Errorf("matching request: %s", resp.Status)
	}
}

// TestTerminateAllowHostMismatch: without the host match, the leaf is the
// server name's and the client's Host is passed on.
func TestTerminateAllowHostMismatch(t *testing.T) {
	te := startTerm(t, baseRules, true, func(tm *Terminate) { tm.AllowHostMismatch = true })
	conn, br := tlsTunnel(t, te.httpAddr, te.target, "other.test")
	if leaf := conn.ConnectionState().PeerCertificates[0]; leaf.DNSNames[0] != "other.test" {
		t.Errorf("leaf for %v", leaf.DNSNames)
	}
	resp := roundTrip(t, conn, br, "GET /x HTTP/1.1\r\nHost: other.test\r\n\r\n")
	if b := body(resp); resp.StatusCode != 200 || !strings.Contains(b, "host=other.test path=/x") {
		t.Errorf("%s %q", resp.Status, b)
	}
}

// TestTerminateOpaque: a CONNECT whose first bytes are not TLS, and an
// excluded host, are tunnelled as without termination.
func TestTerminateOpaque(t *testing.T) {
	echo := echoServer(t)
	te := startTerm(t, baseRules, true, func(tm *Terminate) {
		tm.MaxTunnels = 1
		tm.Exclude = func(host string, port int) bool { return host == "example.com" }
	})
	for range 3 { // a non-TLS tunnel frees its slot, so MaxTunnels 1 passes three
		c, br := connectVia(t, te.httpAddr, allowedTarget(echo))
		io.WriteString(c, "SSH-2.0-OpenSSH_9.6\r\n")
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if l, err := br.ReadString('\n'); l != "SSH-2.0-OpenSSH_9.6\r\n" {
			t.Fatalf("echo %q %v", l, err)
		}
		c.Close()
	}
	// Excluded: the client sees the upstream's own certificate.
	resp, body := fetchAll(t, te.client(te.upPool, false), mustReq(t, "https://"+te.target+"/e"))
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "proto=1 ") || !resp.TLS.PeerCertificates[0].Equal(te.up.Certificate()) {
		t.Errorf("excluded: %d %q", resp.StatusCode, body)
	}
	if _, err := te.client(te.caPool, false).Get("https://" + te.target + "/"); err == nil {
		t.Error("an excluded host was terminated")
	}
	// SOCKS5 is never terminated.
	_, port, _ := net.SplitHostPort(echo)
	if rep := socksConnect(t, te.socksAddr, "allowed.test", port); rep != 0 {
		t.Errorf("SOCKS5 REP=%d", rep)
	}
}

func mustReq(t *testing.T, u string) *http.Request {
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestTerminateUntrustedUpstream: an upstream whose certificate the
// proxy does not trust gets 502 with a body saying so, not a violation.
func TestTerminateUntrustedUpstream(t *testing.T) {
	te := startTerm(t, baseRules, true, func(tm *Terminate) { tm.RootCAs = x509.NewCertPool() })
	resp, body := fetchAll(t, te.client(te.caPool, false), mustReq(t, "https://"+te.target+"/"))
	if resp.StatusCode != 502 || resp.Header.Get("X-Proxy-Error") != errHdrUpstreamCA ||
		!strings.Contains(body, "certificate of "+te.target+" is not trusted") {
		t.Errorf("%s %v %q", resp.Status, resp.Header, body)
	}
	if te.hits.get() != 0 {
		t.Error("the request reached the untrusted upstream")
	}
	time.Sleep(50 * time.Millisecond)
	te.vio.mu.Lock()
	defer te.vio.mu.Unlock()
	if len(te.vio.v) != 0 {
		t.Errorf("violations %v", te.vio.v)
	}
}

// TestTerminateAddressGuard: an allowed name resolving to loopback is
// refused inside the tunnel (403, reported), TLS or not.
func TestTerminateAddressGuard(t *testing.T) {
	te := startTerm(t, netrule.Rules{Allowed: []string{"example.com"}}, true, nil)
	const reason = "resolved to a loopback address"
	resp, body := fetchAll(t, te.client(te.caPool, true), mustReq(t, "https://"+te.target+"/"))
	if resp.StatusCode != 403 || resp.Header.Get("X-Proxy-Error") != errHdrAddress || body != "Connection to example.com blocked: "+reason+"\n" {
		t.Errorf("%s %v %q", resp.Status, resp.Header, body)
	}
	if v := te.vio.wait(t, 1)[0]; v.Reason != reason || v.Target != te.target {
		t.Errorf("violation %+v", v)
	}
	c, br := connectVia(t, te.httpAddr, te.target)
	io.WriteString(c, "SSH-2.0-x\r\n")
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); err == nil {
		t.Error("a refused non-TLS tunnel carried data")
	}
	if v := te.vio.wait(t, 2)[1]; v.Reason != reason {
		t.Errorf("violation %+v", v)
	}
	if te.hits.get() != 0 {
		t.Error("the upstream was reached")
	}
}

// TestTerminateLimits: past MaxTunnels a CONNECT gets 503 and a
// violation; a tunnel that sends nothing, or no whole handshake, within
// HandshakeTimeout is closed and frees its slot.
func TestTerminateLimits(t *testing.T) {
	te := startTerm(t, baseRules, true, func(tm *Terminate) {
		tm.MaxTunnels = 1
		tm.HandshakeTimeout = 300 * time.Millisecond
	})
	hold, holdBr := connectVia(t, te.httpAddr, te.target)
	defer hold.Close()
	r := rawRequest(t, te.httpAddr, "CONNECT "+te.target+" HTTP/1.1\r\n\r\n", 1)
	if len(r) != 1 || r[0].StatusCode != 503 || r[0].Header.Get("X-Proxy-Error") != errHdrTunnels {
		t.Fatalf("over the limit: %v", r)
	}
	if v := te.vio.wait(t, 1)[0]; v.Rule != RuleTunnelLimit || v.Target != te.target {
		t.Errorf("violation %+v", v)
	}
	// The held tunnel sends nothing: closed at the deadline.
	t0 := time.Now()
	hold.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := holdBr.ReadByte(); err != io.EOF || time.Since(t0) > 3*time.Second {
		t.Errorf("silent tunnel: %v after %v", err, time.Since(t0))
	}
	// Half a handshake record, then nothing: closed too.
	c, br := connectVia(t, te.httpAddr, te.target) // the slot is free again
	defer c.Close()
	c.Write([]byte{0x16, 0x03, 0x01})
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); err == nil || time.Since(t0) > 4*time.Second {
		t.Errorf("stalled handshake: %v", err)
	}
}

// TestTerminateUpgrade: a WebSocket-style Upgrade is relayed both ways.
func TestTerminateUpgrade(t *testing.T) {
	te := startTerm(t, baseRules, false, nil)
	conn, br := tlsTunnel(t, te.httpAddr, te.target, "example.com")
	io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: "+te.target+"\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 101 || resp.Header.Get("Upgrade") != "websocket" {
		t.Fatalf("%v %v", resp, err)
	}
	io.WriteString(conn, "ping\n")
	if l, err := br.ReadString('\n'); l != "ping\n" {
		t.Errorf("relayed %q %v", l, err)
	}
}
