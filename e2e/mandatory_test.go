package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mandatoryNames are the protected names of issue 2 ("Mandatory
// write-denies"), each as a file path to attack: a directory name is
// attacked through a file in it.
var mandatoryNames = []string{
	".bashrc", ".bash_profile", ".zshrc", ".zprofile", ".profile", ".gitconfig",
	".gitmodules", ".ripgreprc", ".mcp.json", ".vscode/x", ".idea/x",
	".claude/commands/x", ".claude/agents/x", ".git/hooks/pre-commit", ".git/config",
}

// attackScript tries each way of changing the protected path P (relative
// to the working directory) and prints NAME:refused or NAME:ALLOWED per
// attack. Helper files it makes are removed again, so the host tree must
// come out identical.
func attackScript(p string, exists bool) string {
	dir, top := filepath.Dir(p), p
	prefix := ""
	if i := strings.Index(p, "/."); i >= 0 {
		prefix = p[:i+1]
	}
	top = prefix + strings.SplitN(strings.TrimPrefix(p, prefix), "/", 2)[0]
	var b strings.Builder
	fmt.Fprintf(&b, "export P=%q D=%q TOP=%q PFX=%q\n", p, dir, top, prefix)
	b.WriteString(`try() { n=$1; shift; if ( "$@" ) >/dev/null 2>&1; then echo "$n:ALLOWED"; else echo "$n:refused"; fi; }
try rename-over sh -c 'mkdir -p "$D" 2>/dev/null; echo evil > "$PFX.srt-evil" && mv -f "$PFX.srt-evil" "$P"; r=$?; rm -f "$PFX.srt-evil"; exit $r'
try symlink-replace sh -c 'mkdir -p "$D" 2>/dev/null; ln -sfn /etc/hostname "$P"'
try rename-top sh -c 'mv "$TOP" "$TOP.moved"'
`)
	if exists {
		b.WriteString(`try append sh -c 'echo x >> "$P"'
try truncate sh -c ': > "$P"'
try chmod chmod 000 "$P"
try delete rm -f "$P"
try delete-top rm -rf "$TOP"
try rename-away mv "$P" "$P.moved"
`)
		if prefix != "" {
			b.WriteString(`try rename-subdir sh -c 'd=${PFX%/}; mv "$d" "$d.moved"'
`)
		}
	} else {
		b.WriteString(`try create sh -c 'mkdir -p "$D" 2>/dev/null; echo x > "$P"'
try create-dir-first sh -c 'rm -rf "$TOP" 2>/dev/null; mkdir -p "$D" && echo x > "$P"'
`)
	}
	return b.String()
}

// checkRefused fails for every attack line of out that is not refused.
func checkRefused(t *testing.T, out string, wantLines int) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != wantLines {
		t.Errorf("%d result lines, want %d:\n%s", len(lines), wantLines, out)
	}
	for _, l := range lines {
		if !strings.HasSuffix(l, ":refused") {
			t.Errorf("attack not refused: %s", l)
		}
	}
}

// placeholderSettings turns the creation-time rules off: missing
// protected names are then pinned by placeholders, as on a host that
// cannot run the rules.
const placeholderSettings = `{"filesystem":{"allowWrite":["."],"enforceNamesAtCreation":false}}`

// TestMandatoryDenies attacks each protected name at the top of the
// working directory (existing and missing) and in a/ and a/b/ (existing),
// with allowWrite ["."], with the creation-time rules (the default) and
// with placeholders: every attack must be refused and the host tree must
// be identical afterwards, no placeholder left — except that with the
// creation-time rules an attack on a missing name may make and move the
// harmless directories above it (.git, .claude), never the name itself.
func TestMandatoryDenies(t *testing.T) {
	t.Parallel()
	type variant struct {
		name, prefix string
		exists       bool
	}
	variants := []variant{{"top-existing", "", true}, {"top-missing", "", false}, {"a-existing", "a/", true}, {"a-b-existing", "a/b/", true}}
	modes := []struct{ name, settings string }{{"creation", writeSettings}, {"placeholders", placeholderSettings}}
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		for _, mode := range modes {
			for _, name := range mandatoryNames {
				for _, v := range variants {
					t.Run(mode.name+"/"+strings.ReplaceAll(name, "/", "_")+"/"+v.name, func(t *testing.T) {
						t.Parallel()
						dir := u.workDir(t)
						p := v.prefix + name
						u.write(t, filepath.Join(dir, "a/b/other"), "other\n")
						if v.exists {
							u.write(t, filepath.Join(dir, p), "orig\n")
						}
						r := srtRun{u: u, dir: dir, settings: mode.settings, args: []string{"sh", "-c", attackScript(p, v.exists)}}
						r.argv(t)
						before := snapshot(t, dir)
						out, errOut, code := r.run(t)
						if code != 0 {
							t.Fatalf("status %d, stderr: %s", code, errOut)
						}
						want := 5
						if v.exists {
							want = 9
							if v.prefix != "" {
								want = 10
							}
						}
						if mode.name == "creation" && !v.exists {
							out = strings.Replace(out, "rename-top:ALLOWED", "rename-top:refused", 1)
							checkRefused(t, out, want)
							for _, q := range []string{p, p + ".moved"} {
								if _, err := os.Lstat(filepath.Join(dir, q)); err == nil {
									t.Errorf("%s exists on the host", q)
								}
							}
							return
						}
						checkRefused(t, out, want)
						assertUnchanged(t, dir, before)
					})
				}
			}
		}
	})
}

// TestMandatoryOptions checks the settings that change the mandatory
// denies: allowGitConfig, mandatoryDenySearchDepth, node_modules (not
// walked), filesystem.disabled, and a protected name that is a symlink
// (srt refuses to run).
func TestMandatoryOptions(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		t.Run("allowGitConfig", func(t *testing.T) {
			t.Parallel()
			dir := u.workDir(t)
			u.write(t, filepath.Join(dir, ".git/config"), "[core]\n")
			u.write(t, filepath.Join(dir, ".git/hooks/pre-commit"), "#!/bin/sh\n")
			out, errOut, code := sh(t, u, dir, `{"filesystem":{"allowWrite":["."],"allowGitConfig":true}}`,
				`echo "[x]" >> .git/config && echo config-ok; echo evil >> .git/hooks/pre-commit || echo hook-refused`)
			if code != 0 || out != "config-ok\nhook-refused\n" {
				t.Errorf("status %d stdout %q, want config-ok then hook-refused; stderr %s", code, out, errOut)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, ".git/config")); string(b) != "[core]\n[x]\n" {
				t.Errorf("host .git/config = %q", b)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, ".git/hooks/pre-commit")); string(b) != "#!/bin/sh\n" {
				t.Errorf("host pre-commit = %q", b)
			}
		})
		t.Run("mandatoryDenySearchDepth", func(t *testing.T) {
			t.Parallel()
			for _, tc := range []struct {
				depth    int
				refused  []string
				writable []string
			}{
				{1, []string{".bashrc", "a/.bashrc", "a/.vscode/x"}, []string{"a/b/c/.bashrc", "a/b/c/.vscode/x", "a/b/c/d/.bashrc"}},
				{5, []string{"a/.bashrc", "a/b/c/.bashrc", "a/b/c/.vscode/x", "a/b/c/d/.bashrc"}, nil},
			} {
				t.Run(fmt.Sprint(tc.depth), func(t *testing.T) {
					t.Parallel()
					dir := u.workDir(t)
					var script strings.Builder
					for _, p := range append(append([]string{}, tc.refused...), tc.writable...) {
						u.write(t, filepath.Join(dir, p), "orig\n")
						fmt.Fprintf(&script, "echo x >> %s 2>/dev/null && echo %s:ALLOWED || echo %s:refused\n", p, p, p)
					}
					// With the creation-time rules off: they protect
					// every depth, so the search depth only matters
					// without them (TestCreationCompat).
					out, errOut, code := sh(t, u, dir, fmt.Sprintf(`{"filesystem":{"allowWrite":["."],"enforceNamesAtCreation":false},"mandatoryDenySearchDepth":%d}`, tc.depth), script.String())
					if code != 0 {
						t.Fatalf("status %d: %s", code, errOut)
					}
					for _, p := range tc.refused {
						if !strings.Contains(out, p+":refused\n") {
							t.Errorf("%s within depth %d is writable", p, tc.depth)
						}
					}
					for _, p := range tc.writable {
						if !strings.Contains(out, p+":ALLOWED\n") {
							t.Errorf("%s deeper than depth %d is not writable: %s", p, tc.depth, out)
						}
					}
				})
			}
		})
		// Without the creation-time rules (with them it runs:
		// TestProtectedSymlinks).
		t.Run("protected-symlink-refused", func(t *testing.T) {
			t.Parallel()
			for _, name := range []string{".bashrc", ".vscode", ".git/hooks", "a/.bashrc"} {
				t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
					t.Parallel()
					dir := u.workDir(t)
					u.write(t, filepath.Join(dir, "elsewhere/rc"), "rc\n")
					u.mkdir(t, filepath.Join(dir, "a"))
					u.mkdir(t, filepath.Join(dir, ".git"))
					u.write(t, filepath.Join(dir, name), "->"+strings.Repeat("../", strings.Count(name, "/"))+"elsewhere/rc")
					r := srtRun{u: u, dir: dir, settings: `{"filesystem":{"allowWrite":["."],"enforceNamesAtCreation":false}}`, args: []string{"touch", "marker"}}
					r.argv(t)
					before := snapshot(t, dir)
					out, errOut, code := r.run(t)
					if code != 125 || out != "" {
						t.Errorf("status %d stdout %q, want 125: a protected symlink cannot be made read-only", code, out)
					}
					if !strings.HasPrefix(errOut, "srt: ") || !strings.Contains(errOut, "symbolic link") || !strings.Contains(errOut, name) {
						t.Errorf("stderr %q does not say that %s is a symbolic link", errOut, name)
					}
					assertUnchanged(t, dir, before)
				})
			}
		})
		t.Run("node_modules-not-walked", func(t *testing.T) {
			t.Parallel()
			// Documented, not required: node_modules is skipped by the walk
			// (as the reference's -g !**/node_modules/**), so a .bashrc in it
			// is writable.
			dir := u.workDir(t)
			u.write(t, filepath.Join(dir, "node_modules/x/.bashrc"), "orig\n")
			out, _, _ := sh(t, u, dir, writeSettings, `echo x >> node_modules/x/.bashrc && echo writable`)
			t.Logf("node_modules/x/.bashrc: %q (node_modules is not walked for mandatory denies)", out)
		})
		t.Run("filesystem-disabled", func(t *testing.T) {
			t.Parallel()
			dir, other := u.workDir(t), u.workDir(t)
			u.write(t, filepath.Join(dir, ".bashrc"), "orig\n")
			out, errOut, code := sh(t, u, dir, `{"filesystem":{"disabled":true,"allowWrite":[],"denyWrite":["."]}}`,
				`echo x >> .bashrc && echo x > "`+other+`/f" && mkdir -p .git/hooks && echo h > .git/hooks/pre-commit && echo ok`)
			if code != 0 || out != "ok\n" {
				t.Errorf("status %d stdout %q, want writes allowed; stderr %s", code, out, errOut)
			}
			if b, _ := os.ReadFile(filepath.Join(other, "f")); string(b) != "x\n" {
				t.Errorf("host %s/f = %q, want x", other, b)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, ".bashrc")); string(b) != "orig\nx\n" {
				t.Errorf("host .bashrc = %q", b)
			}
		})
	})
}
