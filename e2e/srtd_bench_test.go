package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/srt-go/srt/client"
	"github.com/srt-go/srt/port"
)

var srtdBenchN = flag.Int("srtd.bench", 0, "run TestSrtdBench with this many sessions (bench/srtd.sh)")

// TestSrtdBench measures srtd through its API (bench/srtd.sh). Speed is
// measured, never asserted.
func TestSrtdBench(t *testing.T) {
	if *srtdBenchN == 0 {
		t.Skip("run with -srtd.bench=N (bench/srtd.sh)")
	}
	requireSandbox(t)
	n := *srtdBenchN
	me := &account{name: "me", uid: os.Getuid(), gid: os.Getgid(), home: os.Getenv("HOME"), direct: true}
	d := startSrtd(t, me, "--max-sessions", strconv.Itoa(4*n+10))
	ctx := context.Background()
	pct := func(xs []time.Duration, p float64) time.Duration {
		slices.Sort(xs)
		return xs[min(len(xs)-1, int(p*float64(len(xs))))]
	}
	ms := func(x time.Duration) string { return fmt.Sprintf("%.1fms", float64(x.Microseconds())/1000) }

	// Launch to ready: POST /v1/sandboxes returns a warm handle.
	var launch []time.Duration
	for i := range n {
		t0 := time.Now()
		if _, err := d.c.Launch(ctx, port.Spec{SessionID: fmt.Sprint("l", i), WorkspaceID: "w"}, port.BackendNative); err != nil {
			t.Fatal(err)
		}
		launch = append(launch, time.Since(t0))
	}
	fmt.Printf("srtd-bench launch-to-ready (native, sequential, n=%d): p50 %s p99 %s\n", n, ms(pct(launch, .5)), ms(pct(launch, .99)))

	// Exec round trip: POST exec of `true` to its exit event.
	var rt []time.Duration
	for range 200 {
		t0 := time.Now()
		if _, _, code, err := d.c.Run(ctx, "l0", client.ExecRequest{Argv: []string{"true"}}); err != nil || code != 0 {
			t.Fatal(code, err)
		}
		rt = append(rt, time.Since(t0))
	}
	fmt.Printf("srtd-bench exec round trip (true, n=200): p50 %s p99 %s\n", ms(pct(rt, .5)), ms(pct(rt, .99)))

	// Memory per idle warm session: what the n sessions above cost the
	// machine (MemAvailable) and srtd itself (RSS), against n more.
	availBefore, rssBefore := memAvailableKiB(), rssKiB(d.cmd.Process.Pid)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range n {
		wg.Go(func() {
			if _, err := d.c.Launch(ctx, port.Spec{SessionID: fmt.Sprint("c", i), WorkspaceID: "w"}, port.BackendNative); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	el := time.Since(t0)
	fmt.Printf("srtd-bench sessions per second (%d concurrent launches): %.1f/s\n", n, float64(n)/el.Seconds())
	time.Sleep(time.Second)
	availAfter, rssAfter := memAvailableKiB(), rssKiB(d.cmd.Process.Pid)
	fmt.Printf("srtd-bench memory per idle warm session (n=%d): %.2f MiB of the machine (MemAvailable), srtd RSS +%.2f MiB\n",
		n, float64(availBefore-availAfter)/1024/float64(n), float64(rssAfter-rssBefore)/1024/float64(n))
}

func memAvailableKiB() int64 {
	b, _ := os.ReadFile("/proc/meminfo")
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemAvailable:" {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v
		}
	}
	return 0
}

func rssKiB(pid int) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v
		}
	}
	return 0
}
