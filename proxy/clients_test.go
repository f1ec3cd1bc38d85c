package proxy

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/srt-go/srt/netrule"
)

// run executes a real client and returns stdout, stderr and exit code.
func run(t *testing.T, env []string, name string, args ...string) (string, string, int) {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed: %v", name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(cleanEnv(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out.String(), errb.String(), code
}

// cleanEnv is the test process environment without proxy variables.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasSuffix(strings.ToLower(k), "_proxy") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func proxyEnv(t *testing.T, e *env) []string {
	t.Helper()
	_, hp, _ := net.SplitHostPort(e.httpAddr)
	_, sp, _ := net.SplitHostPort(e.socksAddr)
	h, _ := strconv.Atoi(hp)
	s, _ := strconv.Atoi(sp)
	return Env(h, s)
}

func TestCurl(t *testing.T) {
	e := startProxy(t, baseRules)
	srv, _ := origin(t)
	tlsSrv := newTLSOrigin(t)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw}), 0o600)
	port, tport := portOf(t, srv.URL), portOf(t, tlsSrv.URL)
	hp := "http://" + e.httpAddr

	tests := []struct {
		name   string
		args   []string
		env    bool // use Env() instead of -x
		code   int
		stdout string // exact, when set
		stderr string // substring, when set
	}{
		{name: "http-allowed", args: []string{"-sS", "-x", hp, "http://allowed.test:" + port + "/c"},
			stdout: "hello from origin allowed.test:" + port + " /c"},
		{name: "http-allowed-env", env: true, args: []string{"-sS", "http://allowed.test:" + port + "/env"},
			stdout: "hello from origin allowed.test:" + port + " /env"},
		{name: "http-denied", args: []string{"-sS", "-i", "-x", hp, "http://denied.test:" + port + "/"},
			stdout: "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nX-Proxy-Error: blocked-by-allowlist\r\n" +
				"Content-Length: 90\r\nConnection: close\r\n\r\nConnection blocked by network allowlist: " + deniedReason + "\n"},
		{name: "https-allowed", args: []string{"-sS", "-x", hp, "--cacert", ca, "https://example.com:" + tport + "/t"},
			stdout: "tls ok /t"},
		{name: "https-allowed-env", env: true, args: []string{"-sS", "--cacert", ca, "https://example.com:" + tport + "/e"},
			stdout: "tls ok /e"},
		{name: "https-denied", args: []string{"-sS", "-x", hp, "-k", "https://denied.test:" + tport + "/"},
			code: 56, stderr: "CONNECT tunnel failed, response 403"},
		{name: "https-denied-verbose-reason", args: []string{"-sS", "-v", "-x", hp, "-k", "https://denied.test:" + tport + "/"},
			code: 56, stderr: "< HTTP/1.1 403 " + deniedReason},
		{name: "socks5h-allowed", args: []string{"-sS", "--socks5-hostname", e.socksAddr, "http://allowed.test:" + port + "/s"},
			stdout: "hello from origin allowed.test:" + port + " /s"},
		{name: "socks5h-https", args: []string{"-sS", "--socks5-hostname", e.socksAddr, "--cacert", ca, "https://example.com:" + tport + "/st"},
			stdout: "tls ok /st"},
		{name: "socks5h-denied", args: []string{"-sS", "--socks5-hostname", e.socksAddr, "http://denied.test:" + port + "/"},
			code: 97, stderr: "(2)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var env []string
			if tt.env {
				env = proxyEnv(t, e)
			}
			out, errOut, code := run(t, env, "curl", tt.args...)
			if code != tt.code {
				t.Fatalf("curl exit %d, want %d; stderr %s", code, tt.code, errOut)
			}
			if tt.stdout != "" && out != tt.stdout {
				t.Errorf("stdout\n got %q\nwant %q", out, tt.stdout)
			}
			if tt.stderr != "" && !strings.Contains(errOut, tt.stderr) {
				t.Errorf("stderr %q does not contain %q", errOut, tt.stderr)
			}
		})
	}
}

const pyClient = `
import ssl, sys, urllib.request, urllib.error
url, ca = sys.argv[1], sys.argv[2]
ctx = ssl.create_default_context(cafile=ca)
try:
    with urllib.request.urlopen(url, context=ctx, timeout=10) as r:
        print(r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode(), end="")
except urllib.error.URLError as e:
    print("URLError", e.reason)
`

// TestPythonUrllib uses the environment from Env, as the sandbox will.
func TestPythonUrllib(t *testing.T) {
	e := startProxy(t, baseRules)
	srv, _ := origin(t)
	tlsSrv := newTLSOrigin(t)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw}), 0o600)
	port, tport := portOf(t, srv.URL), portOf(t, tlsSrv.URL)
	for _, tt := range []struct{ name, url, want string }{
		{"http-allowed", "http://allowed.test:" + port + "/py", "200 hello from origin allowed.test:" + port + " /py\n"},
		{"http-denied", "http://denied.test:" + port + "/", "403 Connection blocked by network allowlist: " + deniedReason + "\n"},
		{"https-allowed", "https://example.com:" + tport + "/pys", "200 tls ok /pys\n"},
		{"https-denied", "https://denied.test:" + tport + "/", "URLError Tunnel connection failed: 403 " + deniedReason + "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, proxyEnv(t, e), "python3", "-c", pyClient, tt.url, ca)
			if code != 0 || out != tt.want {
				t.Fatalf("python exit %d\n got %q\nwant %q\nstderr %s", code, out, tt.want, errOut)
			}
		})
	}
}

// TestCloseEndsTunnels: Close closes listeners and open tunnels, waits for
// their goroutines, and leaves none behind.
func TestCloseEndsTunnels(t *testing.T) {
	before := runtime.NumGoroutine()
	pol := netrule.MustCompile(baseRules)
	srv, _ := New(Config{Policy: pol, Resolver: &fakeResolver{hosts: map[string][]netip.Addr{"allowed.test": {loop4}}}})
	sockDir := t.TempDir()
	hl, err := net.Listen("unix", filepath.Join(sockDir, "http.sock"))
	if err != nil {
		t.Fatal(err)
	}
	up := listen(t)
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	done := make(chan error, 1)
	go func() { done <- srv.HTTP().Serve(context.Background(), hl) }()

	var clients []net.Conn
	for range 3 {
		c, err := net.Dial("unix", hl.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte("CONNECT allowed.test:" + portOf(t, up.Addr().String()) + " HTTP/1.1\r\n\r\n"))
		buf := make([]byte, 39)
		if _, err := c.Read(buf); err != nil || !strings.HasPrefix(string(buf), "HTTP/1.1 200") {
			t.Fatalf("CONNECT over unix socket: %q %v", buf, err)
		}
		clients = append(clients, c)
	}
	if n := srv.ActiveConns(); n != 3 {
		t.Fatalf("ActiveConns = %d, want 3", n)
	}
	srv.Close()
	if err := <-done; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
	for _, c := range clients {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatal("tunnel still open after Close")
		}
	}
	if n := srv.ActiveConns(); n != 0 {
		t.Fatalf("ActiveConns after Close = %d", n)
	}
	if err := srv.HTTP().Serve(context.Background(), listen(t)); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve after Close: %v", err)
	}
	up.Close()
	for i := 0; runtime.NumGoroutine() > before && i < 100; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("goroutines: %d before, %d after Close", before, n)
	}
}

// TestServeContextCancel: cancelling Serve's context closes its listener
// and the connections it accepted.
func TestServeContextCancel(t *testing.T) {
	srv, _ := New(Config{})
	defer srv.Close()
	ln := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.SOCKS5().Serve(ctx, ln) }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for srv.ActiveConns() != 1 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve: %v", err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("connection open after cancel")
	}
}
