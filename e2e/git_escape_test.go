package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitRedirects: a command must not redirect where host git reads its
// configuration and hooks from (found by an adversarial review: writing
// .git/commondir made host git run a crafted core.fsmonitor). commondir,
// config.worktree, modules/ and worktrees/ of every repository found are
// read-only, whether or not they exist, while ordinary git work goes on.
func TestGitRedirects(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		git := func(args ...string) {
			t.Helper()
			cmd := u.command(t.Context(), dir, nil, append([]string{"git", "-c", "user.email=e2e@test", "-c", "user.name=e2e"}, args...)...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		git("init", "-q", ".")
		git("commit", "-q", "--allow-empty", "-m", "base")
		u.write(t, filepath.Join(dir, settingsName), writeSettings)
		before := snapshot(t, dir)
		script := `
			mkdir evilgit && cp -r .git/objects .git/refs .git/HEAD evilgit/ && printf '[core]\n\tfsmonitor = "touch PWNED"\n' > evilgit/config
			echo ../evilgit > .git/commondir 2>/dev/null && echo COMMONDIR-WRITTEN
			printf '[core]\n\tfsmonitor = "touch PWNED"\n' >> .git/config.worktree 2>/dev/null && echo CONFIG-WORKTREE-WRITTEN
			mkdir -p .git/modules/sub/hooks 2>/dev/null && echo MODULES-CREATED
			mkdir -p .git/worktrees/w 2>/dev/null && echo WORKTREES-CREATED
			git -c user.email=e2e@test -c user.name=e2e commit -q --allow-empty -m inside && echo COMMITTED
			rm -rf evilgit`
		out, errOut, code := sh(t, u, dir, writeSettings, script)
		if code != 0 || strings.Contains(out, "WRITTEN") || strings.Contains(out, "CREATED") || !strings.Contains(out, "COMMITTED") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		// The host's git reads its own configuration, nothing planted.
		cmd := exec.Command("git", "status", "--short")
		cmd.Dir = dir
		cmd.Run()
		if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
			t.Fatalf("host git ran the command's fsmonitor")
		}
		after := snapshot(t, dir)
		if d := diffSnapshots(before, after, gitInternals(before, after)...); d != "" {
			t.Errorf("host directory changed beyond the new commit:\n%s", d)
		}
	})
}

// gitInternals lists the paths under .git/objects, .git/refs and .git/logs
// and the few files a commit rewrites, which may differ.
func gitInternals(maps ...map[string]entry) []string {
	var out []string
	for _, m := range maps {
		for p := range m {
			base := filepath.Base(p)
			if strings.Contains(p, "/.git/objects") || strings.Contains(p, "/.git/refs") || strings.Contains(p, "/.git/logs") ||
				base == "index" || base == "COMMIT_EDITMSG" || base == "ORIG_HEAD" {
				out = append(out, p)
			}
		}
	}
	return out
}
