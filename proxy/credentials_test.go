package proxy

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/srt-go/srt/credential"
	"github.com/srt-go/srt/mitm"
)

// The secret of these tests: its real value, only ever sent to
// example.com, and the sentinel the sandbox holds. They differ in length
// (Egress and Ingress change lengths) except in credSameLen.
const (
	credReal = "realTOKEN0123456789ab"
	credSent = "srtMASKEDsentinel0123456789xyz"
	// credSentSame is a sentinel as long as credReal.
	credSentSame = "sentTOKEN9876543210zz"
)

func credSet(sentinel string, allowPlaintext bool) *credential.Set {
	return credential.NewSet([]credential.Secret{{
		Name: "env TOKEN", Real: []byte(credReal), Sentinel: []byte(sentinel),
		Hosts: func(host string, port int) bool { return host == "example.com" },
	}}, credential.Options{AllowPlaintext: allowPlaintext})
}

// seenReq is what the upstream received.
type seenReq struct {
	Header http.Header
	Body   string
	CL     int64
	Host   string
}

// credUpstream records each request and answers by path: /gzip with a
// gzip body (when asked for gzip), /br with a br one, /ws with an
// upgrade, anything else with the real value in a header, the body (then
// the body it got) and a trailer.
type credUpstream struct {
	mu   sync.Mutex
	seen []seenReq
	ws   chan string // the line the client sent over /ws
}

func (u *credUpstream) last(t *testing.T) seenReq {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.seen) == 0 {
		t.Fatal("the upstream saw no request")
	}
	return u.seen[len(u.seen)-1]
}

func (u *credUpstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.seen)
}

func (u *credUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.seen = append(u.seen, seenReq{Header: r.Header.Clone(), Body: string(b), CL: r.ContentLength, Host: r.Host})
	u.mu.Unlock()
	switch r.URL.Path {
	case "/gzip":
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			io.WriteString(w, "gzip not asked for")
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(w)
		fmt.Fprintf(gz, "decoded %s", credReal)
		gz.Close()
	case "/br":
		w.Header().Set("Content-Encoding", "br")
		w.Write([]byte{0x1b, 0x03, 0x00, 0xf8})
	case "/gzip2":
		// Two Content-Encoding lines, the body gzipped twice.
		w.Header()["Content-Encoding"] = []string{"gzip", "gzip"}
		var inner bytes.Buffer
		gi := gzip.NewWriter(&inner)
		fmt.Fprintf(gi, "twice %s", credReal)
		gi.Close()
		gz := gzip.NewWriter(w)
		gz.Write(inner.Bytes())
		gz.Close()
	case "/range":
		// As a server that honours Range would answer.
		if r.Header.Get("Range") != "" {
			w.Header().Set("Content-Range", "bytes 0-3/40")
			w.WriteHeader(http.StatusPartialContent)
			io.WriteString(w, credReal[:4])
			return
		}
		io.WriteString(w, "whole "+credReal)
	case "/206":
		w.WriteHeader(http.StatusPartialContent)
		io.WriteString(w, credReal[:4])
	case "/ws":
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
			"X-Ext: " + r.Header.Get("Sec-WebSocket-Extensions") + "\r\nX-Leak: " + credReal + "\r\n\r\n")
		brw.WriteString("hello " + credReal + "\n")
		brw.Flush()
		line, _ := brw.ReadString('\n')
		u.ws <- line
		brw.WriteString("echo " + line)
		brw.Flush()
	default:
		w.Header().Set("Trailer", "X-Trail")
		w.Header().Set("X-Leak", "Bearer "+credReal)
		fmt.Fprintf(w, "leak=%s body=%s", credReal, b)
		w.Header().Set("X-Trail", credReal)
	}
}

// startCred is startTerm with up as the upstream's handler and set as
// the proxy's Credentials.
func startCred(t *testing.T, set *credential.Set, upH2 bool, mod func(*Terminate)) (*termEnv, *credUpstream) {
	t.Helper()
	ca, err := mitm.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	up := &credUpstream{ws: make(chan string, 1)}
	te := &termEnv{ca: ca, caPool: x509.NewCertPool(), upPool: x509.NewCertPool(), hits: &int64Counter{}}
	te.caPool.AddCert(ca.Certificate())
	te.up = httptest.NewUnstartedServer(up)
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
	te.env = startProxyWith(t, baseRules, func(c *Config) { c.Terminate = term; c.Credentials = set })
	return te, up
}

// noReal fails when the client was shown the real value anywhere.
func noReal(t *testing.T, what string, resp *http.Response, body string) {
	t.Helper()
	var hdr bytes.Buffer
	resp.Header.Write(&hdr)
	resp.Trailer.Write(&hdr)
	if strings.Contains(body, credReal) || strings.Contains(hdr.String(), credReal) {
		t.Errorf("%s: the client saw the real value: %q %q", what, hdr.String(), body)
	}
}

// splitReader hands out its parts one read at a time, pausing between.
type splitReader struct{ parts []string }

func (s *splitReader) Read(p []byte) (int, error) {
	if len(s.parts) == 0 {
		return 0, io.EOF
	}
	time.Sleep(20 * time.Millisecond)
	n := copy(p, s.parts[0])
	s.parts[0] = s.parts[0][n:]
	if s.parts[0] == "" {
		s.parts = s.parts[1:]
	}
	return n, nil
}

// TestCredentialsInjectTerminated: sentinels in headers (Bearer, Basic,
// custom) and bodies (JSON, form, chunked, split across reads) reach the
// secret's host as the real value, with the body's exact length, over
// HTTP/1.1 and HTTP/2; what the upstream echoes back comes back as the
// sentinel.
func TestCredentialsInjectTerminated(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("h2=%v", h2), func(t *testing.T) {
			te, up := startCred(t, credSet(credSent, false), h2, nil)
			c := te.client(te.caPool, h2)
			u := "https://" + te.target + "/echo"

			req, _ := http.NewRequest("GET", u, nil)
			req.Header.Set("Authorization", "Bearer "+credSent)
			req.Header.Set("X-Api-Key", credSent)
			resp, body := fetchAll(t, c, req)
			seen := up.last(t)
			if resp.StatusCode != 200 || seen.Header.Get("Authorization") != "Bearer "+credReal || seen.Header.Get("X-Api-Key") != credReal {
				t.Errorf("headers: %s, upstream saw %v", resp.Status, seen.Header)
			}
			noReal(t, "headers", resp, body)
			if resp.Header.Get("X-Leak") != "Bearer "+credSent || resp.Trailer.Get("X-Trail") != credSent || body != "leak="+credSent+" body=" {
				t.Errorf("echo: %v %v %q", resp.Header, resp.Trailer, body)
			}

			req, _ = http.NewRequest("GET", u, nil)
			req.SetBasicAuth("user", credSent)
			fetchAll(t, c, req)
			auth := up.last(t).Header.Get("Authorization")
			if dec, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(auth, "Basic ")); string(dec) != "user:"+credReal {
				t.Errorf("Basic: upstream saw %q (%q)", auth, dec)
			}

			bodies := []struct {
				name, ctype string
				body        func() io.Reader
				want        string
			}{
				{"JSON", "application/json", func() io.Reader { return strings.NewReader(`{"key":"` + credSent + `"}`) }, `{"key":"` + credReal + `"}`},
				{"form", "application/x-www-form-urlencoded", func() io.Reader { return strings.NewReader(url.Values{"token": {credSent}}.Encode()) }, "token=" + credReal},
				{"split", "text/plain", func() io.Reader {
					return &splitReader{parts: []string{"a=" + credSent[:7], credSent[7:20], credSent[20:] + "&b"}}
				}, "a=" + credReal + "&b"},
			}
			for _, b := range bodies {
				req, _ = http.NewRequest("POST", u, b.body())
				if b.name == "split" {
					req.ContentLength = -1 // chunked on HTTP/1.1
				}
				req.Header.Set("Content-Type", b.ctype)
				resp, body := fetchAll(t, c, req)
				seen := up.last(t)
				if seen.Body != b.want || seen.CL != int64(len(b.want)) {
					t.Errorf("%s: upstream saw %q (length %d)", b.name, seen.Body, seen.CL)
				}
				noReal(t, b.name, resp, body)
			}

			// Another allowed host (the certificate's 127.0.0.1) gets the
			// sentinel.
			_, port, _ := net.SplitHostPort(te.target)
			req, _ = http.NewRequest("POST", "https://127.0.0.1:"+port+"/echo", strings.NewReader(credSent))
			req.Header.Set("Authorization", "Bearer "+credSent)
			resp, body = fetchAll(t, c, req)
			if seen := up.last(t); resp.StatusCode != 200 || seen.Header.Get("Authorization") != "Bearer "+credSent || seen.Body != credSent {
				t.Errorf("other host: %s, upstream saw %v %q", resp.Status, seen.Header, seen.Body)
			}
			noReal(t, "other host", resp, body)
		})
	}
}

// TestCredentialsLongBody: a body that changes length and is longer than
// maxInjectBuffer is streamed with no length, substituted to its end.
func TestCredentialsLongBody(t *testing.T) {
	te, up := startCred(t, credSet(credSent, false), false, nil)
	pad := strings.Repeat("x", maxInjectBuffer)
	req, _ := http.NewRequest("PUT", "https://"+te.target+"/echo", strings.NewReader(credSent+pad+credSent))
	c := te.client(te.caPool, false)
	c.Timeout = time.Minute
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	seen := up.last(t)
	if seen.CL != -1 || seen.Body != credReal+pad+credReal {
		t.Errorf("upstream saw length %d, body of %d bytes", seen.CL, len(seen.Body))
	}
}

// TestCredentialsHostFronting: with the host match off, a request whose
// Host names another host than the tunnel's target carries the sentinel.
func TestCredentialsHostFronting(t *testing.T) {
	te, up := startCred(t, credSet(credSent, false), false, func(tm *Terminate) { tm.AllowHostMismatch = true })
	conn, br := tlsTunnel(t, te.httpAddr, te.target, "example.com")
	roundTrip(t, conn, br, "GET / HTTP/1.1\r\nHost: other.test\r\nAuthorization: Bearer "+credSent+"\r\n\r\n")
	if got := up.last(t).Header.Get("Authorization"); got != "Bearer "+credSent {
		t.Errorf("fronted: upstream saw %q", got)
	}
	roundTrip(t, conn, br, "GET / HTTP/1.1\r\nHost: "+te.target+"\r\nAuthorization: Bearer "+credSent+"\r\n\r\n")
	if got := up.last(t).Header.Get("Authorization"); got != "Bearer "+credReal {
		t.Errorf("matching: upstream saw %q", got)
	}
}

// TestCredentialsScrubResponses: a gzip answer reaches the client decoded
// and scrubbed (the client's own Accept-Encoding is not passed on), and
// one in an encoding the proxy cannot read is refused.
func TestCredentialsScrubResponses(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("h2=%v", h2), func(t *testing.T) {
			te, up := startCred(t, credSet(credSent, false), h2, nil)
			c := te.client(te.caPool, h2)
			for _, host := range []string{"example.com", "127.0.0.1"} {
				_, port, _ := net.SplitHostPort(te.target)
				req, _ := http.NewRequest("GET", "https://"+net.JoinHostPort(host, port)+"/gzip", nil)
				req.Header.Set("Accept-Encoding", "br") // set by hand: the client does not decode
				resp, body := fetchAll(t, c, req)
				if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "" || body != "decoded "+credSent {
					t.Errorf("%s gzip: %s %v %q", host, resp.Status, resp.Header, body)
				}
				if ae := up.last(t).Header.Get("Accept-Encoding"); ae != "gzip" {
					t.Errorf("%s gzip: upstream was asked for %q", host, ae)
				}
			}
			req, _ := http.NewRequest("GET", "https://"+te.target+"/br", nil)
			req.Header.Set("Accept-Encoding", "br")
			resp, body := fetchAll(t, c, req)
			if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("X-Proxy-Error") != errHdrCredUnscannable || !strings.Contains(body, "Content-Encoding br") {
				t.Errorf("br: %s %v %q", resp.Status, resp.Header, body)
			}
		})
	}
}

// TestCredentialsPlain: cleartext requests carry the sentinel unless
// allowPlaintextInject; answers are scrubbed and decoded either way.
func TestCredentialsPlain(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("allowPlaintext=%v", allow), func(t *testing.T) {
			up := &credUpstream{}
			srv := httptest.NewServer(up)
			t.Cleanup(srv.Close)
			e := startProxyWith(t, baseRules, func(c *Config) { c.Credentials = credSet(credSent, allow) })
			c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: e.httpAddr})}, Timeout: 10 * time.Second}
			base := "http://example.com:" + portOf(t, srv.URL)
			want := credSent
			if allow {
				want = credReal
			}
			req, _ := http.NewRequest("POST", base+"/echo", strings.NewReader("k="+credSent))
			req.Header.Set("Authorization", "Bearer "+credSent)
			resp, body := fetchAll(t, c, req)
			seen := up.last(t)
			if seen.Header.Get("Authorization") != "Bearer "+want || seen.Body != "k="+want || seen.CL != int64(len("k="+want)) {
				t.Errorf("upstream saw %v %q (length %d)", seen.Header, seen.Body, seen.CL)
			}
			noReal(t, "echo", resp, body)
			if resp.Header.Get("X-Leak") != "Bearer "+credSent || resp.Trailer.Get("X-Trail") != credSent || body != "leak="+credSent+" body=k="+credSent {
				t.Errorf("echo: %v %v %q", resp.Header, resp.Trailer, body)
			}
			// The connection is kept: a second request on it works.
			req, _ = http.NewRequest("GET", base+"/gzip", nil)
			req.Header.Set("Accept-Encoding", "br")
			resp, body = fetchAll(t, c, req)
			if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "" || body != "decoded "+credSent {
				t.Errorf("gzip: %s %v %q", resp.Status, resp.Header, body)
			}
			req, _ = http.NewRequest("GET", base+"/br", nil)
			resp, body = fetchAll(t, c, req)
			if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("X-Proxy-Error") != errHdrCredUnscannable {
				t.Errorf("br: %s %v %q", resp.Status, resp.Header, body)
			}
		})
	}
}

// TestCredentialsRangesAndLayers: a Range request goes upstream without
// its Range (a range could cut a stored value into pieces no scan
// sees), a 206 is refused, and a body under two Content-Encoding lines
// is refused rather than decoded once (found by the second adversarial
// review).
func TestCredentialsRangesAndLayers(t *testing.T) {
	te, up := startCred(t, credSet(credSent, false), false, nil)
	c := te.client(te.caPool, false)
	req, _ := http.NewRequest("GET", "https://"+te.target+"/range", nil)
	req.Header.Set("Range", "bytes=0-3")
	req.Header.Set("If-Range", `"x"`)
	resp, b := fetchAll(t, c, req)
	if resp.StatusCode != 200 || b != "whole "+credSent {
		t.Errorf("range: %s %q", resp.Status, b)
	}
	if h := up.last(t).Header; h.Get("Range") != "" || h.Get("If-Range") != "" {
		t.Errorf("the upstream was asked for a range: %v", h)
	}
	for _, path := range []string{"/206", "/gzip2"} {
		req, _ := http.NewRequest("GET", "https://"+te.target+path, nil)
		resp, b := fetchAll(t, c, req)
		if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("X-Proxy-Error") != errHdrCredUnscannable || strings.Contains(b, credReal) {
			t.Errorf("%s: %s %v %q", path, resp.Status, resp.Header, b)
		}
	}
}

// TestCredentialsWebSocket: while a value is masked an upgrade is refused
// (403, a violation) and nothing reaches the upstream: a websocket's
// bytes cannot be scrubbed (a value split across fragmented frames, or
// in frames the server compresses whatever the request offered: found
// by the second adversarial review).
func TestCredentialsWebSocket(t *testing.T) {
	for _, sent := range []string{credSentSame, credSent} {
		te, up := startCred(t, credSet(sent, false), false, nil)
		conn, br := tlsTunnel(t, te.httpAddr, te.target, "example.com")
		resp := roundTrip(t, conn, br, "GET /ws HTTP/1.1\r\nHost: "+te.target+"\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Proxy-Error") != errHdrCredUnscannable {
			t.Errorf("upgrade: %s %v", resp.Status, resp.Header)
		}
		if v := te.vio.wait(t, 1)[0]; v.Rule != RuleCredentials || v.Target != te.target {
			t.Errorf("violation %+v", v)
		}
		if n := up.count(); n != 0 {
			t.Errorf("the upstream saw %d requests", n)
		}
	}
}

// TestCredentialsErrorPages: srt's own error pages are scrubbed: here a
// secret whose value is the upstream's name, in the 502 for its
// untrusted certificate.
func TestCredentialsErrorPages(t *testing.T) {
	set := credential.NewSet([]credential.Secret{{Name: "env HOST", Real: []byte("example.com"), Sentinel: []byte("maskedhost1"),
		Hosts: func(string, int) bool { return false }}}, credential.Options{})
	te, _ := startCred(t, set, false, func(tm *Terminate) { tm.RootCAs = x509.NewCertPool() })
	conn, br := tlsTunnel(t, te.httpAddr, te.target, "example.com")
	resp := roundTrip(t, conn, br, "GET / HTTP/1.1\r\nHost: "+te.target+"\r\n\r\n")
	if b := body(resp); resp.StatusCode != http.StatusBadGateway || strings.Contains(b, "example.com") || !strings.Contains(b, "maskedhost1") {
		t.Errorf("%s %q", resp.Status, b)
	}
}

// TestCredentialsSigV4Refusal: a Refusal of ResignSigV4 (made by a stub:
// the re-signer is the sigv4 work's) is answered with its status and
// reason and reported; the re-signer is given the request with its
// sentinels already replaced; nothing reaches the upstream. In
// cleartext without allowPlaintextInject it is never asked.
func TestCredentialsSigV4Refusal(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	resignSigV4 = func(_ *credential.Set, r *http.Request, host string, port int) error {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, r.Header.Get("Authorization"))
		return &credential.Refusal{Status: http.StatusForbidden, Reason: "streaming SigV4 uploads are not re-signed"}
	}
	t.Cleanup(func() { resignSigV4 = (*credential.Set).ResignSigV4 })
	te, up := startCred(t, credSet(credSent, false), false, nil)
	req, _ := http.NewRequest("PUT", "https://"+te.target+"/bucket/key", strings.NewReader("data"))
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+credSent+"/20260101/us-east-1/s3/aws4_request")
	resp, b := fetchAll(t, te.client(te.caPool, false), req)
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Proxy-Error") != errHdrCredRefused || b != "streaming SigV4 uploads are not re-signed\n" {
		t.Errorf("%s %v %q", resp.Status, resp.Header, b)
	}
	if v := te.vio.wait(t, 1)[0]; v.Rule != RuleCredentials || v.Target != te.target || v.Reason != "streaming SigV4 uploads are not re-signed" {
		t.Errorf("violation %+v", v)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || !strings.Contains(asked[0], credReal) {
		t.Errorf("re-signer asked with %q", asked)
	}
	if n := up.count(); n != 0 {
		t.Errorf("the upstream saw %d requests", n)
	}

	for _, allow := range []bool{false, true} {
		asked = nil
		mu.Unlock()
		srv := httptest.NewServer(up)
		t.Cleanup(srv.Close)
		e := startProxyWith(t, baseRules, func(c *Config) { c.Credentials = credSet(credSent, allow) })
		raw := "GET http://example.com:" + portOf(t, srv.URL) + "/ HTTP/1.1\r\nHost: example.com:" + portOf(t, srv.URL) + "\r\n\r\n"
		resp := rawRequest(t, e.httpAddr, raw, 1)[0]
		mu.Lock()
		if allow && (resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Proxy-Error") != errHdrCredRefused || len(asked) != 1) {
			t.Errorf("plain, allowed: %s %v, asked %d times", resp.Status, resp.Header, len(asked))
		}
		if !allow && (resp.StatusCode != 200 || len(asked) != 0) {
			t.Errorf("plain, not allowed: %s, asked %d times", resp.Status, len(asked))
		}
	}
}

// TestCredentialsNoneNoChange: without secrets the client's
// Accept-Encoding goes upstream and an encoded answer passes as it is.
func TestCredentialsNoneNoChange(t *testing.T) {
	te, up := startCred(t, nil, false, nil)
	req, _ := http.NewRequest("GET", "https://"+te.target+"/br", nil)
	req.Header.Set("Accept-Encoding", "br")
	resp, _ := fetchAll(t, te.client(te.caPool, false), req)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "br" || up.last(t).Header.Get("Accept-Encoding") != "br" {
		t.Errorf("%s %v; upstream saw %v", resp.Status, resp.Header, up.last(t).Header)
	}
}

// TestCredentialsStreamNotHeldBack: a streamed answer's bytes reach the
// client while the upstream waits, as without credentials
// (TestTerminateStreams): the scrubber holds back only a tail that could
// begin a real value, so an event stream or a WebSocket's last message
// does not wait for the upstream's next write.
func TestCredentialsStreamNotHeldBack(t *testing.T) {
	te := startTerm(t, baseRules, false, nil, func(c *Config) { c.Credentials = credSet(credSent, false) })
	req, _ := http.NewRequest("GET", "https://"+te.target+"/stream", nil)
	resp, err := te.client(te.caPool, false).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	if l, err := bufio.NewReader(resp.Body).ReadString('\n'); l != "first\n" || time.Since(start) > 2*time.Second {
		t.Errorf("got %q %v after %v", l, err, time.Since(start))
	}
}
