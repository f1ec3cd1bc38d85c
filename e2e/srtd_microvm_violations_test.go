package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/srt-go/srt/client"
	"github.com/srt-go/srt/port"
)

// TestSrtdMicroVMFilesystemViolations: in a microvm session, writes that
// a read-only share or a protected path refuses are violation events
// (action, target, raw) on the exec's stream and on the sandbox's, as in
// a native session; the writes still fail, the host files are unchanged,
// and a set-id chmod stays refused.
func TestSrtdMicroVMFilesystemViolations(t *testing.T) {
	requireSandbox(t)
	requireQEMU(t)
	ctx := context.Background()
	d := startSrtdVM(t, nil, "--name-glob-write-denies", "none")
	if p := awaitMicroVMProbe(t, d); !p.MicroVMAvailable {
		t.Skipf("probe %+v; no microvm", p)
	}
	rw, ro := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ro, "x"), []byte("ro-data\n"), 0o644)
	os.WriteFile(filepath.Join(rw, "protected.txt"), []byte("keep\n"), 0o644)
	if _, err := d.c.Launch(ctx, port.Spec{SessionID: "vmv", WorkspaceID: "w", Mode: port.ModeChat,
		BindMounts: []port.BindMount{
			{HostPath: rw, GuestPath: "/ws"},
			{HostPath: ro, GuestPath: "/ro", ReadOnly: true},
		},
		ProtectedPaths: []string{filepath.Join(rw, "protected.txt")},
		GuestWorkdir:   "/ws",
	}, port.BackendMicroVM); err != nil {
		t.Fatalf("launch microvm: %v\n%s", err, d.stderr())
	}
	sev := d.sandboxEvents(t, "vmv")
	script := "echo a > /ro/new && echo ro-create=w; echo b >> /ro/x && echo ro-data=w; " +
		"echo c >> /ws/protected.txt && echo prot=w; echo d > /ws/f; chmod u+s /ws/f && echo setid=w; echo done"
	events, err := d.c.Exec(ctx, "vmv", client.ExecRequest{Argv: []string{"sh", "-c", script}})
	if err != nil {
		t.Fatal(err)
	}
	// The guest's supervisor (the creation-time rules, issue 20) judges
	// each open with O_CREAT (the shell's > and >>) first, and names the
	// policy's rule, as in a native session: a read-only bind is outside
	// the write roots, a protectedPaths entry a denyWrite of the session's
	// policy.
	want := map[string]string{ // target → action
		"/ro/new": "file-write-create", "/ro/x": "file-write-create", "/ws/protected.txt": "file-write-create",
	}
	reasons := map[string]string{"/ro/new": "outside the write roots", "/ro/x": "outside the write roots", "/ws/protected.txt": "filesystem.denyWrite[0]"}
	check := func(stream string, got map[string]port.Event) {
		t.Helper()
		for target, action := range want {
			ev, ok := got[target]
			if !ok {
				t.Errorf("%s: no violation for %s (got %v)", stream, target, got)
				continue
			}
			v := ev.Violation
			if v.Action != action || !strings.Contains(v.Reason, reasons[target]) || !strings.HasPrefix(v.Raw, "deny "+action+" "+target) {
				t.Errorf("%s: violation %+v; want action %s, reason %q, raw deny %s %s", stream, v, action, reasons[target], action, target)
			}
		}
	}
	var out string
	got := map[string]port.Event{}
	for ev, err := range events {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Type {
		case port.EventStdout, port.EventStderr:
			out += string(ev.Data)
		case port.EventViolation:
			if ev.Violation != nil {
				got[ev.Violation.Target] = ev
			}
		}
	}
	if !strings.Contains(out, "done") {
		t.Fatalf("the script did not finish: %q", out)
	}
	for _, bad := range []string{"ro-create=w", "ro-data=w", "prot=w", "setid=w"} {
		if strings.Contains(out, bad) {
			t.Errorf("%q in %q: a refused write went through", bad, out)
		}
	}
	check("exec stream", got)

	sgot := map[string]port.Event{}
	deadline := time.After(10 * time.Second)
	for len(sgot) < len(want) {
		select {
		case ev, ok := <-sev:
			if !ok {
				t.Fatal("sandbox stream ended")
			}
			if ev.Type == port.EventViolation && ev.Violation != nil {
				if _, w := want[ev.Violation.Target]; w {
					sgot[ev.Violation.Target] = ev
				}
			}
		case <-deadline:
			t.Fatalf("sandbox stream: %d of %d violations", len(sgot), len(want))
		}
	}
	check("sandbox stream", sgot)

	if _, err := os.Stat(filepath.Join(ro, "new")); err == nil {
		t.Error("the read-only share was written")
	}
	if b, _ := os.ReadFile(filepath.Join(ro, "x")); string(b) != "ro-data\n" {
		t.Errorf("read-only file changed: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(rw, "protected.txt")); string(b) != "keep\n" {
		t.Errorf("protected file changed: %q", b)
	}
	if fi, err := os.Stat(filepath.Join(rw, "f")); err != nil || fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
		t.Errorf("set-id chmod: %v %v; want a file without set-id bits", fi, err)
	}
}
