package proxy

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/srt-go/srt/mitm"
	"github.com/srt-go/srt/netrule"
)

// echoOrigin answers every request with its method, request target as
// received and X-Secret header, and sets a cookie; it counts requests.
func echoOrigin(t *testing.T) (*httptest.Server, *int64Counter) {
	t.Helper()
	n := &int64Counter{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.inc()
		w.Header().Set("Set-Cookie", "a=b")
		w.Header().Set("X-Kept", "yes")
		fmt.Fprintf(w, "%s %s secret=%q", r.Method, r.RequestURI, r.Header.Get("X-Secret"))
	}))
	t.Cleanup(srv.Close)
	return srv, n
}

func mustPattern(t *testing.T, s string) netrule.Pattern {
	t.Helper()
	p, err := netrule.ParsePattern(s, false)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// filtered sends one raw plain-HTTP request for target to allowed.test:port.
func filtered(t *testing.T, e *env, method, port, target, extra string) *http.Response {
	t.Helper()
	rs := rawRequest(t, e.httpAddr, method+" http://allowed.test:"+port+target+" HTTP/1.1\r\nHost: allowed.test:"+port+"\r\n"+extra+"Connection: close\r\n\r\n", 1)
	if len(rs) != 1 {
		t.Fatalf("%s %s: no response", method, target)
	}
	return rs[0]
}

func TestFilterHook(t *testing.T) {
	srv, hits := echoOrigin(t)
	port := portOf(t, srv.URL)
	var mu sync.Mutex
	var seen []FilterRequest
	var observed []int
	e := startProxyWith(t, baseRules, func(c *Config) {
		c.StripResponseHeaders = []string{"SET_COOKIE"}
		c.FilterRequest = func(_ context.Context, r *FilterRequest) FilterDecision {
			mu.Lock()
			seen = append(seen, *r)
			mu.Unlock()
			switch r.Target {
			case "/deny":
				return FilterDecision{Deny: true, Reason: "no deny for you"}
			case "/teapot":
				return FilterDecision{Deny: true, Status: 418, Reason: "short and stout"}
			case "/badstatus":
				return FilterDecision{Deny: true, Status: 200}
			case "/remove":
				return FilterDecision{RemoveHeaders: []string{"x-secret"}}
			case "/set":
				return FilterDecision{SetHeaders: http.Header{"X-Secret": {"injected"}}}
			case "/observe":
				return FilterDecision{OnResponse: func(r *http.Response) {
					mu.Lock()
					observed = append(observed, r.StatusCode)
					mu.Unlock()
					r.Header.Set("X-Observed", "1")
				}}
			}
			return FilterDecision{}
		}
	})
	tests := []struct {
		method, target, extra string
		status                int
		xerr, body            string
		violation             bool
	}{
		{method: "GET", target: "/ok?q=1#frag", status: 200, body: `GET /ok?q=1 secret=""`},
		{method: "GET", target: "/deny", status: 403, xerr: errHdrFiltered, body: "GET /deny: refused by the request filter: no deny for you\n", violation: true},
		{method: "GET", target: "/teapot", status: 418, xerr: errHdrFiltered, violation: true},
		{method: "GET", target: "/badstatus", status: 403, xerr: errHdrFiltered, violation: true},
		{method: "GET", target: "/remove", extra: "X-Secret: s\r\n", status: 200, body: `GET /remove secret=""`},
		{method: "GET", target: "/set", status: 403, xerr: errHdrFiltered, violation: true}, // cleartext
		{method: "GET", target: "/observe", status: 200},
		{method: "TRACE", target: "/ok", status: 405, xerr: errHdrFiltered, violation: true},
		{method: "TRACK", target: "/ok", status: 405, xerr: errHdrFiltered, violation: true},
		{method: "GET", target: "/a/../b", status: 400, xerr: errHdrAmbiguous, violation: true},
		{method: "GET", target: "/a/%2e%2E/b", status: 400, xerr: errHdrAmbiguous, violation: true},
		{method: "GET", target: "/a/./b", status: 400, xerr: errHdrAmbiguous, violation: true},
		{method: "GET", target: `/a\b`, status: 400, xerr: errHdrAmbiguous, violation: true},
		{method: "GET", target: "//x", status: 400, xerr: errHdrAmbiguous, violation: true},
		{method: "GET", target: "/a//b", status: 200, body: `GET /a//b secret=""`},
		{method: "GET", target: "/a%2Fb", status: 200, body: `GET /a%2Fb secret=""`},
		{method: "GET", target: "/a%2eb/{x}", status: 200, body: `GET /a%2eb/{x} secret=""`},
		{method: "GET", target: "/caf\xc3\xa9", status: 200, body: `GET /caf%C3%A9 secret=""`},
		{method: "GET", target: "/\xff", status: 400, xerr: errHdrTarget, violation: true},
		{method: "GET", target: "?q", status: 200, body: `GET /?q secret=""`},
		{method: "GET", target: "/e?", status: 200, body: `GET /e? secret=""`},
	}
	want := 0
	for _, tc := range tests {
		before := hits.get()
		r := filtered(t, e, tc.method, port, tc.target, tc.extra)
		if r.StatusCode != tc.status || r.Header.Get("X-Proxy-Error") != tc.xerr {
			t.Errorf("%s %q: %s X-Proxy-Error %q, want %d %q (%s)", tc.method, tc.target, r.Status, r.Header.Get("X-Proxy-Error"), tc.status, tc.xerr, body(r))
			continue
		}
		if b := body(r); tc.body != "" && b != tc.body {
			t.Errorf("%s %q: body %q, want %q", tc.method, tc.target, b, tc.body)
		}
		forwarded := hits.get() > before
		if forwarded == (tc.status != 200) {
			t.Errorf("%s %q: forwarded %v", tc.method, tc.target, forwarded)
		}
		if tc.status == 200 && (r.Header.Get("Set-Cookie") != "" || r.Header.Get("X-Kept") != "yes") {
			t.Errorf("%s %q: response headers %v: want Set-Cookie stripped, X-Kept kept", tc.method, tc.target, r.Header)
		}
		if tc.target == "/observe" && r.Header.Get("X-Observed") != "1" {
			t.Errorf("OnResponse's header edit not written: %v", r.Header)
		}
		if tc.violation {
			want++
			vs := e.vio.wait(t, want)
			if v := vs[want-1]; v.Protocol != "http" || !strings.HasPrefix(v.Reason, tc.method+" ") {
				t.Errorf("%s %q: violation %+v", tc.method, tc.target, v)
			}
		}
	}
	if len(e.vio.wait(t, want)) != want {
		t.Errorf("violations: %v, want %d", e.vio.v, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(observed) != 1 || observed[0] != 200 {
		t.Errorf("OnResponse saw %v", observed)
	}
	fr := seen[0]
	if fr.Method != "GET" || fr.Scheme != "http" || fr.Host != "allowed.test" || fmt.Sprint(fr.Port) != port ||
		fr.Target != "/ok?q=1" || fr.NormalizedTarget != "/ok?q=1" || fr.Ambiguous || fr.Header.Get("Connection") != "" {
		t.Errorf("first FilterRequest %+v", fr)
	}
}

func TestFilterPlaintextHeaderSetAllowed(t *testing.T) {
	srv, _ := echoOrigin(t)
	port := portOf(t, srv.URL)
	e := startProxyWith(t, baseRules, func(c *Config) {
		c.AllowPlaintextHeaderSet = true
		c.FilterRequest = func(context.Context, *FilterRequest) FilterDecision {
			return FilterDecision{SetHeaders: http.Header{"X-Secret": {"injected"}}}
		}
	})
	r := filtered(t, e, "GET", port, "/set", "X-Secret: mine\r\n")
	if b := body(r); r.StatusCode != 200 || b != `GET /set secret="injected"` {
		t.Errorf("%s %q", r.Status, b)
	}
}

func TestAmbiguousTargetModes(t *testing.T) {
	srv, _ := echoOrigin(t)
	port := portOf(t, srv.URL)
	var got []FilterRequest
	var mu sync.Mutex
	hook := func(_ context.Context, r *FilterRequest) FilterDecision {
		mu.Lock()
		got = append(got, *r)
		mu.Unlock()
		return FilterDecision{}
	}
	for _, tc := range []struct {
		mode AmbiguousTarget
		want string
	}{{AmbiguousAsSpelled, "GET /a/%2e%2e/b?x secret=\"\""}, {AmbiguousNormalize, "GET /b?x secret=\"\""}} {
		e := startProxyWith(t, baseRules, func(c *Config) { c.AmbiguousTarget, c.FilterRequest = tc.mode, hook })
		r := filtered(t, e, "GET", port, "/a/%2e%2e/b?x", "")
		if b := body(r); r.StatusCode != 200 || b != tc.want {
			t.Errorf("mode %d: %s %q, want %q", tc.mode, r.Status, b, tc.want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || !got[0].Ambiguous || got[0].Target != "/a/%2e%2e/b?x" || got[0].NormalizedTarget != "/b?x" {
		t.Errorf("hook saw %+v", got)
	}
}

// Without a filter, an ambiguous target is nobody's concern: forwarded.
func TestAmbiguousTargetUnfiltered(t *testing.T) {
	srv, _ := echoOrigin(t)
	port := portOf(t, srv.URL)
	e := startProxy(t, baseRules)
	if r := filtered(t, e, "GET", port, "/a/../b#f", ""); r.StatusCode != 200 || body(r) != `GET /a/../b secret=""` {
		t.Errorf("%s", r.Status)
	}
}

func TestHTTPRules(t *testing.T) {
	srv, hits := echoOrigin(t)
	port := portOf(t, srv.URL)
	rules := NewHTTPRules([]HTTPRule{
		{Name: "network.httpRules[0]", Domains: []netrule.Pattern{mustPattern(t, "allowed.test")}, Methods: []string{"GET"}},
		{Name: "network.httpRules[1]", Domains: []netrule.Pattern{mustPattern(t, "allowed.test")}, Methods: []string{"POST"}, Paths: []string{"/api", "/up/"}},
	})
	e := startProxyWith(t, baseRules, func(c *Config) { c.HTTPRules = rules })
	tests := []struct {
		method, target string
		status         int
	}{
		{"GET", "/anything", 200},
		{"POST", "/api", 200},
		{"POST", "/api/graphql", 200},
		{"POST", "/apix", 403},
		{"POST", "/up/load", 200},
		{"POST", "/up", 403},
		{"POST", "/", 403},
		{"PUT", "/api", 403},
		{"post", "/api", 403},
		{"POST", "/ap%69", 200},                 // decoded, it is /api
		{"POST", "/api%2F..%2F..%2Fadmin", 403}, // decoded first, it is /admin
		{"POST", "/api/../admin", 400},
		{"TRACE", "/api", 405},
	}
	n := 0
	for _, tc := range tests {
		before := hits.get()
		r := filtered(t, e, tc.method, port, tc.target, "")
		if r.StatusCode != tc.status {
			t.Errorf("%s %s: %s, want %d (%s)", tc.method, tc.target, r.Status, tc.status, body(r))
			continue
		}
		if (hits.get() > before) != (tc.status == 200) {
			t.Errorf("%s %s: forwarded %v", tc.method, tc.target, hits.get() > before)
		}
		if tc.status == 403 {
			n++
			vs := e.vio.wait(t, n)
			if v := vs[n-1]; v.Rule != "network.httpRules[0]" || !strings.Contains(v.Reason, "network.httpRules[0], network.httpRules[1]") {
				t.Errorf("%s %s: violation %+v", tc.method, tc.target, v)
			}
		} else if tc.status != 200 {
			n++
		}
	}
	// A host no rule names is not restricted, nor judged.
	r := rawRequest(t, e.httpAddr, "POST http://127.0.0.1:"+port+"/a/../x HTTP/1.1\r\nHost: 127.0.0.1:"+port+"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", 1)
	if len(r) != 1 || r[0].StatusCode != 200 {
		t.Errorf("unnamed host: %v", r)
	}
}

func TestOpaqueTunnelsRefused(t *testing.T) {
	tlsOrigin := newTLSOrigin(t)
	port := portOf(t, tlsOrigin.URL)
	rules := NewHTTPRules([]HTTPRule{{Name: "network.httpRules[0]", Domains: []netrule.Pattern{mustPattern(t, "allowed.test")}, Methods: []string{"GET"}}})
	for _, tc := range []struct {
		name     string
		mod      func(*Config)
		refused  []string // hosts whose tunnels are refused
		passable []string
	}{
		{"httpRules", func(c *Config) { c.HTTPRules = rules }, []string{"allowed.test"}, []string{"example.com"}},
		{"httpRules-excluded", func(c *Config) {
			c.HTTPRules = rules
			ca, err := mitm.NewCA()
			if err != nil {
				t.Fatal(err)
			}
			c.Terminate = &Terminate{CA: ca, Exclude: func(string, int) bool { return true }}
		}, []string{"allowed.test"}, []string{"example.com"}},
		{"refuseOpaqueTunnels", func(c *Config) { c.RefuseOpaqueTunnels = true }, []string{"allowed.test", "example.com"}, nil},
		{"none", nil, nil, []string{"allowed.test", "example.com"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := startProxyWith(t, baseRules, tc.mod)
			n := 0
			for _, h := range tc.refused {
				rs := rawRequest(t, e.httpAddr, "CONNECT "+h+":"+port+" HTTP/1.1\r\nHost: "+h+":"+port+"\r\n\r\n", 1)
				if len(rs) != 1 || rs[0].StatusCode != 403 || !strings.Contains(body(rs[0]), "cannot be inspected") {
					t.Errorf("CONNECT %s: %v", h, rs)
				}
				if rep := socksConnect(t, e.socksAddr, h, port); rep != RepNotAllowed {
					t.Errorf("SOCKS5 %s: reply %d", h, rep)
				}
				n += 2
				vs := e.vio.wait(t, n)
				want := map[string]string{"socks5": "SOCKS5 tunnels are never TLS-terminated", "connect": "enable network.tlsTerminate"}
				if tc.name == "httpRules-excluded" {
					want["connect"] = "it is in network.tlsTerminate.excludeDomains"
				}
				for _, v := range vs[n-2 : n] { // reported after each answer: in either order
					if v.Rule != opaqueRule || !strings.Contains(v.Reason, want[v.Protocol]) {
						t.Errorf("violation %+v, want the reason to say %q", v, want[v.Protocol])
					}
				}
			}
			for _, h := range tc.passable {
				if st := connectStatus(t, e.httpAddr, h+":"+port); st != "HTTP/1.1 200 Connection Established" {
					t.Errorf("CONNECT %s: %q", h, st)
				}
				if rep := socksConnect(t, e.socksAddr, h, port); rep != RepSucceeded {
					t.Errorf("SOCKS5 %s: reply %d", h, rep)
				}
			}
		})
	}
}

// connectStatus sends a CONNECT for hp and returns the answer's status
// line.
func connectStatus(t *testing.T, addr, hp string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hp, hp)
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line)
}

// A CONNECT that will be terminated is not refused here: the terminated
// path judges its requests (and its opaque fallback asks mustInspect).
func TestMustInspectTerminated(t *testing.T) {
	rules := NewHTTPRules([]HTTPRule{{Name: "r", Domains: []netrule.Pattern{mustPattern(t, "allowed.test:443")}}})
	ca, err := mitm.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Filtering: Filtering{HTTPRules: rules}, Terminate: &Terminate{CA: ca}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.mustInspect("allowed.test", 443) || s.mustInspect("allowed.test", 80) || s.mustInspect("other.test", 443) {
		t.Error("mustInspect follows the rules' domains and ports")
	}
	if !s.willTerminate("allowed.test", 443) {
		t.Error("willTerminate without Exclude")
	}
}

func TestNormalizePath(t *testing.T) {
	for in, want := range map[string]string{
		"/": "/", "/a/../b": "/b", "/a/%2E%2e/b": "/b", "/a/.%2e/b": "/b", `/a\b`: "/a/b", "//x": "/x", "///x/": "/x/",
		"/a//b": "/a//b", "/a/.": "/a/", "/..": "/", "/a/b/..": "/a/", "/a%2Fb": "/a%2Fb", "/a.b/c..": "/a.b/c..",
		"/a%2eb": "/a%2eb", "/public/..;/admin": "/admin", "/p/%2e%2e;x=1/a": "/a", "/p/.;/a": "/p/a", "/p/a;b/c": "/p/a;b/c",
	} {
		if got := normalizePath(in); got != want {
			t.Errorf("normalizePath(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"Set-Cookie": "set-cookie", "SET_COOKIE": "set-cookie", "x.y": "x-y"} {
		if got := foldHeaderName(in); got != want {
			t.Errorf("foldHeaderName(%q) = %q", in, got)
		}
	}
	for _, s := range []string{"refuse", "asSpelled", "normalize", ""} {
		if _, err := ParseAmbiguousTarget(s); err != nil {
			t.Error(err)
		}
	}
	if _, err := ParseAmbiguousTarget("Refuse"); err == nil {
		t.Error("ParseAmbiguousTarget is case sensitive")
	}
	if _, ok := (requestTarget{path: "/a%zz", normPath: "/a%zz"}).decodedPaths(false); ok {
		t.Error("an invalid escape has no trusted reading")
	}
	if _, err := parseTarget("*", false); err == nil {
		t.Error(`"*" inside a tunnel`)
	}
	if _, err := parseTarget("http://h/x", false); err == nil {
		t.Error("absolute form inside a tunnel")
	}
}
