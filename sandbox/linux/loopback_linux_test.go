package linux

import (
	"context"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/srt-go/srt/netrule"
	"github.com/srt-go/srt/proxy"
	"github.com/srt-go/srt/violation"
)

// relayFixture is a loopbackRelay whose "sandbox" listener is a port of
// this host's loopback and whose dial goes to a host server on another
// port: the relay dials the listener's own address and port, which in one
// network namespace would be the listener itself.
type relayFixture struct {
	srv   *proxy.Server
	relay *loopbackRelay
	in    string // the "sandbox" address clients dial
	mu    sync.Mutex
	vs    []violation.Violation
}

func newRelayFixture(t *testing.T, allowed []string, maxConns int, forbidden func(netip.AddrPort) string) *relayFixture {
	t.Helper()
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close() })
	go func() { // answers "pong:" and what it read once the client half-closed
		for {
			c, err := host.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if b, err := io.ReadAll(c); err == nil {
					io.WriteString(c, "pong:"+string(b))
				}
			}()
		}
	}()
	in, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	inPort := in.Addr().(*net.TCPAddr).Port
	for i, a := range allowed {
		allowed[i] = strings.ReplaceAll(a, "PORT", strconv.Itoa(inPort))
	}
	srv, err := proxy.New(proxy.Config{Policy: netrule.MustCompile(netrule.Rules{Allowed: allowed})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if forbidden == nil {
		forbidden = func(netip.AddrPort) string { return "" }
	}
	f := &relayFixture{srv: srv, in: in.Addr().String()}
	f.relay = newLoopbackRelay(srv, forbidden, maxConns, func(v violation.Violation) {
		f.mu.Lock()
		f.vs = append(f.vs, v)
		f.mu.Unlock()
	}, nil)
	hostAddr := host.Addr().String()
	f.relay.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr != f.in { // only ever the listener's own address (or [::1]'s fallback)
			return nil, &net.OpError{Op: "dial", Err: io.ErrUnexpectedEOF}
		}
		return (&net.Dialer{}).DialContext(ctx, network, hostAddr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.relay.serve(ctx, in); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return f
}

// exchange sends "ping", half-closes, and returns what came back. A
// refusal is a reset, which the connect, the write or the read may see
// first (only the first of them reports it), so a refusal is "" whatever
// the error.
func (f *relayFixture) exchange() (string, error) {
	c, err := net.DialTimeout("tcp", f.in, 5*time.Second)
	if err != nil {
		return "", err // a reset can come before connect returns
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "ping")
	c.(*net.TCPConn).CloseWrite()
	b, err := io.ReadAll(c)
	return string(b), err
}

// violations returns the records so far, after waiting up to a second for
// at least want of them (a refusal is recorded after the reset that the
// client may see first).
func (f *relayFixture) violations(want int) []violation.Violation {
	for deadline := time.Now().Add(time.Second); ; time.Sleep(5 * time.Millisecond) {
		f.mu.Lock()
		vs := append([]violation.Violation(nil), f.vs...)
		f.mu.Unlock()
		if len(vs) >= want || time.Now().After(deadline) {
			return vs
		}
	}
}

// TestLoopbackRelay: an allowed connection is relayed with its
// half-close; once the rules no longer allow it, the next one is reset
// and recorded.
func TestLoopbackRelay(t *testing.T) {
	f := newRelayFixture(t, []string{"localhost:PORT"}, 0, nil)
	if got, err := f.exchange(); err != nil || got != "pong:ping" {
		t.Fatalf("allowed: %q, %v; want pong:ping", got, err)
	}
	if vs := f.violations(0); len(vs) != 0 {
		t.Errorf("violations for an allowed relay: %v", vs)
	}
	f.srv.SetPolicy(netrule.MustCompile(netrule.Rules{}))
	if got, err := f.exchange(); got != "" {
		t.Errorf("no longer allowed: %q, %v; want nothing relayed", got, err)
	}
	vs := f.violations(1)
	if len(vs) != 1 || vs[0].Target != f.in || vs[0].Protocol != ProtocolLoopback || vs[0].Reason != netrule.ReasonNotAllowed ||
		vs[0].Action != violation.NetworkOutbound || vs[0].Raw != "deny network-outbound "+f.in+" ("+netrule.ReasonNotAllowed+")" {
		t.Errorf("violations %+v, want one refusal of %s", vs, f.in)
	}
}

// TestLoopbackRelayForbidden: an address the guard refuses (srtd's) is
// never dialled, whatever the rules allow.
func TestLoopbackRelayForbidden(t *testing.T) {
	f := newRelayFixture(t, []string{"127.0.0.1:PORT"}, 0, func(netip.AddrPort) string { return "srtd's API listens there" })
	if got, err := f.exchange(); got != "" {
		t.Errorf("forbidden: %q, %v; want nothing relayed", got, err)
	}
	if vs := f.violations(1); len(vs) != 1 || vs[0].Reason != "srtd's API listens there" {
		t.Errorf("violations %+v, want the guard's refusal", vs)
	}
}

// TestLoopbackRelayLimit: over maxConns open connections, one more is
// reset and recorded with the proxies' limit rule; closing one frees a
// slot.
func TestLoopbackRelayLimit(t *testing.T) {
	f := newRelayFixture(t, []string{"localhost:PORT"}, 1, nil)
	held, err := net.Dial("tcp", f.in)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(held, "x")
	deadline := time.Now().Add(5 * time.Second)
	for len(f.relay.slots) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got, err := f.exchange(); got != "" {
		t.Errorf("over the limit: %q, %v; want nothing relayed", got, err)
	}
	if vs := f.violations(1); len(vs) != 1 || vs[0].Rule != proxy.RuleConnLimit {
		t.Errorf("violations %+v, want one %q", vs, proxy.RuleConnLimit)
	}
	held.Close()
	for len(f.relay.slots) != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got, err := f.exchange(); err != nil || got != "pong:ping" {
		t.Errorf("after a slot freed: %q, %v; want pong:ping", got, err)
	}
}

// TestLoopbackRelayFiltered: a relayed connection is an opaque tunnel, so
// a host loopback port whose requests network.httpRules filters is not
// relayed (the proxies refuse the same tunnel).
func TestLoopbackRelayFiltered(t *testing.T) {
	f := newRelayFixture(t, []string{"localhost:PORT"}, 0, nil)
	pat, err := netrule.ParsePattern("localhost", false)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := proxy.New(proxy.Config{Policy: f.srv.Policy(), Filtering: proxy.Filtering{
		HTTPRules: proxy.NewHTTPRules([]proxy.HTTPRule{{Name: "network.httpRules[0]", Domains: []netrule.Pattern{pat}, Methods: []string{"GET"}}})}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	f.relay.srv = srv
	if got, err := f.exchange(); got != "" {
		t.Errorf("filtered: %q, %v; want nothing relayed", got, err)
	}
	if vs := f.violations(1); len(vs) != 1 || !strings.Contains(vs[0].Reason, "network.httpRules") {
		t.Errorf("violations %+v, want the opaque-tunnel refusal", vs)
	}
}
