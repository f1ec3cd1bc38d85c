package relay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/srt-go/srt/netrule"
	"github.com/srt-go/srt/proxy"
)

// unixEcho serves an echo that answers after the client half-closes:
// "echo: <everything received>".
func unixEcho(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "relay") // short path: sun_path is 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "echo.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c)
				fmt.Fprintf(c, "echo: %s", b)
			}()
		}
	}()
	return path
}

func startRelay(t *testing.T, fwds []Forward) (*Relay, chan error) {
	t.Helper()
	r, err := Listen(context.Background(), fwds, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return r, done
}

func TestRelayToUnixSocket(t *testing.T) {
	path := unixEcho(t)
	addrs := []string{"127.0.0.1:0", "[::1]:0"}
	r, _ := startRelay(t, []Forward{{ListenAddrs: addrs, UnixPath: path}})
	if len(r.Addrs())+len(r.Skipped()) != 2 || len(r.Addrs()) == 0 {
		t.Fatalf("bound %v, skipped %v", r.Addrs(), r.Skipped())
	}
	for _, a := range r.Addrs() {
		t.Run(a.String(), func(t *testing.T) {
			c, err := net.Dial("tcp", a.String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			payload := bytes.Repeat([]byte("x"), 1<<20)
			go func() {
				c.Write(payload)
				c.(*net.TCPConn).CloseWrite() // the answer comes after EOF
			}()
			got, err := io.ReadAll(c)
			if err != nil || string(got) != "echo: "+string(payload) {
				t.Fatalf("got %d bytes, %v", len(got), err)
			}
		})
	}
}

func TestListenSkipsUnavailableFamily(t *testing.T) {
	path := unixEcho(t)
	// 2001:db8::/32 is documentation space, never on lo: EADDRNOTAVAIL,
	// the same error as ::1 on a kernel with IPv6 disabled.
	r, err := Listen(context.Background(), []Forward{{ListenAddrs: []string{"127.0.0.1:0", "[2001:db8::1]:0"}, UnixPath: path}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if len(r.Addrs()) != 1 || len(r.Skipped()) != 1 || r.Skipped()[0] != "[2001:db8::1]:0" {
		t.Fatalf("bound %v skipped %v", r.Addrs(), r.Skipped())
	}
	if _, err := Listen(context.Background(), []Forward{{ListenAddrs: []string{"[2001:db8::1]:0"}, UnixPath: path}}, nil); err == nil {
		t.Fatal("Listen with nothing bindable succeeded")
	}
	busy, _ := net.Listen("tcp", "127.0.0.1:0")
	defer busy.Close()
	_, err = Listen(context.Background(), []Forward{{ListenAddrs: []string{busy.Addr().String()}, UnixPath: path}}, nil)
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("busy port: %v", err)
	}
}

func TestRelayCloseEndsConnections(t *testing.T) {
	path := unixEcho(t)
	r, err := Listen(context.Background(), []Forward{{ListenAddrs: []string{"127.0.0.1:0"}, UnixPath: path}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Serve(context.Background()) }()
	c, err := net.Dial("tcp", r.Addrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("pending")) // echo waits for EOF, so the relay holds the connection
	time.Sleep(50 * time.Millisecond)
	r.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Serve after Close: %v", err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(c); err != nil && !isReset(err) {
		t.Fatalf("read after Close: %v", err)
	}
}

func isReset(err error) bool { return strings.Contains(err.Error(), "reset") }

// e2e runs the real host proxy on unix sockets in a 0700 directory and
// the relay in front of it, as the sandbox will.
type e2e struct {
	httpAddr, socksAddr string
	originPort          string
	echoAddr            string
}

func startE2E(t *testing.T) e2e {
	t.Helper()
	dir, err := os.MkdirTemp("", "srt-proxy")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o700)

	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "origin says hi to %s", r.Host)
	}))
	t.Cleanup(origin.Close)
	echo, _ := net.Listen("tcp", "127.0.0.1:0")
	t.Cleanup(func() { echo.Close() })
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()

	pol := netrule.MustCompile(netrule.Rules{
		Allowed:       []string{"allowed.test", "127.0.0.1"},
		Denied:        []string{"denied.test"},
		DeniedReasons: map[string]string{"denied.test": "no git from here"},
	})
	res := staticResolver{"allowed.test": loop, "denied.test": loop}
	srv, err := proxy.New(proxy.Config{Policy: pol, Resolver: res})
	if err != nil {
		t.Fatal(err)
	}
	hs, ss := filepath.Join(dir, "http.sock"), filepath.Join(dir, "socks.sock")
	hl, err := net.Listen("unix", hs)
	if err != nil {
		t.Fatal(err)
	}
	sl, err := net.Listen("unix", ss)
	if err != nil {
		t.Fatal(err)
	}
	go srv.HTTP().Serve(context.Background(), hl)
	go srv.SOCKS5().Serve(context.Background(), sl)
	t.Cleanup(func() { srv.Close() })

	r, _ := startRelay(t, []Forward{
		{ListenAddrs: []string{"127.0.0.1:0"}, UnixPath: hs},
		{ListenAddrs: []string{"127.0.0.1:0"}, UnixPath: ss},
	})
	_, eport, _ := net.SplitHostPort(echo.Addr().String())
	return e2e{
		httpAddr: r.Addrs()[0].String(), socksAddr: r.Addrs()[1].String(),
		originPort: origin.URL[strings.LastIndexByte(origin.URL, ':')+1:],
		echoAddr:   "allowed.test:" + eport,
	}
}

var loop = []netip.Addr{netip.MustParseAddr("127.0.0.1")}

type staticResolver map[string][]netip.Addr

func (s staticResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, ok := s[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// TestEndToEndCurl: curl → relay TCP → unix socket → proxy → origin.
func TestEndToEndCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not installed")
	}
	e := startE2E(t)
	for _, tt := range []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"http-proxy", []string{"-x", "http://" + e.httpAddr, "http://allowed.test:" + e.originPort + "/"}, 0, "origin says hi to allowed.test:" + e.originPort},
		{"socks5h", []string{"--socks5-hostname", e.socksAddr, "http://allowed.test:" + e.originPort + "/"}, 0, "origin says hi to allowed.test:" + e.originPort},
		{"http-denied", []string{"-x", "http://" + e.httpAddr, "http://denied.test:" + e.originPort + "/"}, 0, "Connection blocked by network allowlist: no git from here\n"},
		{"socks5h-denied", []string{"--socks5-hostname", e.socksAddr, "http://denied.test:" + e.originPort + "/"}, 97, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := exec.Command(curl, append([]string{"-sS", "--max-time", "10"}, tt.args...)...).Output()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			}
			if code != tt.code || string(out) != tt.out {
				t.Fatalf("curl exit %d %q, want %d %q", code, out, tt.code, tt.out)
			}
		})
	}
}

func TestProxyCommand(t *testing.T) {
	e := startE2E(t)
	ctx := context.Background()

	pr, pw := io.Pipe()
	var out, errb bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- ProxyCommand(ctx, e.httpAddr, e.echoAddr, pr, &out, &errb) }()
	pw.Write([]byte("SSH-2.0-test\r\n"))
	pw.Close() // end of stdin: half-close, the echo server then closes
	if err := <-done; err != nil {
		t.Fatalf("ProxyCommand: %v (%s)", err, errb.String())
	}
	if out.String() != "SSH-2.0-test\r\n" {
		t.Fatalf("stdout %q", out.String())
	}

	out.Reset()
	err := ProxyCommand(ctx, e.httpAddr, "denied.test:22", strings.NewReader(""), &out, &errb)
	var re *RefusedError
	if !errors.As(err, &re) || re.StatusCode != 403 || re.Reason != "no git from here" {
		t.Fatalf("refused: %v", err)
	}
	if errb.String() != "srt proxy-connect: denied.test:22: no git from here\n" {
		t.Fatalf("stderr %q", errb.String())
	}
	if _, err := Dial(ctx, e.httpAddr, "allowed.test:1"); !errors.As(err, &re) || re.StatusCode != 502 {
		t.Fatalf("upstream down: %v", err)
	}
}
