package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/srt-go/srt/policy"
)

// TestHostTrustedFiles writes, from inside a sandbox whose write roots
// are the project and the whole home directory, one file of every class
// of policy.HostTrusted (and every path of it that is not a glob), srt's
// own settings files, and the agents' project settings: each is a file a
// program on the host later runs or obeys (issue 14, items 1 and 5). Both
// ways: the file missing (it must not come into being) and present (it
// must keep its content). The host is checked afterwards.
func TestHostTrustedFiles(t *testing.T) {
	t.Parallel()
	var targets []string // relative to the home directory
	for _, c := range policy.HostTrusted() {
		for _, rel := range c.Home {
			rel = strings.Replace(rel, "python*", "python3.11", 1)
			if d, ok := strings.CutSuffix(rel, "/"); ok {
				rel = d + "/planted"
			}
			targets = append(targets, rel)
		}
	}
	// Project files of the agents, and the --settings file itself.
	targets = append(targets, "proj/.claude/settings.json", "proj/.claude/settings.local.json", "proj/sub/.hg/hgrc", "proj/settings.json")
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		for _, mode := range []string{"rules-on", "rules-off"} {
			for _, present := range []bool{false, true} {
				name := mode + "/missing"
				if present {
					name = mode + "/present"
				}
				t.Run(name, func(t *testing.T) {
					w := u.workDir(t)
					home := filepath.Join(w, "home")
					proj := filepath.Join(home, "proj")
					u.mkdir(t, proj)
					u.mkdir(t, filepath.Join(proj, "sub/.hg"))
					fsJSON := `{"filesystem":{"allowWrite":[".","~"]}}`
					if mode == "rules-off" {
						fsJSON = `{"filesystem":{"allowWrite":[".","~"],"enforceNamesAtCreation":false}}`
					}
					u.write(t, filepath.Join(proj, "settings.json"), fsJSON)
					if present {
						for _, rel := range targets {
							if rel != "proj/settings.json" {
								u.write(t, filepath.Join(home, rel), "original\n")
							}
						}
					}
					var script strings.Builder
					for _, rel := range targets {
						p := filepath.Join(home, rel)
						script.WriteString("mkdir -p '" + filepath.Dir(p) + "' 2>/dev/null; (echo planted >> '" + p + "') 2>/dev/null && echo 'WROTE " + rel + "'\n")
					}
					script.WriteString("echo ok > ordinary.txt && echo ordinary-ok\n")
					r := srtRun{u: u, dir: proj, env: []string{"HOME=" + home}, args: []string{"sh", "-c", script.String()},
						pre: []string{"-s", filepath.Join(proj, "settings.json")}}
					out, errOut, code := r.run(t)
					if code != 0 || !strings.Contains(out, "ordinary-ok") {
						t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errOut)
					}
					if strings.Contains(out, "WROTE") {
						t.Errorf("host-trusted files written from the sandbox:\n%s", out)
					}
					for _, rel := range targets {
						b, err := os.ReadFile(filepath.Join(home, rel))
						switch {
						case rel == "proj/settings.json":
							if string(b) != fsJSON {
								t.Errorf("the settings file changed: %q", b)
							}
						case present && string(b) != "original\n":
							t.Errorf("~/%s changed on the host: %q", rel, b)
						case !present && err == nil && strings.Contains(string(b), "planted"):
							t.Errorf("~/%s was created on the host: %q", rel, b)
						}
					}
				})
			}
		}
	})
}

// TestProtectedSymlinks: a protected name that is a symbolic link into a
// writable directory (a dotfiles manager's ~/.bashrc, a shared
// .git/hooks) must not stop srt from running; nothing may be written
// through it or into its target, and it cannot be replaced (issue 14,
// item 9). Without the creation-time rules the link could be replaced, so
// srt refuses (exit 125) and says how to run.
func TestProtectedSymlinks(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		for _, mode := range []string{"rules-on", "rules-off"} {
			t.Run(mode, func(t *testing.T) {
				w := u.workDir(t)
				home := filepath.Join(w, "home")
				u.write(t, filepath.Join(home, "dotfiles/bashrc"), "# rc\n")
				u.write(t, filepath.Join(home, "dotfiles/hooks/pre-commit.sample"), "#!/bin/sh\n")
				u.write(t, filepath.Join(home, ".bashrc"), "->dotfiles/bashrc")
				u.mkdir(t, filepath.Join(home, "proj/.git"))
				u.write(t, filepath.Join(home, "proj/.git/hooks"), "->../../dotfiles/hooks")
				settings := modeSettings(mode, `"allowWrite":[".","~"]`)
				// The settings file itself, a link into the dotfiles.
				u.write(t, filepath.Join(home, "dotfiles/srt.json"), settings)
				u.write(t, filepath.Join(home, "proj/srt.json"), "->../dotfiles/srt.json")
				script := `(rm -f srt.json && echo '{}' > srt.json) 2>/dev/null && echo RECREATED-SETTINGS
(echo pwned >> ~/.bashrc) 2>/dev/null && echo WROTE-THROUGH
(echo pwned >> ~/dotfiles/bashrc) 2>/dev/null && echo WROTE-TARGET
(echo pwned > .git/hooks/pre-commit) 2>/dev/null && echo WROTE-HOOK
(mv ~/dotfiles ~/df2) 2>/dev/null && echo MOVED-TARGET
(ln -sfn /tmp ~/.bashrc) 2>/dev/null && echo REPLACED-LINK
(rm -f ~/.bashrc && echo pwned > ~/.bashrc) 2>/dev/null && echo RECREATED
(rm -f .git/hooks && mkdir .git/hooks && echo pwned > .git/hooks/pre-commit) 2>/dev/null && echo RECREATED-HOOKS
echo ran`
				out, errOut, code := srtRun{u: u, dir: filepath.Join(home, "proj"), env: []string{"HOME=" + home},
					pre: []string{"-s", filepath.Join(home, "proj/srt.json")}, args: []string{"sh", "-c", script}}.run(t)
				if mode == "rules-off" {
					if code != 125 || !strings.Contains(errOut, "symbolic link") || strings.Contains(out, "ran") {
						t.Errorf("rules off: exit %d stdout %q stderr %q; want 125 naming the link", code, out, errOut)
					}
					return
				}
				if code != 0 || !strings.Contains(out, "ran") {
					t.Fatalf("exit %d stdout %q stderr %s", code, out, errOut)
				}
				for _, bad := range []string{"WROTE", "MOVED", "REPLACED", "RECREATED"} {
					if strings.Contains(out, bad) {
						t.Errorf("%s:\n%s", bad, out)
					}
				}
				if b, _ := os.ReadFile(filepath.Join(home, "dotfiles/bashrc")); string(b) != "# rc\n" {
					t.Errorf("the link's target changed: %q", b)
				}
				if fi, err := os.Lstat(filepath.Join(home, ".bashrc")); err == nil && fi.Mode().IsRegular() {
					t.Errorf("~/.bashrc is now a regular file")
				}
				if fi, err := os.Lstat(filepath.Join(home, "proj/srt.json")); err == nil && fi.Mode().IsRegular() {
					t.Errorf("the settings file was replaced by the sandbox's")
				}
				if _, err := os.Lstat(filepath.Join(home, "dotfiles/hooks/pre-commit")); err == nil {
					t.Error("a hook was written into the shared hooks directory")
				}
			})
		}
	})
}

// TestLinksInsideProtectedDirs: a mount makes a protected directory
// read-only, not what its entries lead to. A hook that is a symlink into
// the project and pipx's ~/.local/bin links must not be written through
// (nor their targets directly), and a hook hard-linked to a project file
// refuses the run (adversarial review: the host's next git commit ran a
// hook written through such a link).
func TestLinksInsideProtectedDirs(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		for _, mode := range []string{"rules-on", "rules-off"} {
			t.Run(mode, func(t *testing.T) {
				w := u.workDir(t)
				home := filepath.Join(w, "home")
				proj := filepath.Join(home, "proj")
				u.write(t, filepath.Join(proj, "scripts/pre-commit"), "#!/bin/sh\n")
				u.mkdir(t, filepath.Join(proj, ".git/hooks"))
				u.write(t, filepath.Join(proj, ".git/hooks/pre-commit"), "->../../scripts/pre-commit")
				u.write(t, filepath.Join(home, ".local/share/pipx/venvs/black/bin/black"), "#!/bin/sh\n")
				u.write(t, filepath.Join(home, ".local/bin/black"), "->../share/pipx/venvs/black/bin/black")
				settings := modeSettings(mode, `"allowWrite":[".","~"]`)
				script := `for f in .git/hooks/pre-commit scripts/pre-commit ~/.local/bin/black ~/.local/share/pipx/venvs/black/bin/black; do (echo 'echo PWNED' >> $f) 2>/dev/null && echo WROTE $f; done; true`
				out, errOut, code := srtRun{u: u, dir: proj, settings: settings, env: []string{"HOME=" + home}, args: []string{"sh", "-c", script}}.run(t)
				if code != 0 || strings.Contains(out, "WROTE") {
					t.Errorf("exit %d, stdout %q (stderr %s): a link's target inside a protected directory was written", code, out, errOut)
				}
				for _, f := range []string{filepath.Join(proj, "scripts/pre-commit"), filepath.Join(home, ".local/share/pipx/venvs/black/bin/black")} {
					if b, _ := os.ReadFile(f); strings.Contains(string(b), "PWNED") {
						t.Errorf("%s changed on the host: %q", f, b)
					}
				}
				// A hook hard-linked to a project file nothing else
				// protects: the run is refused.
				u.write(t, filepath.Join(proj, "scripts/post"), "#!/bin/sh\n")
				if err := os.Link(filepath.Join(proj, "scripts/post"), filepath.Join(proj, ".git/hooks/post-commit")); err != nil {
					t.Fatal(err)
				}
				out, errOut, code = srtRun{u: u, dir: proj, settings: settings, env: []string{"HOME=" + home}, args: []string{"echo", "ran"}}.run(t)
				if code != 125 || out != "" || !strings.Contains(errOut, "hard links") {
					t.Errorf("a hard-linked hook: exit %d stdout %q stderr %q; want 125 naming the hard links", code, out, errOut)
				}
			})
		}
	})
}

// TestLinkedHostFiles: host files that are links into a write root
// (found by the fourth adversarial review). With only a dotfiles
// repository writable, ~/.bashrc, ~/.gitconfig and a ~/.local/bin link
// point into it; a hook reached through a link in the project can be
// re-pointed, or its missing target made; a pipx virtualenv runs its
// interpreter and modules; a relative global core.hooksPath names every
// new repository's hooks.
func TestLinkedHostFiles(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		for _, mode := range []string{"rules-on", "rules-off"} {
			t.Run(mode, func(t *testing.T) {
				w := u.workDir(t)
				home := filepath.Join(w, "home")
				dot := filepath.Join(home, ".dotfiles")
				for _, f := range []string{"bashrc", "gitconfig", "tool"} {
					u.write(t, filepath.Join(dot, f), "original\n")
				}
				u.write(t, filepath.Join(home, ".bashrc"), "->.dotfiles/bashrc")
				u.write(t, filepath.Join(home, ".gitconfig"), "->.dotfiles/gitconfig")
				u.write(t, filepath.Join(home, ".local/bin/tool"), "->../../.dotfiles/tool")
				// A hook through a link in the repository, and one whose
				// target is missing.
				u.write(t, filepath.Join(dot, "scripts/hooks/pre-commit.sh"), "original\n")
				u.write(t, filepath.Join(dot, "hooks"), "->scripts/hooks")
				u.mkdir(t, filepath.Join(dot, ".git/hooks"))
				u.write(t, filepath.Join(dot, ".git/hooks/pre-commit"), "->../../hooks/pre-commit.sh")
				u.write(t, filepath.Join(dot, ".git/hooks/post-commit"), "->../../missing/post")
				u.write(t, filepath.Join(home, ".gitconfig-global"), "[core]\n\thooksPath = .githooks\n")
				settings := modeSettings(mode, `"allowWrite":["."]`)
				script := `for f in bashrc gitconfig tool scripts/hooks/pre-commit.sh; do (echo PWNED >> $f) 2>/dev/null && echo WROTE $f; done
(rm -f hooks; mkdir evil; echo PWNED > evil/pre-commit.sh; ln -s evil hooks) 2>/dev/null && echo REPOINTED
(mkdir -p missing && echo PWNED > missing/post) 2>/dev/null && echo MADE-MISSING
(git init -q sub && mkdir -p sub/.githooks && echo PWNED > sub/.githooks/pre-commit) 2>/dev/null && echo GLOBAL-HOOKSPATH
true`
				out, errOut, code := srtRun{u: u, dir: dot, settings: settings,
					env: []string{"HOME=" + home, "GIT_CONFIG_GLOBAL=" + filepath.Join(home, ".gitconfig-global")}, args: []string{"sh", "-c", script}}.run(t)
				if mode == "rules-off" && code == 125 && strings.Contains(errOut, "symbolic link") {
					return // a protected link in a writable directory: refused, as documented
				}
				if strings.Contains(out, "WROTE") || strings.Contains(out, "REPOINTED") || strings.Contains(out, "MADE-MISSING") || mode == "rules-on" && strings.Contains(out, "GLOBAL-HOOKSPATH") {
					t.Errorf("exit %d stdout %q stderr %s", code, out, errOut)
				}
				for _, f := range []string{"bashrc", "gitconfig", "tool", "scripts/hooks/pre-commit.sh"} {
					if b, _ := os.ReadFile(filepath.Join(dot, f)); string(b) != "original\n" {
						t.Errorf("%s changed on the host: %q", f, b)
					}
				}
				if b, err := os.ReadFile(filepath.Join(dot, ".git/hooks/pre-commit")); err == nil && strings.Contains(string(b), "PWNED") {
					t.Error("the hook now leads to the sandbox's script")
				}
				if _, err := os.Stat(filepath.Join(dot, "missing/post")); err == nil {
					t.Error("a dangling hook's target was made")
				}
			})
		}
	})
}

// TestDotfilesLayouts: layouts of dotfile managers (stow's folding,
// rcm's per-file links deep in editors' trees) with only the dotfiles
// repository writable (sixth adversarial review).
func TestDotfilesLayouts(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		run := func(t *testing.T, home, script string) (string, string, int) {
			t.Helper()
			return srtRun{u: u, dir: filepath.Join(home, ".dotfiles"), settings: `{"filesystem":{"allowWrite":["."]}}`,
				env: []string{"HOME=" + home}, args: []string{"sh", "-c", script}}.run(t)
		}
		t.Run("folded-local-lib", func(t *testing.T) {
			home := filepath.Join(u.workDir(t), "home")
			u.mkdir(t, filepath.Join(home, ".dotfiles/lib"))
			u.mkdir(t, filepath.Join(home, ".local"))
			u.write(t, filepath.Join(home, ".local/lib"), "->../.dotfiles/lib")
			out, errOut, _ := run(t, home, `(mkdir -p lib/python3.11/site-packages && echo 'import os' > lib/python3.11/site-packages/evil.pth) 2>/dev/null && echo PLANTED; true`)
			if strings.Contains(out, "PLANTED") {
				t.Errorf("a user site-packages .pth was made through a folded ~/.local/lib: %s", errOut)
			}
		})
		t.Run("deep-editor-link", func(t *testing.T) {
			home := filepath.Join(u.workDir(t), "home")
			u.write(t, filepath.Join(home, ".dotfiles/vim/x.vim"), "original\n")
			u.write(t, filepath.Join(home, ".vim/pack/my/start/p/plugin/x.vim"), "->../../../../../../.dotfiles/vim/x.vim")
			out, errOut, _ := run(t, home, `(echo 'call system("id")' >> vim/x.vim) 2>/dev/null && echo WROTE; true`)
			if b, _ := os.ReadFile(filepath.Join(home, ".dotfiles/vim/x.vim")); strings.Contains(out, "WROTE") || string(b) != "original\n" {
				t.Errorf("a vim plugin file linked five levels down was written: %q %s", b, errOut)
			}
		})
		t.Run("hardlink-to-link-target", func(t *testing.T) {
			home := filepath.Join(u.workDir(t), "home")
			u.write(t, filepath.Join(home, ".dotfiles/bin/tool"), "#!/bin/sh\n")
			u.write(t, filepath.Join(home, ".local/bin/tool"), "->../../.dotfiles/bin/tool")
			if err := os.Link(filepath.Join(home, ".dotfiles/bin/tool"), filepath.Join(home, ".dotfiles/notes.txt")); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := run(t, home, `echo ran`)
			if code != 125 || out != "" || !strings.Contains(errOut, "hard links") {
				t.Errorf("exit %d stdout %q stderr %q: want a refusal naming the hard links", code, out, errOut)
			}
		})
	})
}
