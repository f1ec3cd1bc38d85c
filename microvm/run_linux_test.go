package microvm_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/srt-go/srt/microvm"
	"github.com/srt-go/srt/settings"
)

func TestRunCommand(t *testing.T) {
	requireQEMU(t)
	vmSlots <- struct{}{}
	defer func() { <-vmSlots }()
	wd := t.TempDir()
	os.WriteFile(filepath.Join(wd, "in"), []byte("from-host"), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	code, err := microvm.RunCommand(ctx, microvm.RunConfig{
		Settings: settings.Default(), Workdir: wd, VM: microvm.Config{InitPath: guestInit},
	}, []string{"sh", "-c", `cat in; pwd; echo out > made; srt-guest fetch http://example.com/ >/dev/null || echo no-network >&2; exit 9`},
		microvm.Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
	if err != nil {
		t.Fatal(err)
	}
	if code != 9 || out.String() != "from-host"+wd+"\n" || !strings.Contains(errb.String(), "no-network") {
		t.Errorf("got %d %q %q", code, out.String(), errb.String())
	}
	if b, _ := os.ReadFile(filepath.Join(wd, "made")); string(b) != "out\n" {
		t.Errorf("workdir not writable: %q", b)
	}
}

// TestSelfInit runs a static binary that is both the host CLI and the
// guest's /init (no InitPath): the way srt itself is wired.
func TestSelfInit(t *testing.T) {
	requireQEMU(t)
	vmSlots <- struct{}{}
	defer func() { <-vmSlots }()
	bin := filepath.Join(t.TempDir(), "selfinit")
	build := exec.Command("go", "build", "-o", bin, "./internal/selfinit")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	wd := t.TempDir()
	cmd := exec.Command(bin, wd, "sh", "-c", "echo inside; exit 3")
	cmd.Env = append(os.Environ(), "SRT_MICROVM_INIT=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || out.String() != "inside\n" {
		t.Errorf("got %v, stdout %q, stderr %q; want exit 3 and inside", err, out.String(), errb.String())
	}
}

// TestRunCommandStartFailures: a command the guest cannot find or cannot
// execute gets a shell's status (127, 126) and a message on stderr, as
// native, not an error of srt's own.
func TestRunCommandStartFailures(t *testing.T) {
	requireQEMU(t)
	vmSlots <- struct{}{}
	defer func() { <-vmSlots }()
	wd := t.TempDir()
	os.WriteFile(filepath.Join(wd, "notexec"), []byte("#!/bin/sh\necho hi\n"), 0o644)
	for _, tc := range []struct {
		argv []string
		code int
	}{
		{[]string{"srt-no-such-command"}, 127},
		{[]string{"./notexec"}, 126},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		var out, errb bytes.Buffer
		code, err := microvm.RunCommand(ctx, microvm.RunConfig{Workdir: wd, VM: microvm.Config{InitPath: guestInit}},
			tc.argv, microvm.Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
		cancel()
		if err != nil || code != tc.code || !strings.Contains(errb.String(), tc.argv[0]) {
			t.Errorf("%v: exit %d, %v, stderr %q; want %d and a message", tc.argv, code, err, errb.String(), tc.code)
		}
	}
}
