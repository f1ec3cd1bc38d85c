package microvm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

var (
	probeMu    sync.Mutex
	probeCache = map[string]ProbeResult{}
)

// Probe reports whether this host can run microvms with the default
// configuration: ProbeConfig(ctx, Config{}).
func Probe(ctx context.Context) ProbeResult { return ProbeConfig(ctx, Config{}) }

// ProbeConfig boots a test VM with cfg's QEMU, kernel cache, init and
// accelerator settings and checks that its agent answers. The verdict is cached for
// the life of the process, per (QEMUPath, InitPath, CacheDir, Accel): the
// first call takes a boot (about 2-3 s under TCG, plus the one-time
// kernel download), later calls nothing. ctx bounds the test boot; a
// probe cut short by ctx is not cached.
func ProbeConfig(ctx context.Context, cfg Config) ProbeResult {
	key := fmt.Sprintf("%q %q %q %q", cfg.QEMUPath, cfg.InitPath, cfg.CacheDir, cfg.Accel)
	probeMu.Lock()
	defer probeMu.Unlock()
	if r, ok := probeCache[key]; ok {
		return r
	}
	r := probe(ctx, cfg)
	if ctx.Err() == nil {
		probeCache[key] = r
	}
	return r
}

func probe(ctx context.Context, cfg Config) ProbeResult {
	test := Config{QEMUPath: cfg.QEMUPath, InitPath: cfg.InitPath, CacheDir: cfg.CacheDir,
		Accel: cfg.Accel, Confine: cfg.Confine, BootTimeout: 90 * time.Second, MemoryMiB: 128}
	start := time.Now()
	vm, err := Launch(ctx, test)
	if err != nil {
		r := ProbeResult{Reason: err.Error()}
		var ue *UnavailableError
		if errors.As(err, &ue) && ue.Reason == "qemu" {
			r.InstallHint = "apt-get install qemu-system-x86"
		}
		return r
	}
	defer vm.Close()
	boot := time.Since(start)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := vm.control(rctx, "ping"); err != nil {
		return ProbeResult{Reason: "test VM booted but its agent does not answer: " + err.Error()}
	}
	return ProbeResult{Available: true, Accel: vm.accel.Accel, Reason: vm.accel.Reason, BootMS: boot.Milliseconds()}
}
