package e2e

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestConcurrentSameDirectory: sandboxes in one directory share the
// placeholders of missing protected names (with the creation-time rules
// off, as on a host that cannot run them). A second run must neither wait
// for the first nor lose its protection when the first ends (or is killed)
// while it runs, and the last one out leaves the directory as it found it.
func TestConcurrentSameDirectory(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		u.write(t, dir+"/"+settingsName, placeholderSettings)
		before := snapshot(t, dir)

		// A long run that is killed with SIGKILL half-way.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		long := u.command(ctx, dir, nil, srtBin, "-s", dir+"/"+settingsName, "--", "sleep", uniqueSleep())
		if err := long.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)

		start := time.Now()
		done := make(chan struct{})
		var out string
		var code int
		go func() {
			defer close(done)
			out, _, code = sh(t, u, dir, placeholderSettings,
				`sleep 1; echo evil >> .bashrc 2>/dev/null && echo BASHRC-WRITTEN; mkdir -p .git/hooks 2>/dev/null; touch .git/hooks/pre-commit 2>/dev/null && echo HOOKS-CREATED; echo ok`)
		}()
		time.Sleep(300 * time.Millisecond)
		long.Process.Kill() // the first sandbox dies while the second runs
		long.Wait()
		<-done
		if code != 0 || strings.Contains(out, "WRITTEN") || strings.Contains(out, "CREATED") || !strings.Contains(out, "ok") {
			t.Fatalf("second run: exit %d, %q", code, out)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("the second run took %v: it waited for the first", d)
		}
		waitUnchanged(t, dir, before, 3*time.Second)
	})
}
