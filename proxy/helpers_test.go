package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/srt-go/srt/netrule"
	"github.com/srt-go/srt/violation"
)

// fakeResolver maps test host names to addresses and records every
// lookup, so tests can prove a name was never resolved.
type fakeResolver struct {
	mu      sync.Mutex
	hosts   map[string][]netip.Addr
	lookups []string
}

func (r *fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups = append(r.lookups, host)
	if a, ok := r.hosts[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (r *fakeResolver) looked(host string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.lookups {
		if h == host {
			return true
		}
	}
	return false
}

// violations collects OnViolation calls.
type violations struct {
	mu sync.Mutex
	v  []violation.Violation
}

func (vs *violations) add(v violation.Violation) {
	vs.mu.Lock()
	vs.v = append(vs.v, v)
	vs.mu.Unlock()
}

// wait returns the first n violations, waiting briefly: the callback runs
// after the refusal is written, so the client may see it first.
func (vs *violations) wait(t *testing.T, n int) []violation.Violation {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		vs.mu.Lock()
		got := append([]violation.Violation(nil), vs.v...)
		vs.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d violations, want %d: %v", len(got), n, got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// env is one running Server with an HTTP and a SOCKS5 listener.
type env struct {
	srv       *Server
	res       *fakeResolver
	vio       *violations
	httpAddr  string
	socksAddr string
	done      chan error // Serve results
}

var loop4 = netip.MustParseAddr("127.0.0.1")

// startProxy runs a Server whose resolver maps allowed.test, example.com
// (the httptest certificate's name) and denied.test to 127.0.0.1.
func startProxy(t testing.TB, rules netrule.Rules) *env {
	t.Helper()
	return startProxyWith(t, rules, nil)
}

// startProxyWith is startProxy with mod, when not nil, applied to the
// Config first.
func startProxyWith(t testing.TB, rules netrule.Rules, mod func(*Config)) *env {
	t.Helper()
	pol, err := netrule.Compile(rules)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{
		res: &fakeResolver{hosts: map[string][]netip.Addr{
			"allowed.test": {loop4},
			"example.com":  {loop4},
			"denied.test":  {loop4},
			"other.test":   {loop4},
		}},
		vio:  &violations{},
		done: make(chan error, 2),
	}
	cfg := Config{Policy: pol, Resolver: e.res, OnViolation: e.vio.add}
	if mod != nil {
		mod(&cfg)
	}
	e.srv, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hl := listen(t)
	sl := listen(t)
	e.httpAddr, e.socksAddr = hl.Addr().String(), sl.Addr().String()
	ctx := context.Background()
	go func() { e.done <- e.srv.HTTP().Serve(ctx, hl) }()
	go func() { e.done <- e.srv.SOCKS5().Serve(ctx, sl) }()
	t.Cleanup(func() {
		e.srv.Close()
		for range 2 {
			if err := <-e.done; !errors.Is(err, ErrServerClosed) {
				t.Errorf("Serve returned %v, want ErrServerClosed", err)
			}
		}
	})
	return e
}

func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// origin is a plain HTTP test server that counts requests.
func origin(t *testing.T) (*httptest.Server, *int64Counter) {
	t.Helper()
	n := &int64Counter{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.inc()
		if r.Header.Get("Proxy-Authorization") != "" || r.Header.Get("Proxy-Connection") != "" {
			http.Error(w, "proxy header leaked", 500)
			return
		}
		fmt.Fprintf(w, "hello from origin %s %s", r.Host, r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return srv, n
}

type int64Counter struct {
	mu sync.Mutex
	n  int
}

func (c *int64Counter) inc() { c.mu.Lock(); c.n++; c.mu.Unlock() }
func (c *int64Counter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func portOf(t *testing.T, rawURL string) string {
	t.Helper()
	i := strings.LastIndexByte(rawURL, ':')
	return rawURL[i+1:]
}

// rawRequest sends raw bytes to the HTTP proxy and returns the parsed
// responses, in order, until the connection closes or n are read.
func rawRequest(t *testing.T, addr, raw string, n int) []*http.Response {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var out []*http.Response
	for range n {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			break
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(strings.NewReader(string(body)))
		out = append(out, resp)
	}
	return out
}

func body(r *http.Response) string {
	b, _ := io.ReadAll(r.Body)
	return string(b)
}
