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
	"os/exec"
	"strings"
	"testing"

	"github.com/srt-go/srt/netrule"
	"github.com/srt-go/srt/proxy"
)

// e2e runs the real host proxy on loopback TCP listeners, as srt serves
// it on the listeners the sandbox's PID 1 hands over.
type e2e struct {
	httpAddr, socksAddr string
	originPort          string
	echoAddr            string
}

func startE2E(t *testing.T) e2e {
	t.Helper()
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
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.HTTP().Serve(context.Background(), hl)
	go srv.SOCKS5().Serve(context.Background(), sl)
	t.Cleanup(func() { srv.Close() })

	_, eport, _ := net.SplitHostPort(echo.Addr().String())
	return e2e{
		httpAddr: hl.Addr().String(), socksAddr: sl.Addr().String(),
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

// TestEndToEndCurl: curl → proxy → origin.
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

func TestLoopbackAddrs(t *testing.T) {
	got := LoopbackAddrs(3128)
	if len(got) != 2 || got[0] != "127.0.0.1:3128" || got[1] != "[::1]:3128" {
		t.Fatalf("LoopbackAddrs(3128) = %q", got)
	}
}
