package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/srt-go/srt/policy/dirindex"
	"github.com/srt-go/srt/settings"
)

// files makes each rel (a path below root; a trailing "/" makes a
// directory) and returns root.
func files(t *testing.T, root string, rels ...string) {
	t.Helper()
	for _, r := range rels {
		p := filepath.Join(root, r)
		if strings.HasSuffix(r, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func tempRoot(t *testing.T) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// resolvedMatches is expandDeny's result resolved and sorted, as the
// denies it becomes (makePath).
func resolvedMatches(pattern string, roots []Path, ix *dirindex.Index) []string {
	var out []string
	for _, m := range expandDeny(pattern, roots, ix, func(string, error) {}) {
		out = append(out, resolveMissing(m))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func rootsOf(dirs ...string) []Path {
	var out []Path
	for _, d := range dirs {
		out = append(out, makePath(d, OriginUser, "allowWrite"))
	}
	return out
}

// TestDenyWalkIntersection checks that a write-deny glob's walk keeps to
// the write roots (base above a root, inside one, disjoint; links into
// and out of a root) and that a read-deny's walks everything.
func TestDenyWalkIntersection(t *testing.T) {
	T := tempRoot(t)
	files(t, T, "ro/a/.env", "ro/w/.env", "ro/w/sub/.env", "ro/w/sub/deep/.env", "w2/x/.env", "other/.env", "ro/file/.env")
	symlink(t, filepath.Join(T, "ro/a"), filepath.Join(T, "ro/w/out"))  // out of the root
	symlink(t, filepath.Join(T, "w2"), filepath.Join(T, "ro/w/in"))     // into another root
	symlink(t, filepath.Join(T, "ro/w"), filepath.Join(T, "ro/w/loop")) // a loop
	w, w2 := filepath.Join(T, "ro/w"), filepath.Join(T, "w2")
	// Links outside every write root into one (found by an adversarial
	// review: the intersection alone missed them), and one out of it to
	// a tree outside (not followed: nothing there is writable).
	files(t, T, "p/real/.env", "p/far/")
	symlink(t, w+"/sub", T+"/p/lnk")
	symlink(t, T+"/other", T+"/p/far/out")
	symlink(t, w+"/sub/.env", T+"/p/dot.env")
	// Chains of links through a directory outside every write root, from
	// outside one and from inside one into another (found by a second
	// adversarial review: only a link straight into a root was followed).
	files(t, T, "q/", "el/", "c/root/", "c/el/", "c/w2/.env")
	symlink(t, T+"/el", T+"/q/l1")
	symlink(t, w+"/sub", T+"/el/l2")
	symlink(t, T+"/c/el", T+"/c/root/l1")
	symlink(t, T+"/c/w2", T+"/c/el/l2")
	cases := []struct {
		name, pattern string
		roots         []Path
		want          []string
	}{
		{"base above the root", T + "/ro/**/.env", rootsOf(w),
			[]string{w + "/.env", w + "/sub/.env", w + "/sub/deep/.env"}},
		{"base above, the whole pattern matched", T + "/ro/w/*/.env", rootsOf(w),
			[]string{w + "/sub/.env"}},
		{"base above, a pattern that cannot reach the root", T + "/ro/a/*", rootsOf(w), nil},
		{"base inside the root", T + "/ro/w/sub/**/.env", rootsOf(w),
			[]string{w + "/sub/.env", w + "/sub/deep/.env"}},
		{"disjoint", T + "/other/**/.env", rootsOf(w), nil},
		{"no write root", T + "/**/.env", []Path{}, nil},
		{"a link into another write root is followed", T + "/ro/w/**/.env", rootsOf(w, w2),
			[]string{w + "/.env", w + "/sub/.env", w + "/sub/deep/.env", w2 + "/x/.env"}},
		{"a link outside the roots into one, at any depth", T + "/p/**/.env", rootsOf(w),
			[]string{w + "/sub/.env", w + "/sub/deep/.env"}},
		{"a link outside the roots into one, one level", T + "/p/*/.env", rootsOf(w),
			[]string{w + "/sub/.env"}},
		{"a link outside the roots to a file inside one", T + "/p/*.env", rootsOf(w),
			[]string{w + "/sub/.env"}},
		{"a chain of links outside the roots into one", T + "/q/**/.env", rootsOf(w),
			[]string{w + "/sub/.env", w + "/sub/deep/.env"}},
		{"a chain of links from a root, out, into another", T + "/c/root/**/.env", rootsOf(T+"/c/root", T+"/c/w2"),
			[]string{T + "/c/w2/.env"}},
		{"a write root that is a file", T + "/ro/**/.env", rootsOf(filepath.Join(T, "ro/file/.env")),
			[]string{T + "/ro/file/.env"}},
		{"a read-deny walks everything, through every link", T + "/ro/**/.env", nil,
			[]string{T + "/ro/a/.env", T + "/ro/file/.env", w + "/.env", w + "/sub/.env", w + "/sub/deep/.env", w2 + "/x/.env"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := resolvedMatches(c.pattern, c.roots, nil); !slices.Equal(got, c.want) {
				t.Errorf("matches\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

// TestDenyWalkLinkSpelling checks that a match reached through a link
// inside a write root is reported at the link's spelling (and so denied
// at its target by makePath), as the walk before the intersection did.
func TestDenyWalkLinkSpelling(t *testing.T) {
	T := tempRoot(t)
	files(t, T, "w/real/.env")
	symlink(t, "real", filepath.Join(T, "w/alias"))
	got := expandDeny(T+"/w/alias/.env", rootsOf(T+"/w"), nil, func(string, error) {})
	if !slices.Equal(got, []string{T + "/w/alias/.env"}) {
		t.Fatalf("matches %q", got)
	}
	if p := makePath(got[0], OriginUser, "r"); p.Resolved != T+"/w/real/.env" {
		t.Errorf("resolved %s", p.Resolved)
	}
}

// later is a clock far enough ahead that nothing the test made is
// racily clean, so that every directory read is stored.
func later() time.Time { return time.Now().Add(time.Hour) }

// TestDenyWalkIndex reshapes a tree between walks as a sandboxed command
// can between runs, and checks after each change that a walk through the
// index finds exactly what a full walk finds, for a write-deny and a
// read-deny.
func TestDenyWalkIndex(t *testing.T) {
	for _, mode := range []string{"write", "read"} {
		t.Run(mode, func(t *testing.T) {
			T := tempRoot(t)
			w := filepath.Join(T, "w")
			files(t, w, "d1/.env", "d2/f", "d3/x/", "elsewhere/.env", "keep/x/f")
			idx := indexPath(t)
			if st, err := dirindex.StatDir(w, nil); err != nil || !dirindex.Cacheable(st) {
				t.Skipf("%s is not on a file system the index trusts (%v)", w, err)
			}
			roots := rootsOf(w)
			if mode == "read" {
				roots = nil
			}
			pattern := T + "/**/.env"
			check := func(step string) {
				t.Helper()
				time.Sleep(20 * time.Millisecond) // a later change gets a later ctime
				ix := dirindex.OpenWithClock(idx, later)
				got := resolvedMatches(pattern, roots, ix)
				if err := ix.Save(); err != nil {
					t.Fatal(err)
				}
				hits, kept := ix.Stats()
				if want := resolvedMatches(pattern, roots, nil); !slices.Equal(got, want) {
					t.Fatalf("%s: through the index %q, a full walk %q", step, got, want)
				}
				t.Logf("%s: %d reused, %d kept", step, hits, kept)
				if kept == 0 {
					t.Fatalf("%s: nothing kept in the index: the test proves nothing", step)
				}
			}
			check("first walk")
			ix := dirindex.OpenWithClock(idx, later)
			resolvedMatches(pattern, roots, ix)
			if hits, kept := ix.Stats(); hits == 0 || hits != kept {
				t.Fatalf("unchanged tree: %d of %d directories reused", hits, kept)
			}
			files(t, w, "d2/.env")
			check("a .env added")
			mv(t, w+"/d1", w+"/d9")
			check("a directory holding a .env renamed")
			mv(t, w+"/d2", w+"/tmp")
			mv(t, w+"/d3", w+"/d2")
			mv(t, w+"/tmp", w+"/d3")
			check("two directories swapped")
			if err := os.RemoveAll(w + "/d3"); err != nil {
				t.Fatal(err)
			}
			symlink(t, w+"/elsewhere", w+"/d3")
			check("a directory replaced by a link")
			fi, err := os.Stat(w + "/keep/x")
			if err != nil {
				t.Fatal(err)
			}
			files(t, w, "keep/x/.env")
			if err := os.Chtimes(w+"/keep/x", fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
			check("a .env added and the directory's mtime set back")
			if err := os.RemoveAll(w + "/d9"); err != nil {
				t.Fatal(err)
			}
			check("a directory removed")
		})
	}
}

func mv(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// TestMandatoryWalkIndex checks that the mandatory names' walk through
// the index finds a protected name added, with the directory's mtime set
// back, since it was stored.
func TestMandatoryWalkIndex(t *testing.T) {
	w := tempRoot(t)
	files(t, w, "a/b/f", "c/")
	idx := indexPath(t)
	walk := func() []string {
		ix := dirindex.OpenWithClock(idx, later)
		ps, err := mandatoryDenies([]walkRoot{{w, false}}, 3, false, w, gitRefs{}, ix)
		if err != nil {
			t.Fatal(err)
		}
		if err := ix.Save(); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range ps {
			out = append(out, p.Resolved)
		}
		return out
	}
	walk()
	if hits, _ := func() (int, int) {
		ix := dirindex.OpenWithClock(idx, later)
		_, _ = mandatoryDenies([]walkRoot{{w, false}}, 3, false, w, gitRefs{}, ix)
		return ix.Stats()
	}(); hits == 0 {
		t.Skip("the index is not used on this file system")
	}
	time.Sleep(20 * time.Millisecond)
	fi, err := os.Stat(w + "/a/b")
	if err != nil {
		t.Fatal(err)
	}
	files(t, w, "a/b/.bashrc", "c/.git/hooks/")
	if err := os.Chtimes(w+"/a/b", fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	got := walk()
	for _, want := range []string{w + "/a/b/.bashrc", w + "/c/.git/hooks"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s not protected: %q", want, got)
		}
	}
}

// TestCompileDirIndex compiles with the index outside and inside the
// write roots: outside it is written and reused; inside (where the
// sandbox could write it) it is neither read nor written; and its
// directory is read- and write-denied.
func TestCompileDirIndex(t *testing.T) {
	tr := newTree(t)
	files(t, tr.proj, "a/.env", "b/c/")
	outside := filepath.Join(tr.root, "state", "srt-go", "dirindex")
	inside := filepath.Join(tr.proj, "state", "srt-go", "dirindex")
	for _, d := range []string{filepath.Dir(outside), filepath.Dir(inside)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(dirindex.RacyWindow + 100*time.Millisecond) // nothing racily clean
	const js = `{"filesystem":{"allowWrite":["."],"denyWrite":["**/.env"],"denyRead":["**/*.pem"]}}`
	compile := func(index string) *Policy {
		t.Helper()
		s, err := settingsOf(js)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Compile(s, Env{Cwd: tr.proj, Home: tr.home, DirIndex: index})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	compile(outside)
	if files, _ := filepath.Glob(outside + ".*"); len(files) == 0 {
		t.Fatal("index outside the write roots not written")
	}
	p := compile(outside)
	if !slices.ContainsFunc(p.Notes, func(n string) bool {
		return strings.Contains(n, "directories reused") && !strings.Contains(n, " 0 directories reused")
	}) {
		t.Errorf("index not reused: %q", p.Notes)
	}
	for _, l := range [][]Path{p.DenyRead, p.DenyWrite} {
		if longestPrefix(l, outside) < 0 {
			t.Errorf("the index directory is not denied: %v", l)
		}
	}
	if !slices.ContainsFunc(p.DenyWrite, func(d Path) bool { return d.Resolved == tr.proj+"/a/.env" }) {
		t.Errorf("a/.env not denied")
	}
	if err := os.WriteFile(inside, []byte("planted"), 0o600); err != nil {
		t.Fatal(err)
	}
	p = compile(inside)
	if b, err := os.ReadFile(inside); err != nil || string(b) != "planted" {
		t.Errorf("index inside a write root was written: %q %v", b, err)
	}
	if files, _ := filepath.Glob(inside + ".*"); len(files) != 0 {
		t.Errorf("index inside a write root was written: %v", files)
	}
	if slices.ContainsFunc(p.Notes, func(n string) bool { return strings.Contains(n, "directory index") }) {
		t.Errorf("index inside a write root used: %q", p.Notes)
	}
	if !slices.ContainsFunc(p.DenyWrite, func(d Path) bool { return d.Resolved == tr.proj+"/a/.env" }) {
		t.Errorf("a/.env not denied")
	}
}

func settingsOf(js string) (*settings.Settings, error) {
	return settings.Parse([]byte(js), "test.json")
}

// indexPath returns an index file's path in a new private directory.
func indexPath(t *testing.T) string {
	t.Helper()
	d := filepath.Join(tempRoot(t), "srt-go")
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(d, "dirindex")
}

// TestCompileNoWriteRoot checks that a denyWrite glob with nothing
// writable walks nothing (its intersection with no write root is empty).
func TestCompileNoWriteRoot(t *testing.T) {
	tr := newTree(t)
	files(t, tr.proj, "a/.env")
	s, err := settingsOf(`{"filesystem":{"denyWrite":["**/.env"]}}`)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(s, Env{Cwd: tr.proj, Home: tr.home})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.AllowWrite) != 0 {
		t.Skipf("write roots %v: the case needs none", p.AllowWrite)
	}
	if slices.ContainsFunc(p.DenyWrite, func(d Path) bool { return d.globMatch }) {
		t.Errorf("a match outside every write root: %v", p.DenyWrite)
	}
	if !slices.ContainsFunc(p.Notes, func(n string) bool { return strings.Contains(n, "matches nothing writable") }) {
		t.Errorf("notes %q", p.Notes)
	}
}

// TestIndexDeniesEveryLocation checks that a sandbox denies every place
// the index can be, not only the one its environment picks: a run with
// XDG_RUNTIME_DIR set denies ~/.cache/srt-go too, and one without it
// /run/user/<euid>/srt-go (found by an adversarial review: the other
// place was writable with allowWrite ["~"], and a later run with the
// other environment trusted what was forged there).
func TestIndexDeniesEveryLocation(t *testing.T) {
	tr := newTree(t)
	xdg := filepath.Join(tr.root, "xdg")
	if err := os.Mkdir(xdg, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", tr.home)
	rt := fmt.Sprintf("/run/user/%d/srt-go", os.Geteuid())
	for _, env := range []string{xdg, ""} {
		t.Setenv("XDG_RUNTIME_DIR", env)
		denies, _ := indexDenies(&linkGuard{euid: uint32(os.Geteuid())}, dirindex.DefaultPath())
		want := []string{filepath.Join(tr.home, ".cache/srt-go"), rt}
		if env != "" {
			want = append(want, filepath.Join(xdg, "srt-go"))
		}
		for _, d := range want {
			if !slices.ContainsFunc(denies, func(p Path) bool { return p.Literal == d && p.Rule == RuleDirIndex }) {
				t.Errorf("XDG_RUNTIME_DIR=%q: %s not denied: %v", env, d, denies)
			}
		}
	}
}
