package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/srt-go/srt/settings"
	"github.com/srt-go/srt/violation"
)

// TestMain: the test binary is the sandbox's PID 1 and guardian, as srt's
// is.
func TestMain(m *testing.M) {
	Main()
	os.Exit(m.Run())
}

func requireBwrap(t *testing.T) {
	t.Helper()
	out, err := exec.Command("bwrap", "--ro-bind", "/", "/", "--unshare-user", "true").CombinedOutput()
	if err != nil {
		t.Skipf("bwrap cannot run here: %v: %s", err, out)
	}
}

// TestViolationsTwoCommands runs two commands at once in one Manager, each
// refused several things, and checks that each command's violations are
// its own: attribution by key, not by time or text.
func TestViolationsTwoCommands(t *testing.T) {
	requireBwrap(t)
	s := settings.Default()
	m, err := NewManager(s, Options{ObserveFilesystem: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	script := func(name string) string {
		var b strings.Builder
		for i := range 5 {
			fmt.Fprintf(&b, "touch /srt-lib-%s-%d 2>/dev/null; ", name, i)
		}
		return b.String() + "true"
	}
	cmds := map[string]*Cmd{}
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b"} {
		c := m.Command(ctx, "sh", "-c", script(name))
		c.CommandID = "tool-use-" + name
		cmds[name] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Run(); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}()
	}
	wg.Wait()
	for name, c := range cmds {
		vs := m.ViolationsForCommand(c.Key())
		if len(vs) != 5 {
			t.Errorf("%s: %d violations, want 5: %+v", name, len(vs), vs)
		}
		for _, v := range vs {
			if v.Action != violation.FileWriteCreate || !strings.HasPrefix(v.Target, "/srt-lib-"+name+"-") || v.Key != "tool-use-"+name {
				t.Errorf("%s got %+v", name, v)
			}
		}
		ann := m.AnnotateStderrWithSandboxFailures(c.Key(), "err")
		if !strings.HasPrefix(ann, "err\n<sandbox_violations>\ndeny file-write-create /srt-lib-"+name+"-0 (outside the write roots)\n") ||
			!strings.HasSuffix(ann, "</sandbox_violations>") {
			t.Errorf("%s: annotated stderr %q", name, ann)
		}
	}
	if got := m.Violations().TotalCount(); got != 10 {
		t.Errorf("TotalCount = %d, want 10", got)
	}
}

// TestDefaultKeys: without a CommandID, two runs of the same text get
// different keys, so the second does not inherit the first's violations.
func TestDefaultKeys(t *testing.T) {
	requireBwrap(t)
	m, err := NewManager(nil, Options{ObserveFilesystem: true})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for range 2 {
		c := m.Command(context.Background(), "sh", "-c", "touch /srt-lib-rerun 2>/dev/null; true")
		if err := c.Run(); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, c.Key())
		if n := len(m.ViolationsForCommand(c.Key())); n != 1 {
			t.Errorf("run %d: %d violations under its key, want 1", len(keys), n)
		}
	}
	if keys[0] == keys[1] {
		t.Errorf("both runs got key %q", keys[0])
	}
}
