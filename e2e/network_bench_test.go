package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkNetwork measures srt's egress path in one run, from inside the
// sandbox (through the proxy srt serves on the listeners PID 1 handed it)
// and directly on the host (issue 3, "Speed"):
//
//   - bulk throughput: curl downloads 1 GiB from a local HTTP server, in
//     the sandbox through a CONNECT tunnel (curl --proxytunnel);
//   - connection set-up: 1,000 sequential connections, each opened
//     (through a CONNECT in the sandbox) and used for a one-byte echo;
//     p50 and p99;
//   - 200 concurrent connections, all held open at once, each echoing
//     1 KiB; failures counted.
//
// It prints a table and reports the figures as metrics. Speed is
// measured, never asserted. Run it with bench/network.sh, or:
//
//	go test ./e2e -run '^$' -bench Network -benchtime 1x
func BenchmarkNetwork(b *testing.B) {
	if sandboxErr != nil {
		b.Skip(sandboxErr)
	}
	dir, err := os.MkdirTemp(baseDir, "netbench-")
	if err != nil {
		b.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	bulkMiB := 1024
	if v, err := strconv.Atoi(os.Getenv("SRT_BENCH_MIB")); err == nil && v > 0 {
		bulkMiB = v
	}

	// Origin: /bulk streams bulkMiB MiB of zeros from memory.
	chunk := make([]byte, 1<<20)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(bulkMiB<<20))
		for i := 0; i < bulkMiB; i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer origin.Close()
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	client := filepath.Join(dir, "netbench")
	src := filepath.Join(dir, "netbench.go")
	os.WriteFile(src, []byte(benchClientSrc), 0o644)
	build := exec.Command("go", "build", "-o", client, src)
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GO111MODULE=off")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building the bench client: %v\n%s", err, out)
	}

	bulkURL := origin.URL + "/bulk"
	echoAddr := echo.Addr().String()
	// The same measurements, once with a proxy ("-" for none).
	script := func(proxy, curlProxy string) string {
		return fmt.Sprintf(`set -e
curl -sS --max-time 600 %s -o /dev/null -w 'bulk %%{speed_download}\n' %s
%s setup 1000 %s %s
%s concurrent 200 %s %s
`, curlProxy, bulkURL, client, proxy, echoAddr, client, proxy, echoAddr)
	}
	hostScript := script("-", "--noproxy '*'")
	// In the sandbox 127.0.0.1 is in NO_PROXY (it is the sandbox's own
	// loopback), so curl is told to use the proxy for it.
	sbScript := script("127.0.0.1:3128", "--noproxy '' --proxytunnel -x http://127.0.0.1:3128")

	sf := filepath.Join(dir, "settings.json")
	os.WriteFile(sf, []byte(`{"network":{"allowedDomains":["127.0.0.1"],"deniedDomains":[]}}`), 0o644)
	for b.Loop() {
		out, err := exec.Command("sh", "-c", hostScript).CombinedOutput()
		if err != nil {
			b.Fatalf("host run: %v\n%s", err, out)
		}
		host := parseBench(b, string(out))
		cmd := exec.Command(srtBin, "-s", sf, "--", "sh", "-c", sbScript)
		cmd.Dir = dir
		var serr strings.Builder
		cmd.Stderr = &serr
		sout, err := cmd.Output()
		if err != nil {
			b.Fatalf("sandbox run: %v\n%s\n%s", err, sout, serr.String())
		}
		sb := parseBench(b, string(sout))
		printBenchTable(bulkMiB, host, sb)
		b.ReportMetric(sb["bulk"]/1e6, "sandbox-MB/s")
		b.ReportMetric(host["bulk"]/1e6, "host-MB/s")
		b.ReportMetric(sb["p50"], "sandbox-p50-µs")
		b.ReportMetric(host["p50"], "host-p50-µs")
		b.ReportMetric(sb["p99"], "sandbox-p99-µs")
		b.ReportMetric(host["p99"], "host-p99-µs")
		b.ReportMetric(sb["failed"], "sandbox-200-failures")
	}
}

// parseBench reads "key value" lines: bulk (bytes/s), p50/p99 (µs),
// ok/failed/wall_ms.
func parseBench(b *testing.B, out string) map[string]float64 {
	m := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		for i := 0; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i+1], 64); err == nil {
				m[f[i]] = v
			}
		}
	}
	for _, k := range []string{"bulk", "p50", "p99", "ok", "failed", "wall_ms"} {
		if _, ok := m[k]; !ok {
			b.Fatalf("no %q in the bench output:\n%s", k, out)
		}
	}
	return m
}

func printBenchTable(mib int, host, sb map[string]float64) {
	fmt.Printf("\n| Network (%d MiB bulk; 1,000 set-ups; 200 concurrent) | host, direct | sandbox, via srt's proxy | sandbox vs host |\n", mib)
	fmt.Printf("|---|---|---|---|\n")
	fmt.Printf("| bulk throughput, CONNECT tunnel (curl) | %.0f MB/s | %.0f MB/s | %.0f%% |\n",
		host["bulk"]/1e6, sb["bulk"]/1e6, 100*sb["bulk"]/host["bulk"])
	fmt.Printf("| connection set-up + 1-byte echo, p50 | %.0f µs | %.0f µs | +%.0f µs |\n", host["p50"], sb["p50"], sb["p50"]-host["p50"])
	fmt.Printf("| connection set-up + 1-byte echo, p99 | %.0f µs | %.0f µs | +%.0f µs |\n", host["p99"], sb["p99"], sb["p99"]-host["p99"])
	fmt.Printf("| 200 concurrent connections: ok / failed (wall) | %.0f / %.0f (%.0f ms) | %.0f / %.0f (%.0f ms) | |\n\n",
		host["ok"], host["failed"], host["wall_ms"], sb["ok"], sb["failed"], sb["wall_ms"])
}

// benchClientSrc is the measuring client. proxy "-" means dial the target
// directly; otherwise open a CONNECT tunnel through proxy.
const benchClientSrc = `package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

func open(proxy, target string) (net.Conn, error) {
	if proxy == "-" {
		return net.Dial("tcp", target)
	}
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
		c.Close()
		return nil, fmt.Errorf("CONNECT: %q %v", line, err)
	}
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			c.Close()
			return nil, err
		}
		if l == "\r\n" {
			break
		}
	}
	return c, nil
}

func echo(c net.Conn, n int) error {
	b := make([]byte, n)
	if _, err := c.Write(b); err != nil {
		return err
	}
	_, err := io.ReadFull(c, b)
	return err
}

func main() {
	mode, proxy, target := os.Args[1], os.Args[3], os.Args[4]
	n, _ := strconv.Atoi(os.Args[2])
	switch mode {
	case "setup":
		d := make([]time.Duration, 0, n)
		for i := 0; i < n; i++ {
			t := time.Now()
			c, err := open(proxy, target)
			if err == nil {
				err = echo(c, 1)
				c.Close()
			}
			if err != nil {
				fmt.Println("error", err)
				os.Exit(1)
			}
			d = append(d, time.Since(t))
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		fmt.Printf("p50 %.1f p99 %.1f\n", float64(d[n/2].Nanoseconds())/1e3, float64(d[n*99/100].Nanoseconds())/1e3)
	case "concurrent":
		var wg, opened sync.WaitGroup
		var mu sync.Mutex
		ok, failed := 0, 0
		var firstErr error
		release := make(chan struct{})
		start := time.Now()
		for i := 0; i < n; i++ {
			wg.Add(1)
			opened.Add(1)
			go func() {
				defer wg.Done()
				c, err := open(proxy, target)
				opened.Done()
				<-release // hold every connection open at once
				if err == nil {
					c.SetDeadline(time.Now().Add(30 * time.Second))
					err = echo(c, 1024)
					c.Close()
				}
				mu.Lock()
				if err != nil {
					failed++
					if firstErr == nil {
						firstErr = err
					}
				} else {
					ok++
				}
				mu.Unlock()
			}()
		}
		opened.Wait()
		close(release)
		wg.Wait()
		fmt.Printf("ok %d failed %d wall_ms %.1f\n", ok, failed, float64(time.Since(start).Microseconds())/1e3)
		if firstErr != nil {
			fmt.Fprintln(os.Stderr, "first failure:", firstErr)
		}
	}
}
`
