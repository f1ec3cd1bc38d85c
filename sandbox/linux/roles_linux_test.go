package linux

import (
	"context"
	"errors"
	"testing"

	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/sandbox/linux/fsplan"
	"github.com/srt-go/srt/settings"
)

// TestStartWithoutDispatch: a program whose main never called
// DispatchRole (sandbox.Main) cannot start a sandbox, since the sandbox
// would re-execute that program's main as its PID 1; the refusal is a
// *SetupError naming the missing call. This test binary does not call it.
func TestStartWithoutDispatch(t *testing.T) {
	if dispatched.Load() {
		t.Fatal("this test binary must not call DispatchRole")
	}
	p, err := policy.Compile(settings.Default(), policy.Env{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Policy: p, Argv: []string{"true"}, BwrapPath: "bwrap"}
	_, err = Start(context.Background(), cfg)
	var se *SetupError
	if !errors.As(err, &se) || !errors.Is(err, ErrNoDispatch) {
		t.Fatalf("Start = %v, want a *SetupError wrapping ErrNoDispatch", err)
	}
	if _, err := StartLandlock(context.Background(), cfg, nil); !errors.Is(err, ErrNoDispatch) {
		t.Fatalf("StartLandlock = %v, want ErrNoDispatch", err)
	}
	if _, err := NewPlaceholders([]fsplan.Placeholder{{Path: t.TempDir() + "/missing"}}); !errors.Is(err, ErrNoDispatch) {
		t.Fatalf("NewPlaceholders = %v, want ErrNoDispatch", err)
	}
}
