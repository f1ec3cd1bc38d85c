package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
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

// BenchmarkTerminatedRequest measures one GET on a kept-alive tunnel to
// a TLS upstream, terminated or opaque (the client's own TLS end to end);
// p50 and p99 are reported as metrics. Record with:
//
//	go test -run '^$' -bench TerminatedRequest -benchtime 2000x -count 5 ./proxy
func BenchmarkTerminatedRequest(b *testing.B) {
	for _, mode := range []string{"opaque", "terminated"} {
		b.Run(mode, func(b *testing.B) {
			te := startTerm(b, baseRules, true, func(tm *Terminate) {
				if mode == "opaque" {
					tm.Exclude = func(string, int) bool { return true }
				}
			})
			roots := te.caPool
			if mode == "opaque" {
				roots = te.upPool
			}
			c := te.client(roots, false)
			u := "https://" + te.target + "/"
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				resp, err := c.Get(u)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkTerminatedThroughput compares a bulk HTTPS download through a
// terminated tunnel with one through an opaque tunnel. Record with:
//
//	go test -run '^$' -bench TerminatedThroughput -benchtime 64x -count 5 ./proxy
func BenchmarkTerminatedThroughput(b *testing.B) {
	blob := bytes.Repeat([]byte{'z'}, chunk)
	for _, mode := range []string{"opaque", "terminated"} {
		b.Run(mode, func(b *testing.B) {
			te := startTerm(b, baseRules, true, func(tm *Terminate) {
				if mode == "opaque" {
					tm.Exclude = func(string, int) bool { return true }
				}
			})
			te.up.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(blob) })
			roots := te.caPool
			if mode == "opaque" {
				roots = te.upPool
			}
			c := te.client(roots, false)
			u := "https://" + te.target + "/blob"
			b.SetBytes(chunk)
			for b.Loop() {
				resp, err := c.Get(u)
				if err != nil {
					b.Fatal(err)
				}
				if n, _ := io.Copy(io.Discard, resp.Body); n != chunk {
					b.Fatalf("got %d bytes", n)
				}
				resp.Body.Close()
			}
		})
	}
}
