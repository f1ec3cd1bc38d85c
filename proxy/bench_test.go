package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/srt-go/srt/credential"
	"github.com/srt-go/srt/mitm"
)

// zeroSource streams zeros to every client until it disconnects.
func zeroSource(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	buf := make([]byte, 256<<10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				for {
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// echoServer echoes every connection.
func echoServer(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

// connectVia opens a CONNECT tunnel to target ("allowed.test:port").
func connectVia(tb testing.TB, proxyAddr, target string) (net.Conn, *bufio.Reader) {
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		tb.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 200 Connection Established\r\n" {
		tb.Fatalf("CONNECT: %q %v", line, err)
	}
	br.ReadString('\n')
	return c, br
}

func allowedTarget(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return "allowed.test:" + p
}

const chunk = 4 << 20

// BenchmarkThroughput compares bulk download through a CONNECT tunnel with
// a direct loopback connection. Record with:
//
//	go test -run '^$' -bench Throughput -benchtime 256x -count 5 ./proxy
func BenchmarkThroughput(b *testing.B) {
	src := zeroSource(b)
	b.Run("direct", func(b *testing.B) {
		c, err := net.Dial("tcp", src)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		b.SetBytes(chunk)
		for b.Loop() {
			if _, err := io.CopyN(io.Discard, c, chunk); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("connect", func(b *testing.B) {
		e := startProxy(b, baseRules)
		c, br := connectVia(b, e.httpAddr, allowedTarget(src))
		defer c.Close()
		b.SetBytes(chunk)
		for b.Loop() {
			if _, err := io.CopyN(io.Discard, br, chunk); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSetup measures connection set-up latency: connect, CONNECT,
// 200, one echoed byte, close; p50 and p99 are reported as metrics.
//
//	go test -run '^$' -bench Setup -benchtime 1000x -count 3 ./proxy
func BenchmarkSetup(b *testing.B) {
	echo := echoServer(b)
	measure := func(b *testing.B, open func() (net.Conn, io.Reader)) {
		var lat []time.Duration
		one := make([]byte, 1)
		for b.Loop() {
			t0 := time.Now()
			c, r := open()
			c.Write(one)
			if _, err := io.ReadFull(r, one); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
			c.Close()
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	}
	b.Run("direct", func(b *testing.B) {
		measure(b, func() (net.Conn, io.Reader) {
			c, err := net.Dial("tcp", echo)
			if err != nil {
				b.Fatal(err)
			}
			return c, c
		})
	})
	b.Run("connect", func(b *testing.B) {
		e := startProxy(b, baseRules)
		measure(b, func() (net.Conn, io.Reader) { return connectVia(b, e.httpAddr, allowedTarget(echo)) })
	})
}

// TestConcurrent200 opens 200 CONNECT tunnels at once and pushes 64 KiB
// through each; none may fail.
func TestConcurrent200(t *testing.T) {
	e := startProxy(t, baseRules)
	echo := echoServer(t)
	payload := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	start := make(chan struct{})
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			c, err := net.Dial("tcp", e.httpAddr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\n\r\n", allowedTarget(echo))
			br := bufio.NewReader(c)
			if l, err := br.ReadString('\n'); err != nil || l != "HTTP/1.1 200 Connection Established\r\n" {
				errs <- fmt.Errorf("CONNECT: %q %v", l, err)
				return
			}
			br.ReadString('\n')
			go c.Write(payload)
			got := make([]byte, len(payload))
			if _, err := io.ReadFull(br, got); err != nil || !bytes.Equal(got, payload) {
				errs <- fmt.Errorf("echo: %v", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// benchUpstreamEnv, set to "1", makes the test binary the terminated
// benchmarks' upstream (benchUpstream) instead of running tests.
const benchUpstreamEnv = "SRT_BENCH_UPSTREAM"

// init, not TestMain (openssh_test.go's), so the helper needs no test of
// its own: it serves before any flag is parsed and exits when its stdin
// closes.
func init() {
	if os.Getenv(benchUpstreamEnv) == "1" {
		os.Exit(benchUpstream())
	}
}

// benchUpstream serves HTTPS, h2 and HTTP/1.1 by ALPN, with httptest's
// certificate (names example.com): GET /blob answers chunk bytes of
// unknown length, as a handler writing a large body does; anything else
// "ok". It prints its address, then the certificate's PEM, on stdout.
func benchUpstream() int {
	blob := bytes.Repeat([]byte{'z'}, chunk)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/blob" {
			w.Write(blob)
			return
		}
		io.WriteString(w, "ok")
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	fmt.Printf("%s\n", srv.Listener.Addr())
	pem.Encode(os.Stdout, &pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// startBenchTerm is startTerm with the upstream in another process (the
// test binary re-executed as benchUpstream): the upstream's TLS and HTTP
// then run in their own Go scheduler, so this process's profile and
// scheduling are the client's and the proxy's only. opaque excludes every
// target from termination; creds gives the proxy five masked secrets
// (injected into requests to the target, scrubbed from every response).
func startBenchTerm(b *testing.B, opaque, creds bool) *termEnv {
	b.Helper()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), benchUpstreamEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Wait() })
	br := bufio.NewReader(stdout)
	addr, err := br.ReadString('\n')
	if err != nil {
		b.Fatalf("upstream helper: %v", err)
	}
	var certPEM []byte
	for !bytes.Contains(certPEM, []byte("-----END CERTIFICATE-----")) {
		line, err := br.ReadBytes('\n')
		if err != nil {
			b.Fatalf("upstream helper: %v", err)
		}
		certPEM = append(certPEM, line...)
	}
	ca, err := mitm.NewCA()
	if err != nil {
		b.Fatal(err)
	}
	te := &termEnv{ca: ca, caPool: x509.NewCertPool(), upPool: x509.NewCertPool()}
	te.caPool.AddCert(ca.Certificate())
	if !te.upPool.AppendCertsFromPEM(certPEM) {
		b.Fatalf("upstream helper: no certificate in %q", certPEM)
	}
	_, port, _ := net.SplitHostPort(strings.TrimSpace(addr))
	te.target = "example.com:" + port
	term := &Terminate{CA: ca, RootCAs: te.upPool}
	if opaque {
		term.Exclude = func(string, int) bool { return true }
	}
	te.env = startProxyWith(b, baseRules, func(c *Config) {
		c.Terminate = term
		if creds {
			c.Credentials = benchCredentials()
		}
	})
	return te
}

// benchCredentials is a Set of five same-shape secrets of 40 bytes, each
// for every host.
func benchCredentials() *credential.Set {
	var secrets []credential.Secret
	for i := range 5 {
		real := []byte(fmt.Sprintf("ghp_%036d", i))
		secrets = append(secrets, credential.Secret{Name: fmt.Sprint("bench ", i), Real: real, Sentinel: credential.Mint(real),
			Hosts: func(string, int) bool { return true }})
	}
	return credential.NewSet(secrets, credential.Options{})
}

// benchTerm runs f once for each client protocol (h1, h2) and tunnel
// (opaque, terminated, terminated with masked credentials) with a client
// of that protocol. An opaque tunnel
// carries the client's own TLS session to the upstream, in the protocol
// the client offers; a terminated one has two: client to proxy in the
// client's protocol, proxy to upstream in h2 (the Transport's choice).
// The client's goroutines (and those they start) carry the pprof label
// side=client, so that a -cpuprofile separates the proxy's share:
//
//	go tool pprof -top -tagfocus side=client  proxy.test cpu.out  # client
//	go tool pprof -top -tagignore side=client proxy.test cpu.out  # proxy
func benchTerm(b *testing.B, f func(b *testing.B, get func(path string) *http.Response)) {
	for _, proto := range []string{"h1", "h2"} {
		b.Run(proto, func(b *testing.B) {
			for _, mode := range []string{"opaque", "terminated", "credentials"} {
				b.Run(mode, func(b *testing.B) {
					te := startBenchTerm(b, mode == "opaque", mode == "credentials")
					roots := te.caPool
					if mode == "opaque" {
						roots = te.upPool
					}
					c := te.client(roots, proto == "h2")
					defer c.CloseIdleConnections()
					wantMajor := map[string]int{"h1": 1, "h2": 2}[proto]
					get := func(path string) *http.Response {
						resp, err := c.Get("https://" + te.target + path)
						if err != nil {
							b.Fatal(err)
						}
						if resp.ProtoMajor != wantMajor {
							b.Fatalf("client spoke HTTP/%d, want %d", resp.ProtoMajor, wantMajor)
						}
						return resp
					}
					pprof.Do(context.Background(), pprof.Labels("side", "client"), func(context.Context) { f(b, get) })
				})
			}
		})
	}
}

// BenchmarkTerminatedRequest measures one GET on a kept-alive tunnel to
// a TLS upstream, terminated or opaque (the client's own TLS end to end);
// p50 and p99 are reported as metrics. Record with:
//
//	go test -run '^$' -bench TerminatedRequest -benchtime 1000x -count 5 ./proxy
func BenchmarkTerminatedRequest(b *testing.B) {
	benchTerm(b, func(b *testing.B, get func(string) *http.Response) {
		var lat []time.Duration
		for b.Loop() {
			t0 := time.Now()
			resp := get("/")
			if body, _ := io.ReadAll(resp.Body); string(body) != "ok" {
				b.Fatalf("got %q", body)
			}
			resp.Body.Close()
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	})
}

// BenchmarkTerminatedThroughput compares a bulk HTTPS download (4 MiB
// of unknown length, so streamed) through a terminated tunnel with one
// through an opaque tunnel. Record with:
//
//	go test -run '^$' -bench TerminatedThroughput -benchtime 64x -count 5 ./proxy
func BenchmarkTerminatedThroughput(b *testing.B) {
	benchTerm(b, func(b *testing.B, get func(string) *http.Response) {
		b.SetBytes(chunk)
		for b.Loop() {
			resp := get("/blob")
			if n, _ := io.Copy(io.Discard, resp.Body); n != chunk {
				b.Fatalf("got %d bytes", n)
			}
			resp.Body.Close()
		}
	})
}
