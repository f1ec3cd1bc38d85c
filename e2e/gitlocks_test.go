package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitAfterTheRun: what the creation-time rules let the sandbox do in
// a repository must neither break the host's git afterwards nor stop
// allowGitConfig from working (issue 14, items 7 and 8), and the hooks a
// core.hooksPath names are as protected as .git/hooks (item 4).
func TestGitAfterTheRun(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		git := func(t *testing.T, dir string, args ...string) (string, error) {
			t.Helper()
			cmd := u.command(t.Context(), dir, []string{"HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}, append([]string{"git"}, args...)...)
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
		repo := func(t *testing.T) string {
			t.Helper()
			w := u.workDir(t)
			if out, err := git(t, w, "init", "-q", "."); err != nil {
				t.Fatalf("git init: %v %s", err, out)
			}
			return w
		}
		t.Run("allowGitConfig-existing-repository", func(t *testing.T) {
			w := repo(t)
			out, errOut, code := sh(t, u, w, `{"filesystem":{"allowWrite":["."],"allowGitConfig":true}}`,
				`git config e2e.key value && git config --get e2e.key; (echo 'echo pwned' > .git/hooks/pre-commit) 2>/dev/null && echo HOOK; true`)
			if code != 0 || out != "value\n" {
				t.Errorf("git config with allowGitConfig: exit %d stdout %q stderr %s", code, out, errOut)
			}
			if _, err := os.Lstat(filepath.Join(w, ".git/hooks/pre-commit")); err == nil {
				t.Error("a hook was written with allowGitConfig")
			}
		})
		t.Run("locks-left-behind", func(t *testing.T) {
			w := repo(t)
			// config.lock by plain O_CREAT, index.lock by O_EXCL, and a
			// refused config change (its lock's rename is refused).
			_, errOut, _ := sh(t, u, w, `{"filesystem":{"allowWrite":["."]}}`,
				`echo '[core]' > .git/config.lock; set -C; echo x > .git/index.lock; git config core.fsmonitor 'echo pwned'; ls .git`)
			for _, l := range []string{"config.lock", "index.lock"} {
				if _, err := os.Lstat(filepath.Join(w, ".git", l)); err == nil {
					t.Errorf(".git/%s is still on the host after the run (stderr %s)", l, errOut)
				}
			}
			if out, err := git(t, w, "config", "e2e.after", "1"); err != nil {
				t.Errorf("the host's git config fails after the run: %v %s", err, out)
			}
			if out, _ := git(t, w, "config", "--get", "core.fsmonitor"); strings.TrimSpace(out) != "" {
				t.Errorf("core.fsmonitor set to %q", out)
			}
		})
		for _, mode := range []string{"rules-on", "rules-off"} {
			t.Run("core.hooksPath/"+mode, func(t *testing.T) {
				// The repository's (husky: .husky/_, which runs .husky/*),
				// and a global one in ~/.gitconfig, present or not.
				w := repo(t)
				home := filepath.Join(w, "home")
				u.write(t, filepath.Join(home, ".gitconfig"), "[core]\n\thooksPath = ~/githooks\n")
				if out, err := git(t, w, "config", "core.hooksPath", ".husky/_"); err != nil {
					t.Fatalf("git config: %v %s", err, out)
				}
				u.mkdir(t, filepath.Join(w, ".husky/_"))
				settings := modeSettings(mode, `"allowWrite":[".","~"]`)
				out, errOut, _ := srtRun{u: u, dir: w, settings: settings, env: []string{"HOME=" + home}, args: []string{"sh", "-c",
					`for f in .husky/_/pre-commit .husky/pre-commit ~/githooks/pre-commit; do mkdir -p $(dirname $f) 2>/dev/null; (echo 'echo pwned' > $f) 2>/dev/null && echo WROTE $f; done; true`}}.run(t)
				if strings.Contains(out, "WROTE") {
					t.Errorf("a core.hooksPath hook was written:\n%s\nstderr %s", out, errOut)
				}
				for _, f := range []string{filepath.Join(w, ".husky/_/pre-commit"), filepath.Join(w, ".husky/pre-commit"), filepath.Join(home, "githooks/pre-commit")} {
					if _, err := os.Lstat(f); err == nil {
						t.Errorf("%s exists on the host", f)
					}
				}
			})
		}
		t.Run("host-lock-kept", func(t *testing.T) {
			// A lock that exists when the sandbox opens it is not the
			// sandbox's: it stays.
			w := repo(t)
			u.write(t, filepath.Join(w, ".git/index.lock"), "host\n")
			sh(t, u, w, `{"filesystem":{"allowWrite":["."]}}`, `echo x >> .git/index.lock`)
			if _, err := os.Lstat(filepath.Join(w, ".git/index.lock")); err != nil {
				t.Errorf("the host's own index.lock was removed: %v", err)
			}
		})
	})
}
