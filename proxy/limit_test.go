package proxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// waitActive waits until the Server serves n client connections.
func waitActive(t *testing.T, e *env, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); e.srv.ActiveConns() != n; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d client connections served, want %d", e.srv.ActiveConns(), n)
		}
	}
}

// dialHeld opens a client connection and leaves it idle (the proxy waits
// for its first request).
func dialHeld(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// get sends one plain-HTTP request on c and returns the status line's code.
func get(t *testing.T, c net.Conn, port string) int {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET http://allowed.test:"+port+"/ HTTP/1.1\r\nHost: allowed.test:"+port+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestConnLimit: at Config.MaxConns, a new client connection to either
// proxy is closed at once (HTTP after a 503), the connections already
// open are still served, a freed slot is used again, and the refusals are
// reported as a violation with RuleConnLimit, not one per attempt (issue 16,
// "Descriptor exhaustion").
func TestConnLimit(t *testing.T) {
	const max = 3
	e := startProxyWith(t, baseRules, func(c *Config) { c.MaxConns = max })
	srv, _ := origin(t)
	port := portOf(t, srv.URL)

	held := []net.Conn{dialHeld(t, e.httpAddr), dialHeld(t, e.httpAddr), dialHeld(t, e.socksAddr)}
	waitActive(t, e, max)

	// Over the bound: HTTP answers 503 and closes; SOCKS5 closes.
	c := dialHeld(t, e.httpAddr)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("over the limit, HTTP: %v; want a 503", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || !strings.Contains(string(b), RuleConnLimit) {
		t.Errorf("over the limit, HTTP: %d %q; want 503 naming the %s", resp.StatusCode, b, RuleConnLimit)
	}
	for range 5 {
		c := dialHeld(t, e.socksAddr)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
			t.Errorf("over the limit, SOCKS5: read %d, %v; want EOF", n, err)
		}
	}
	if got := e.srv.ActiveConns(); got != max {
		t.Errorf("%d client connections served after the refusals, want %d", got, max)
	}

	// The held ones still work.
	if code := get(t, held[0], port); code != 200 {
		t.Errorf("held connection: HTTP %d, want 200", code)
	}

	// A freed slot is used again.
	held[1].Close()
	waitActive(t, e, max-1)
	if code := get(t, dialHeld(t, e.httpAddr), port); code != 200 {
		t.Errorf("after a slot was freed: HTTP %d, want 200", code)
	}

	// Six refusals in quick succession: reported once (or twice on a slow
	// machine that straddled the second), never once each.
	e.vio.wait(t, 1)
	time.Sleep(50 * time.Millisecond)
	if v := e.vio.wait(t, 1); len(v) > 2 {
		t.Fatalf("%d violations for 6 refusals in quick succession, want 1: %v", len(v), v)
	}
	// The first refusal reported names its proxy: the HTTP one, or the
	// SOCKS5 one when its refusal was recorded first (the HTTP proxy
	// reports after it has written its 503, which the test reads first).
	v := e.vio.wait(t, 1)
	if v[0].Rule != RuleConnLimit || (v[0].Target != e.httpAddr && v[0].Target != e.socksAddr) || !strings.Contains(v[0].Raw, RuleConnLimit) {
		t.Errorf("violation %+v; want rule %q on %s or %s", v[0], RuleConnLimit, e.httpAddr, e.socksAddr)
	}
}

func TestConnLimitReportsRateLimited(t *testing.T) {
	var l connLimit
	t0 := time.Unix(1000, 0)
	steps := []struct {
		at     time.Duration
		report bool
		n      int
	}{
		{0, true, 1},
		{100 * time.Millisecond, false, 0},
		{900 * time.Millisecond, false, 0},
		{time.Second, true, 3},
		{1500 * time.Millisecond, false, 0},
		{5 * time.Second, true, 2},
	}
	for _, s := range steps {
		if report, n := l.refused(t0.Add(s.at)); report != s.report || n != s.n {
			t.Errorf("at %v: report %v n %d; want %v %d", s.at, report, n, s.report, s.n)
		}
	}
}

func TestNewRefusesNegativeMaxConns(t *testing.T) {
	if _, err := New(Config{MaxConns: -1}); err == nil {
		t.Fatal("New accepted MaxConns -1")
	}
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.cfg.MaxConns != DefaultMaxConns {
		t.Errorf("MaxConns %d, want DefaultMaxConns", s.cfg.MaxConns)
	}
}
