package port

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/srt-go/srt/sandbox/linux"
)

// The test binary is the sandbox's PID 1 and guardian, as srt's is.
func init() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case linux.InitArg:
			linux.RunInit(os.Args[2:])
		case linux.GuardianArg:
			linux.RunGuardian(os.Args[2:])
		case linux.ProxyConnectArg:
			linux.RunProxyConnect(os.Args[2:])
		}
	}
}

func requireNative(t testing.TB) *Runtime {
	t.Helper()
	rt, err := newRuntime(context.Background(), Options{NameGlobWriteDenies: []string{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rt.probe.Available {
		t.Skipf("no native sandbox: %s", rt.probe.Note)
	}
	return rt
}

// collect reads every event of an exec.
func collect(t testing.TB, ch <-chan Event) (evs []Event, stdout, stderr string) {
	t.Helper()
	var o, e strings.Builder
	timeout := time.After(60 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return evs, o.String(), e.String()
			}
			switch ev.Type {
			case EventStdout:
				o.Write(ev.Data)
			case EventStderr:
				e.Write(ev.Data)
			}
			evs = append(evs, ev)
		case <-timeout:
			t.Fatalf("exec did not end; events so far: %d", len(evs))
		}
	}
}

func TestNativeSmoke(t *testing.T) {
	rt := requireNative(t)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "hello"), []byte("hi\n"), 0o644)
	sb, err := rt.Launch(context.Background(), Spec{SessionID: "smoke", Mode: ModeChat,
		BindMounts: []BindMount{{HostPath: ws, GuestPath: "/workspace"}}, GuestWorkdir: "/workspace"}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Destroy(context.Background())
	if h := sb.Handle(); h.Backend != BackendNative || h.State != StateWarm {
		t.Fatalf("handle %+v", h)
	}
	ch, err := sb.Exec(context.Background(), ExecRequest{Argv: []string{"sh", "-c", "pwd; cat hello; echo new > made; ls /; echo err >&2; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	evs, out, errs := collect(t, ch)
	t.Logf("stdout %q stderr %q", out, errs)
	last := evs[len(evs)-1]
	if last.Type != EventExit || *last.ExitCode != 3 {
		t.Fatalf("last event %+v", last)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "made")); string(b) != "new\n" {
		t.Errorf("made = %q", b)
	}
}
