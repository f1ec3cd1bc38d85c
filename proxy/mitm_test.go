package proxy

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/srt-go/srt/netrule"
)

// mitmFixture is an HTTP forward proxy (CONNECT and absolute-URI plain
// HTTP) on a unix socket that, like fwdProxy, dials every name at
// 127.0.0.1 from parentSrc. It records the targets it was asked for.
type mitmFixture struct {
	path    string
	mu      sync.Mutex
	targets []string
}

func (m *mitmFixture) seen() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.targets...)
}

func startMITM(t testing.TB) *mitmFixture {
	t.Helper()
	m := &mitmFixture{path: filepath.Join(t.TempDir(), "mitm.sock")}
	fwd := forwardHandler(t, (&fwdProxy{}).dial)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.targets = append(m.targets, r.Method+" "+r.RequestURI)
		m.mu.Unlock()
		fwd.ServeHTTP(w, r)
	})
	ln, err := net.Listen("unix", m.path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return m
}

// mitmFor is a MITMProxy at path for the exact names given.
func mitmFor(path string, names ...string) *MITMProxy {
	return &MITMProxy{SocketPath: path, Match: func(host string, _ int) bool {
		for _, n := range names {
			if n == host {
				return true
			}
		}
		return false
	}}
}

// TestMITMProxyRoutes: plain HTTP (absolute URI), HTTPS (CONNECT) and
// SOCKS5 to a mitmProxy domain go to the MITM proxy's socket, winning
// over the parent proxy; another name goes through the parent, and
// without a parent is dialled directly.
func TestMITMProxyRoutes(t *testing.T) {
	m := startMITM(t)
	pe := startParentEnv(t, false, parentUser, "", func(c *Config) {
		c.Parent = c.Parent.WithMITM(mitmFor(m.path, "allowed.test", "example.com"))
	})
	plainPort, tlsPort := portOf(t, pe.plain.URL), portOf(t, pe.tls.URL)
	code, b, err := pe.get(t, "http://allowed.test:"+plainPort+"/plain")
	if err != nil || code != 200 || b != "via parent allowed.test:"+plainPort+" /plain" {
		t.Fatalf("plain: %d %q %v", code, b, err)
	}
	code, b, err = pe.get(t, "https://example.com:"+tlsPort+"/tls")
	if err != nil || code != 200 || b != "via parent example.com:"+tlsPort+" /tls" {
		t.Fatalf("https: %d %q %v", code, b, err)
	}
	if rep := socksConnect(t, pe.socksAddr, "allowed.test", plainPort); rep != RepSucceeded {
		t.Fatalf("socks rep %d", rep)
	}
	code, b, err = pe.get(t, "http://other.test:"+plainPort+"/p")
	if err != nil || code != 200 || !strings.HasPrefix(b, "via parent other.test") {
		t.Fatalf("other: %d %q %v", code, b, err)
	}
	want := []string{"GET http://allowed.test:" + plainPort + "/plain", "CONNECT example.com:" + tlsPort, "CONNECT allowed.test:" + plainPort}
	if got := m.seen(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("MITM proxy saw %q, want %q", got, want)
	}
	if got := pe.parent.seen(); len(got) != 1 || got[0] != "GET http://other.test:"+plainPort+"/p" {
		t.Fatalf("parent saw %q, want other.test only", got)
	}
	// A denied host reaches neither.
	if rs := rawRequest(t, pe.httpAddr, "CONNECT denied.test:443 HTTP/1.1\r\nHost: denied.test:443\r\n\r\n", 1); len(rs) != 1 || rs[0].StatusCode != 403 {
		t.Fatalf("denied: %v", rs)
	}
	if len(m.seen()) != 3 {
		t.Fatalf("MITM proxy saw a denied host: %q", m.seen())
	}

	// Without a parent: the MITM route alone, other names dialled directly.
	pe2 := startParentEnv(t, false, parentUser, "", func(c *Config) {
		c.Parent = (*Parent)(nil).WithMITM(mitmFor(m.path, "allowed.test"))
	})
	plainPort = portOf(t, pe2.plain.URL)
	if code, b, err := pe2.get(t, "http://other.test:"+plainPort+"/"); err != nil || code != 403 || !strings.HasPrefix(b, "direct from 127.0.0.1") {
		t.Fatalf("direct: %d %q %v", code, b, err)
	}
	if code, b, err := pe2.get(t, "http://allowed.test:"+plainPort+"/m"); err != nil || code != 200 || !strings.HasPrefix(b, "via parent") {
		t.Fatalf("mitm only: %d %q %v", code, b, err)
	}
}

// TestMITMProxyGuard: the resolved-address guard applies on the MITM
// route as on the parent's: a name resolving to a refused address never
// reaches the MITM proxy.
func TestMITMProxyGuard(t *testing.T) {
	m := startMITM(t)
	pol, err := netrule.Compile(netrule.Rules{Allowed: []string{"bad.test"}, DeniedAddresses: []string{"203.0.113.0/24"}})
	if err != nil {
		t.Fatal(err)
	}
	e := startProxyWith(t, baseRules, func(c *Config) {
		c.Policy = pol
		c.Resolver = &fakeResolver{hosts: map[string][]netip.Addr{"bad.test": {netip.MustParseAddr("203.0.113.5")}}}
		c.Parent = (*Parent)(nil).WithMITM(mitmFor(m.path, "bad.test"))
	})
	for _, raw := range []string{
		"CONNECT bad.test:443 HTTP/1.1\r\nHost: bad.test:443\r\n\r\n",
		"GET http://bad.test/ HTTP/1.1\r\nHost: bad.test\r\n\r\n",
	} {
		rs := rawRequest(t, e.httpAddr, raw, 1)
		if len(rs) != 1 || rs[0].StatusCode != 403 || rs[0].Header.Get("X-Proxy-Error") != errHdrAddress {
			t.Fatalf("%q: %v", raw, rs)
		}
	}
	if got := m.seen(); len(got) != 0 {
		t.Fatalf("MITM proxy saw %q", got)
	}
}

// TestMITMProxyUnreachable: a missing socket, and a socket whose listener
// runs as another user (socketPeerUID stands in for it), fail the
// connection with a 502 naming the socket; nothing reaches an untrusted
// listener.
func TestMITMProxyUnreachable(t *testing.T) {
	m := startMITM(t)
	missing := filepath.Join(t.TempDir(), "none.sock")
	for _, tc := range []struct {
		name, path, want string
		uid              uint32
	}{
		{"missing", missing, "MITM proxy unix:" + missing, uint32(os.Getuid())},
		{"peer-uid", m.path, "its listener runs as uid 12345", 12345},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved := socketPeerUID
			socketPeerUID = func(net.Conn) (uint32, error) { return tc.uid, nil }
			t.Cleanup(func() { socketPeerUID = saved })
			e := startProxyWith(t, baseRules, func(c *Config) {
				c.Parent = (*Parent)(nil).WithMITM(mitmFor(tc.path, "allowed.test"))
			})
			for _, raw := range []string{
				"CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n",
				"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
			} {
				rs := rawRequest(t, e.httpAddr, raw, 1)
				if len(rs) != 1 || rs[0].StatusCode != 502 || !strings.Contains(body(rs[0]), tc.want) {
					t.Fatalf("%q: %v", raw, rs)
				}
			}
			if rep := socksConnect(t, e.socksAddr, "allowed.test", "443"); rep == RepSucceeded {
				t.Fatal("socks succeeded")
			}
		})
	}
	if got := m.seen(); len(got) != 0 {
		t.Fatalf("the untrusted MITM proxy saw %q", got)
	}
}

// TestCheckSocketPath: a link, a non-socket and a world-writable
// directory without the sticky bit are refused before connecting.
func TestCheckSocketPath(t *testing.T) {
	m := startMITM(t)
	if err := checkSocketPath(m.path); err != nil {
		t.Fatalf("good socket: %v", err)
	}
	dir := t.TempDir()
	link := filepath.Join(dir, "link.sock")
	if err := os.Symlink(m.path, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file.sock")
	os.WriteFile(file, nil, 0o600)
	open := t.TempDir()
	os.Chmod(open, 0o777)
	ln, err := net.Listen("unix", filepath.Join(open, "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var pe *PeerError
	for _, p := range []string{link, file, filepath.Join(open, "s.sock")} {
		if err := checkSocketPath(p); !errors.As(err, &pe) {
			t.Errorf("%s: %v, want a *PeerError", p, err)
		}
	}
	os.Chmod(open, 0o777|os.ModeSticky)
	if err := checkSocketPath(filepath.Join(open, "s.sock")); err != nil {
		t.Errorf("sticky directory: %v", err)
	}
}

// TestMITMProxyTerminate: with Config.Terminate, a MITM-routed host is
// tunnelled opaquely to the MITM proxy (the client sees the upstream's
// own certificate), unless httpRules names it: then srt terminates it,
// filters its requests, and reaches the upstream through a CONNECT to
// the MITM proxy.
func TestMITMProxyTerminate(t *testing.T) {
	for _, filtered := range []bool{false, true} {
		t.Run(map[bool]string{false: "opaque", true: "filtered"}[filtered], func(t *testing.T) {
			m := startMITM(t)
			te := startTerm(t, baseRules, false, nil, func(c *Config) {
				c.Parent = (*Parent)(nil).WithMITM(mitmFor(m.path, "example.com"))
				if filtered {
					c.Filtering = Filtering{HTTPRules: NewHTTPRules([]HTTPRule{{Name: "r",
						Domains: []netrule.Pattern{mustPattern(t, "example.com")}, Methods: []string{"GET"}}})}
				}
			})
			roots := te.upPool
			if filtered {
				roots = te.caPool
			}
			resp, b := fetchAll(t, te.client(roots, false), mustReq(t, "https://"+te.target+"/x"))
			if resp.StatusCode != 200 || !strings.Contains(b, "path=/x") {
				t.Fatalf("GET: %d %q", resp.StatusCode, b)
			}
			if filtered {
				req, _ := http.NewRequest("DELETE", "https://"+te.target+"/x", nil)
				if resp, b := fetchAll(t, te.client(roots, false), req); resp.StatusCode != 403 {
					t.Fatalf("DELETE: %d %q", resp.StatusCode, b)
				}
			}
			if got := m.seen(); len(got) != 1 || got[0] != "CONNECT "+te.target {
				t.Fatalf("MITM proxy saw %q", got)
			}
			if te.hits.get() != 1 {
				t.Fatalf("upstream hits %d", te.hits.get())
			}
		})
	}
}
