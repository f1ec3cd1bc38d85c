package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDirIndexCrossRun is the multi-run attack on the deny walks'
// directory index (issue 19; SECURITY.md, "Reshaping the tree between
// runs"), with the creation-time rules on and off (then the mounts the
// walks place are all there is): run 0 stores the walks of "**/.env"
// (denyWrite) and "**/*.pem" (denyRead) in the index; run 1, sandboxed,
// reshapes the tree so that a cached walk would miss matches (renames
// directories, plants .env files and links to them, sets mtimes back);
// run 2 must still deny writing every .env, at every spelling. Then the
// user, outside, adds a .env and a key (mtime set back too), and run 3
// must deny writing the one and reading the other.
func TestDirIndexCrossRun(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		for _, mode := range []string{"rules-on", "rules-off"} {
			t.Run(mode, func(t *testing.T) { dirIndexCrossRun(t, u, mode == "rules-on") })
		}
	})
}

func dirIndexCrossRun(t *testing.T, u *account, rulesOn bool) {
	w := u.workDir(t)
	proj, home := filepath.Join(w, "proj"), filepath.Join(w, "home")
	u.mkdir(t, home)
	for _, p := range []string{"a/.env", "b/c/.env", "deep/x/y/.env"} {
		u.write(t, filepath.Join(proj, p), crossOriginal)
	}
	u.write(t, filepath.Join(proj, "keys/k.pem"), crossSecret)
	for _, d := range []string{"deep/x/z", "m", "host/d"} {
		u.mkdir(t, filepath.Join(proj, d))
	}
	settings := `{"filesystem":{"allowWrite":["."],"denyWrite":["**/.env"],"denyRead":["**/*.pem"]}}`
	if !rulesOn {
		settings = `{"filesystem":{"allowWrite":["."],"denyWrite":["**/.env"],"denyRead":["**/*.pem"],"enforceNamesAtCreation":false}}`
	}
	run := func(script string) crossResult {
		t.Helper()
		r := srtRun{u: u, dir: proj, settings: settings, env: []string{"HOME=" + home}, args: []string{"sh", "-c", script}}
		out, errOut, code := r.run(t)
		return crossResult{out, errOut, code}
	}
	// Nothing racily clean: what run 0 reads is stored.
	time.Sleep(2500 * time.Millisecond)
	if r := run("true"); r.code != 0 {
		t.Fatalf("run 0: %v", r)
	}
	index := filepath.Join(home, ".cache", "srt-go", "dirindex")
	walks, _ := filepath.Glob(index + ".*")
	if len(walks) == 0 {
		t.Fatalf("run 0 left no index at %s.*: the test proves nothing", index)
	}
	for _, w := range walks {
		if fi, err := os.Stat(w); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("run 0 left an index file that is not private: %s (%v, %v)", w, fi, err)
		}
	}
	// Run 1: the attacker's preparation. A step may be refused (a
	// rename of a directory holding a mount, a new .env with the
	// creation-time rules); what succeeds is the tree run 2 faces.
	r1 := run(`old=$(stat -c %Y .)
mv a a2; mv keys keys2; mv deep/x deep/x2
echo planted >deep/x/z/.env; touch -d @0 deep/x/z
mkdir q; echo planted >q/.env; mv q q2; mv m m2; echo planted >m2/.env; touch -d @0 q2 m2
ln -s a2 alias; ln -s ../b/c deep/link; ln -s keys2 keylink; ln -s x/z deep/zlink; ln -s q2 qlink
touch -d @0 a2 keys2 deep deep/x; touch -d @$old .
ls -a "$HOME/.cache/srt-go" 2>/dev/null; echo prepared`)
	if !strings.Contains(r1.out, "prepared") {
		t.Fatalf("run 1: %v", r1)
	}
	if strings.Contains(r1.out, "dirindex") {
		t.Errorf("run 1 listed the index directory: %v", r1)
	}
	attack := `for f in a/.env a2/.env alias/.env b/c/.env deep/link/.env deep/x/y/.env deep/x/z/.env deep/zlink/.env q2/.env qlink/.env m2/.env host/d/.env; do
  [ -e "$f" ] && { echo PWNED >"$f" 2>/dev/null && echo "WROTE $f"; }
done
for f in keys/k.pem keys2/k.pem keylink/k.pem host/d/k.pem; do cat "$f" 2>/dev/null; done
echo done`
	check := func(name string, r crossResult) {
		t.Helper()
		if !strings.Contains(r.out, "done") {
			t.Fatalf("%s: %v", name, r)
		}
		if strings.Contains(r.out, "WROTE") || strings.Contains(r.out, crossSecret) {
			t.Errorf("%s: a denied file was written or read:\n%v", name, r)
		}
		filepath.WalkDir(proj, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && d.Name() == ".env" {
				if b, _ := os.ReadFile(p); strings.Contains(string(b), "PWNED") {
					t.Errorf("%s: %s was written", name, p)
				}
			}
			return nil
		})
	}
	check("run 2", run(attack))
	// The user adds a .env and a key between runs, in a directory the
	// index holds, and sets the directory's mtime back.
	d := filepath.Join(proj, "host/d")
	fi, err := os.Stat(d)
	if err != nil {
		t.Fatal(err)
	}
	u.write(t, filepath.Join(d, ".env"), crossOriginal)
	u.write(t, filepath.Join(d, "k.pem"), crossSecret)
	if err := os.Chtimes(d, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	check("run 3", run(attack))
}
