package microvm_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/srt-go/srt/microvm"
)

// guestInit is the static guest /init every test VM boots, built once by
// TestMain: the test binary itself may be dynamically linked.
var guestInit string

func TestMain(m *testing.M) {
	if os.Getenv("SRT_MICROVM_TEST_HELPER") == "1" {
		helperMain()
		return
	}
	dir, err := os.MkdirTemp("", "microvm-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	guestInit = filepath.Join(dir, "srt-guest")
	_, file, _, _ := runtime.Caller(0)
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", guestInit, "./guest/cmd/srt-guest")
	build.Dir = filepath.Dir(file)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the guest init: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// requireQEMU skips only when QEMU is missing and SRT_E2E_ALLOW_SKIP=1;
// otherwise a missing QEMU fails the test.
func requireQEMU(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		if os.Getenv("SRT_E2E_ALLOW_SKIP") == "1" {
			t.Skipf("qemu-system-x86_64 missing: %v", err)
		}
		t.Fatalf("qemu-system-x86_64 missing (apt-get install qemu-system-x86): %v", err)
	}
}

// vmSlots bounds the VMs the tests run at once: the CPU is shared.
var vmSlots = make(chan struct{}, 2)

// launch boots a VM for t with cfg and closes it at the end of t.
func launch(t *testing.T, cfg microvm.Config) *microvm.VM {
	t.Helper()
	requireQEMU(t)
	vmSlots <- struct{}{}
	t.Cleanup(func() { <-vmSlots })
	if cfg.InitPath == "" {
		cfg.InitPath = guestInit
	}
	if cfg.BootTimeout == 0 {
		cfg.BootTimeout = 90 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	vm, err := microvm.Launch(ctx, cfg)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	t.Logf("booted in %v (%v)", time.Since(start).Round(time.Millisecond), vm.Details())
	t.Cleanup(func() { vm.Close() })
	return vm
}
