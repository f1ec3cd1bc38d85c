package port

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkNativeLaunch measures launch-to-ready (Launch returns once PID 1
// serves execs) plus destroy; it reports sessions per second and the RSS
// of an idle warm session (bubblewrap + PID 1).
//
//	go test -run '^$' -bench NativeLaunch -count 5 ./port
func BenchmarkNativeLaunch(b *testing.B) {
	rt := requireNative(b)
	ws := b.TempDir()
	var launch time.Duration
	var rss []float64
	i := 0
	for b.Loop() {
		i++
		t0 := time.Now()
		sb, err := rt.Launch(context.Background(), Spec{SessionID: "bench" + strconv.Itoa(i), Mode: ModeReview,
			BindMounts: []BindMount{{HostPath: ws, GuestPath: "/workspace"}}}, "")
		if err != nil {
			b.Fatal(err)
		}
		launch += time.Since(t0)
		if i <= 20 {
			d := sb.Handle().Details
			rss = append(rss, rssMiB(d["bwrapPid"].(int))+rssMiB(d["pid1"].(int)))
		}
		sb.Destroy(context.Background())
	}
	b.ReportMetric(float64(launch.Microseconds())/1000/float64(i), "launch-ms")
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "sessions/s")
	slices.Sort(rss)
	b.ReportMetric(rss[len(rss)/2], "idle-rss-MiB")
}

// BenchmarkNativeExec measures an exec round trip (exec true to its exit
// event) in one warm sandbox, with p50 and p99.
//
//	go test -run '^$' -bench NativeExec -count 5 ./port
func BenchmarkNativeExec(b *testing.B) {
	rt := requireNative(b)
	sb, _ := launchWS(b, rt, "bench-exec", ModeReview)
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		ch, err := sb.Exec(context.Background(), ExecRequest{Argv: []string{"true"}})
		if err != nil {
			b.Fatal(err)
		}
		for range ch {
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// rssMiB reads VmRSS of a host pid.
func rssMiB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}
