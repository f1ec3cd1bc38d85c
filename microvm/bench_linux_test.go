package microvm_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/srt-go/srt/microvm"
)

// Speed is measured, never asserted. bench/microvm.sh runs these and
// records the figures in BENCHMARKS.md.

func p50(d []time.Duration) float64 {
	slices.Sort(d)
	return float64(d[len(d)/2].Microseconds()) / 1000
}

func benchConfig() microvm.Config {
	return microvm.Config{InitPath: guestInit, BootTimeout: 2 * time.Minute}
}

// BenchmarkLaunchToReady is Launch (QEMU start to agent ready, shares
// and relays configured) followed by Close.
func BenchmarkLaunchToReady(b *testing.B) {
	requireQEMU(b)
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		vm, err := microvm.Launch(context.Background(), benchConfig())
		if err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
		vm.Close()
	}
	b.ReportMetric(p50(ds), "p50-ms")
}

// BenchmarkExecRoundTrip runs "true" in a warm VM: open a stream, start,
// exit status back.
func BenchmarkExecRoundTrip(b *testing.B) {
	requireQEMU(b)
	vm, err := microvm.Launch(context.Background(), benchConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer vm.Close()
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		p, err := vm.Exec(context.Background(), microvm.ExecRequest{Argv: []string{"true"}})
		if err != nil {
			b.Fatal(err)
		}
		if code, err := p.Wait(); code != 0 || err != nil {
			b.Fatal(code, err)
		}
		ds = append(ds, time.Since(start))
	}
	b.ReportMetric(p50(ds), "p50-ms")
}

// BenchmarkWarmCapacity boots VMs one after the other and keeps them
// warm, up to SRT_MICROVM_BENCH_MAX (default 16), and reports per idle
// VM the QEMU RSS and CPU use, and the exec round trip with all of them
// running. Run it with -benchtime=1x.
func BenchmarkWarmCapacity(b *testing.B) {
	requireQEMU(b)
	max := 16
	if v, err := strconv.Atoi(os.Getenv("SRT_MICROVM_BENCH_MAX")); err == nil && v > 0 {
		max = v
	}
	for b.Loop() {
		base := b.TempDir()
		os.Setenv("SRT_MICROVM_RUNDIR", base)
		var vms []*microvm.VM
		defer func() {
			for _, vm := range vms {
				vm.Close()
			}
			os.Unsetenv("SRT_MICROVM_RUNDIR")
		}()
		var boots []time.Duration
		for len(vms) < max {
			start := time.Now()
			vm, err := microvm.Launch(context.Background(), benchConfig())
			if err != nil {
				b.Logf("VM %d did not boot: %v", len(vms)+1, err)
				break
			}
			boots = append(boots, time.Since(start))
			vms = append(vms, vm)
		}
		time.Sleep(3 * time.Second) // let the guests settle to idle
		pids := qemuProcesses(base)
		cpu0 := cpuTicks(pids)
		t0 := time.Now()
		time.Sleep(5 * time.Second)
		cpuPct := float64(cpuTicks(pids)-cpu0) / 100 / time.Since(t0).Seconds() * 100
		var rss float64
		for _, p := range pids {
			rss += rssMiB(p)
		}
		var rt []time.Duration
		for _, vm := range vms {
			start := time.Now()
			p, err := vm.Exec(context.Background(), microvm.ExecRequest{Argv: []string{"true"}})
			if err == nil {
				p.Wait()
			}
			rt = append(rt, time.Since(start))
		}
		n := float64(len(vms))
		b.ReportMetric(n, "vms-warm")
		b.ReportMetric(rss/n, "rss-MiB/vm")
		b.ReportMetric(cpuPct/n, "idle-cpu-%/vm")
		b.ReportMetric(p50(boots), "boot-p50-ms")
		b.ReportMetric(boots[len(boots)-1].Seconds()*1000, "last-boot-ms")
		b.ReportMetric(p50(rt), "exec-p50-ms-all-warm")
	}
}

// BenchmarkIdleRSS is the RSS of one idle VM's QEMU after boot, and
// the CPU it burns idle (TCG emulates the guest's timer ticks).
func BenchmarkIdleRSS(b *testing.B) {
	requireQEMU(b)
	for b.Loop() {
		base := b.TempDir()
		os.Setenv("SRT_MICROVM_RUNDIR", base)
		vm, err := microvm.Launch(context.Background(), benchConfig())
		os.Unsetenv("SRT_MICROVM_RUNDIR")
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		pids := qemuProcesses(base)
		var rss float64
		for _, p := range pids {
			rss += rssMiB(p)
		}
		cpu0, t0 := cpuTicks(pids), time.Now()
		time.Sleep(3 * time.Second)
		cpuPct := float64(cpuTicks(pids)-cpu0) / 100 / time.Since(t0).Seconds() * 100
		vm.Close()
		b.ReportMetric(rss, "rss-MiB")
		b.ReportMetric(cpuPct, "idle-cpu-%")
	}
}

func rssMiB(pid int) float64 {
	b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			var kb float64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb / 1024
		}
	}
	return 0
}

// cpuTicks sums utime+stime (clock ticks, 100/s) of pids.
func cpuTicks(pids []int) int64 {
	var t int64
	for _, p := range pids {
		b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "stat"))
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			f := strings.Fields(s[i+2:])
			if len(f) > 12 {
				u, _ := strconv.ParseInt(f[11], 10, 64)
				st, _ := strconv.ParseInt(f[12], 10, 64)
				t += u + st
			}
		}
	}
	return t
}
