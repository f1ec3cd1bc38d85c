package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDenyWalkLinkOutsideRoots is the adversarial review's regression of
// the write-deny intersection (issue 19): a denyWrite glob whose base
// lies outside every write root must still deny a match reached through
// a link there into a write root, at the link's spelling and at its
// target: (a) "p2/lnk -> W/sub" with "**/.env", (b) "p3/lnk -> W/sub"
// with "*/.env", each run from p2 or p3 with allowWrite [W].
func TestDenyWalkLinkOutsideRoots(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		for _, mode := range []string{"rules-on", "rules-off"} {
			t.Run(mode, func(t *testing.T) {
				for _, c := range []struct{ name, dir, glob string }{{"a", "p2", "**/.env"}, {"b", "p3", "*/.env"}} {
					t.Run(c.name, func(t *testing.T) {
						w := u.workDir(t)
						root, env := filepath.Join(w, "W"), filepath.Join(w, "W/sub/.env")
						u.write(t, env, crossOriginal)
						u.write(t, filepath.Join(w, c.dir, "lnk"), "->"+filepath.Join(root, "sub"))
						settings := fmt.Sprintf(`{"filesystem":{"allowWrite":[%q],"denyWrite":[%q]%s}}`, root, c.glob, rulesOff(mode))
						script := fmt.Sprintf(`echo PWNED >>lnk/.env 2>/dev/null && echo WROTE-lnk; echo PWNED >>%s 2>/dev/null && echo WROTE-target; echo done`, env)
						out, errOut, code := srtRun{u: u, dir: filepath.Join(w, c.dir), settings: settings, env: []string{"HOME=" + filepath.Join(w, "home")},
							args: []string{"sh", "-c", script}}.run(t)
						if !strings.Contains(out, "done") {
							t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
						}
						if b, _ := os.ReadFile(env); strings.Contains(out, "WROTE") || string(b) != crossOriginal {
							t.Errorf("the .env behind the link was written (%q):\n%s\n%s", b, out, errOut)
						}
					})
				}
			})
		}
	})
}

// TestDenyWalkUnsearchableParent: run 1 makes a directory on the way to
// a denyRead glob's match readable but not searchable (chmod 600), which
// the next start's walk could list but not enter; run 2 restores it and
// reads the key. Run 2 must be refused or the read denied (an older bug:
// the walk skipped what it could not statx). As root the mode stops
// nothing, and the walk must still find the key.
func TestDenyWalkUnsearchableParent(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		w := u.workDir(t)
		proj := filepath.Join(w, "proj")
		x := "a/b/c/d/X"
		u.write(t, filepath.Join(proj, x, "Y/key.pem"), crossSecret)
		t.Cleanup(func() { os.Chmod(filepath.Join(proj, x), 0o755) })
		settings := `{"filesystem":{"allowWrite":["."],"denyRead":["**/*.pem"]}}`
		run := func(script string) crossResult {
			t.Helper()
			out, errOut, code := srtRun{u: u, dir: proj, settings: settings, env: []string{"HOME=" + filepath.Join(w, "home")},
				args: []string{"sh", "-c", script}}.run(t)
			return crossResult{out, errOut, code}
		}
		time.Sleep(2500 * time.Millisecond) // nothing racily clean: run 0's walk is stored
		if r := run("cat " + x + "/Y/key.pem; echo ran"); !strings.Contains(r.out, "ran") || strings.Contains(r.out, crossSecret) {
			t.Fatalf("run 0: %v", r)
		}
		if r := run("chmod 600 " + x + " && echo chmodded"); !strings.Contains(r.out, "chmodded") {
			t.Fatalf("run 1: %v", r)
		}
		r := run("chmod 700 " + x + "; cat " + x + "/Y/key.pem; echo ran")
		if strings.Contains(r.out, crossSecret) {
			t.Errorf("run 2 read the key below the directory run 1 made unsearchable: %v", r)
		}
		if r.code == 0 && !strings.Contains(r.out, "ran") {
			t.Errorf("run 2: %v", r)
		}
	})
}

// TestDirIndexOtherLocation: the index can be in /run/user/<uid>/srt-go
// or ~/.cache/srt-go, depending on XDG_RUNTIME_DIR. A run whose
// environment picks one must not be able to write the other (a later
// run, with the other environment, would trust a forged index): run 1,
// with XDG_RUNTIME_DIR set and allowWrite ["~"], writes
// ~/.cache/srt-go/dirindex; run 2, without it and with the runtime
// directory writable, writes /run/user/<uid>/srt-go/dirindex. Both must
// fail (found by an adversarial review).
func TestDirIndexOtherLocation(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		w := u.workDir(t)
		proj, home, xdg := filepath.Join(w, "proj"), filepath.Join(w, "home"), filepath.Join(w, "xdg")
		u.mkdir(t, proj)
		u.mkdir(t, home)
		u.mkdir(t, xdg)
		if err := os.Chmod(xdg, 0o700); err != nil {
			t.Fatal(err)
		}
		forge := `mkdir -p "$D" 2>/dev/null; echo FORGED >"$D/dirindex" 2>/dev/null && echo WROTE; echo done`
		run := func(env []string, writable string) crossResult {
			t.Helper()
			out, errOut, code := srtRun{u: u, dir: proj, settings: fmt.Sprintf(`{"filesystem":{"allowWrite":[%q]}}`, writable),
				env: append(env, "HOME="+home), args: []string{"sh", "-c", forge}}.run(t)
			return crossResult{out, errOut, code}
		}
		cache := filepath.Join(home, ".cache", "srt-go")
		r := run([]string{"XDG_RUNTIME_DIR=" + xdg, "D=" + cache}, "~")
		if b, _ := os.ReadFile(filepath.Join(cache, "dirindex")); strings.Contains(r.out, "WROTE") || strings.Contains(string(b), "FORGED") || !strings.Contains(r.out, "done") {
			t.Errorf("a run with XDG_RUNTIME_DIR set wrote ~/.cache/srt-go/dirindex: %v", r)
		}
		rt := fmt.Sprintf("/run/user/%d", u.uid)
		if _, err := os.Stat(rt); os.IsNotExist(err) {
			if err := os.MkdirAll(rt, 0o700); err != nil {
				t.Fatal(err)
			}
			os.Chown(rt, u.uid, u.gid)
			t.Cleanup(func() { os.RemoveAll(rt) })
		}
		before, _ := os.ReadFile(filepath.Join(rt, "srt-go", "dirindex"))
		r = run([]string{"D=" + filepath.Join(rt, "srt-go")}, rt)
		if after, _ := os.ReadFile(filepath.Join(rt, "srt-go", "dirindex")); strings.Contains(r.out, "WROTE") || string(after) != string(before) || !strings.Contains(r.out, "done") {
			t.Errorf("a run without XDG_RUNTIME_DIR wrote %s/srt-go/dirindex: %v", rt, r)
		}
	})
}

// TestDenyWalkLinkChain is the second adversarial review's regression
// of the write-deny walk: a chain of links through a directory outside
// every write root ("p/l1 -> el", "el/l2 -> W/sub") must be followed,
// so that "**/.env" run from p denies W/sub/.env at l1/l2/.env.
func TestDenyWalkLinkChain(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		for _, mode := range []string{"rules-on", "rules-off"} {
			t.Run(mode, func(t *testing.T) {
				w := u.workDir(t)
				root, env := filepath.Join(w, "W"), filepath.Join(w, "W/sub/.env")
				u.write(t, env, crossOriginal)
				u.write(t, filepath.Join(w, "p/l1"), "->"+filepath.Join(w, "el"))
				u.write(t, filepath.Join(w, "el/l2"), "->"+filepath.Join(root, "sub"))
				settings := fmt.Sprintf(`{"filesystem":{"allowWrite":[%q],"denyWrite":["**/.env"]%s}}`, root, rulesOff(mode))
				out, errOut, code := srtRun{u: u, dir: filepath.Join(w, "p"), settings: settings, env: []string{"HOME=" + filepath.Join(w, "home")},
					args: []string{"sh", "-c", `echo PWNED >>l1/l2/.env 2>/dev/null && echo WROTE; echo done`}}.run(t)
				if !strings.Contains(out, "done") {
					t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
				}
				if b, _ := os.ReadFile(env); strings.Contains(out, "WROTE") || string(b) != crossOriginal {
					t.Errorf("the .env behind the chain of links was written (%q):\n%s\n%s", b, out, errOut)
				}
			})
		}
	})
}

// TestDenyWalkOtherUsersLink is the second adversarial review's
// regression of the unsearchable-directory check: run 1 makes a
// directory holding a denyRead glob's match unsearchable (chmod 000);
// another user (nobody) links to it from a world-writable directory the
// glob's walk passes first; run 2 restores the mode and reads the
// secret. The link's owner must not make the directory look like
// another user's (ignored), nor hide its real path from the walk: run 2
// must be refused or the read denied. As root the mode stops nothing,
// and the walk must still find the secret.
func TestDenyWalkOtherUsersLink(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		for _, mode := range []string{"rules-on", "rules-off"} {
			t.Run(mode, func(t *testing.T) {
				d := u.workDir(t)
				root, e := filepath.Join(d, "W"), "a/b/c/d/e"
				u.write(t, filepath.Join(root, e, ".env"), crossSecret)
				pub := filepath.Join(d, "0pub") // sorts before the tree
				u.mkdir(t, pub)
				if err := os.Chmod(pub, os.ModeSticky|0o777); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.Chmod(filepath.Join(root, e), 0o755) })
				settings := fmt.Sprintf(`{"filesystem":{"allowWrite":[%q],"denyRead":[%q]%s}}`, root, d+"/**/.env", rulesOff(mode))
				run := func(script string) crossResult {
					t.Helper()
					out, errOut, code := srtRun{u: u, dir: root, settings: settings, env: []string{"HOME=" + filepath.Join(d, "home")},
						args: []string{"sh", "-c", script}}.run(t)
					return crossResult{out, errOut, code}
				}
				if r := run("chmod 000 " + e + " && echo chmodded"); !strings.Contains(r.out, "chmodded") {
					t.Fatalf("run 1: %v", r)
				}
				otherUser(t, "ln", "-s", filepath.Join(root, e), filepath.Join(pub, "lnk"))
				r := run("chmod 700 " + e + "; cat " + e + "/.env; echo ran")
				if strings.Contains(r.out, crossSecret) {
					t.Errorf("run 2 read the secret behind another user's link to the directory run 1 hid: %v", r)
				}
				if r.code == 0 && !strings.Contains(r.out, "ran") {
					t.Errorf("run 2: %v", r)
				}
			})
		}
	})
}

// rulesOff is the settings fragment turning the creation-time rules off
// for mode "rules-off".
func rulesOff(mode string) string {
	if mode == "rules-off" {
		return `,"enforceNamesAtCreation":false`
	}
	return ""
}
