package policy

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/srt-go/srt/settings"
)

// tree is a work directory with a home and a project, for compiling
// settings against a tree an earlier run may have shaped.
type tree struct{ root, home, proj string }

func newTree(t *testing.T) tree {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tr := tree{root: root, home: filepath.Join(root, "home"), proj: filepath.Join(root, "home", "proj")}
	for _, d := range []string{tr.proj, filepath.Join(root, "victim")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

func (tr tree) compile(t *testing.T, js string) (*Policy, error) {
	t.Helper()
	s, err := settings.Parse([]byte(js), "test.json")
	if err != nil {
		t.Fatalf("settings: %v", err)
	}
	return Compile(s, Env{Cwd: tr.proj, Home: tr.home})
}

func (tr tree) mkdir(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join(tr.root, rel)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func (tr tree) link(t *testing.T, target, rel string) string {
	t.Helper()
	p := filepath.Join(tr.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeRoots(p *Policy) []string {
	var out []string
	for _, w := range p.AllowWrite {
		out = append(out, w.Resolved)
	}
	return out
}

// TestCrossRunLinks compiles settings against trees that an earlier run
// (links inside write roots) or another user (links in directories others
// can change) prepared, and checks that no write root or rule follows them.
func TestCrossRunLinks(t *testing.T) {
	victim := func(tr tree) string { return filepath.Join(tr.root, "victim") }
	cases := []struct {
		name     string
		prepare  func(t *testing.T, tr tree)
		settings string
		// refused: Compile fails with ErrUnenforceable naming this
		// (root-relative) link; else the victim must not be writable.
		refused string
		check   func(t *testing.T, tr tree, p *Policy)
	}{
		{name: "default-path-planted-link", settings: `{"filesystem":{"allowWrite":[".","~/.npm"]}}`,
			prepare: func(t *testing.T, tr tree) {
				tr.mkdir(t, "home/.npm")
				tr.link(t, victim(tr), "home/.npm/_logs")
			},
			check: func(t *testing.T, tr tree, p *Policy) {
				if !slices.ContainsFunc(p.Notes, func(n string) bool { return strings.Contains(n, "left out") }) {
					t.Errorf("no note says the default path was left out: %q", p.Notes)
				}
			}},
		{name: "default-path-link-to-root", settings: `{"filesystem":{"allowWrite":["~/.claude"]}}`,
			prepare: func(t *testing.T, tr tree) { tr.link(t, "/", "home/.claude/debug") },
			check: func(t *testing.T, tr tree, p *Policy) {
				if p.Writable("/etc") {
					t.Errorf("/etc writable through a planted ~/.claude/debug: %v", writeRoots(p))
				}
			}},
		{name: "default-path-real-dir-kept", settings: `{"filesystem":{"allowWrite":["."]}}`,
			prepare: func(t *testing.T, tr tree) { tr.mkdir(t, "home/.npm/_logs") },
			check: func(t *testing.T, tr tree, p *Policy) {
				if !p.Writable(filepath.Join(tr.home, ".npm/_logs/x")) {
					t.Errorf("the user's own ~/.npm/_logs is not writable: %v", writeRoots(p))
				}
			}},
		{name: "explicit-entry-through-planted-link", settings: `{"filesystem":{"allowWrite":["./ws","./ws/cache"]}}`,
			prepare: func(t *testing.T, tr tree) { tr.link(t, victim(tr), "home/proj/ws/cache") },
			refused: "home/proj/ws/cache"},
		{name: "explicit-entry-through-own-link", settings: `{"filesystem":{"allowWrite":["./out"]}}`,
			prepare: func(t *testing.T, tr tree) { tr.link(t, victim(tr), "home/proj/out") },
			check: func(t *testing.T, tr tree, p *Policy) {
				// The link lies in the project, which is not writable: only
				// the user could have made it, so it is followed.
				if !p.Writable(filepath.Join(victim(tr), "x")) {
					t.Errorf("a link outside the write roots was not followed: %v", writeRoots(p))
				}
			}},
		{name: "explicit-entry-link-in-world-writable-dir", settings: `{"filesystem":{"allowWrite":["../../shared/build"]}}`,
			prepare: func(t *testing.T, tr tree) {
				d := tr.mkdir(t, "shared")
				if err := os.Chmod(d, 0o777); err != nil {
					t.Fatal(err)
				}
				tr.link(t, victim(tr), "shared/build")
			},
			refused: "shared/build"},
		{name: "glob-match-planted-link", settings: `{"filesystem":{"allowWrite":["./build","**/node_modules"]}}`,
			prepare: func(t *testing.T, tr tree) { tr.link(t, victim(tr), "home/proj/build/node_modules") },
			check: func(t *testing.T, tr tree, p *Policy) {
				if p.Writable(filepath.Join(victim(tr), "x")) {
					t.Errorf("a planted node_modules link made its target writable: %v", writeRoots(p))
				}
			}},
		{name: "deny-read-parent-planted-link", settings: `{"filesystem":{"allowWrite":["."],"denyRead":["./config/secrets.env"]}}`,
			prepare: func(t *testing.T, tr tree) { tr.link(t, tr.mkdir(t, "decoy"), "home/proj/config") },
			refused: "home/proj/config"},
		{name: "allow-read-planted-link", settings: `{"filesystem":{"allowWrite":["."],"denyRead":["~/.ssh"],"allowRead":["./pub"]}}`,
			prepare: func(t *testing.T, tr tree) { tr.link(t, tr.mkdir(t, "home/.ssh"), "home/proj/pub") },
			refused: "home/proj/pub"},
		{name: "deny-read-missing-is-uncreatable", settings: `{"filesystem":{"allowWrite":["."],"denyRead":["./late/secret.env"]}}`,
			prepare: func(t *testing.T, tr tree) { tr.mkdir(t, "home/proj/late") },
			check: func(t *testing.T, tr tree, p *Policy) {
				if p.Writable(filepath.Join(tr.proj, "late/secret.env")) {
					t.Error("a missing denyRead path can be created")
				}
			}},
		{name: "deny-read-glob-follows-linked-dir", settings: `{"filesystem":{"allowWrite":["."],"denyRead":["**/secret*"]}}`,
			prepare: func(t *testing.T, tr tree) {
				d := tr.mkdir(t, "shared")
				os.WriteFile(filepath.Join(d, "secret.txt"), []byte("s"), 0o644)
				tr.link(t, "../../shared", "home/proj/linkdir")
				// A loop must end the walk, not hang it.
				tr.link(t, ".", "home/proj/loop/a")
				tr.link(t, ".", "home/proj/loop/b")
			},
			check: func(t *testing.T, tr tree, p *Policy) {
				if p.Readable(filepath.Join(tr.root, "shared/secret.txt")) {
					t.Errorf("shared/secret.txt readable through linkdir: denyRead %v", p.DenyRead)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := newTree(t)
			c.prepare(t, tr)
			p, err := tr.compile(t, c.settings)
			if c.refused != "" {
				if err == nil || !errors.Is(err, ErrUnenforceable) || !strings.Contains(err.Error(), filepath.Join(tr.root, c.refused)) {
					t.Fatalf("Compile = %v, want ErrUnenforceable naming %s", err, c.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if p.Writable(filepath.Join(victim(tr), "x")) && c.name != "explicit-entry-through-own-link" {
				t.Errorf("victim writable: write roots %v", writeRoots(p))
			}
			if c.check != nil {
				c.check(t, tr, p)
			}
		})
	}
}

// TestOtherUsersPaths needs root to make files owned by another user: a
// /tmp/claude-like default path or a link made by "nobody" is not the
// user's.
func TestOtherUsersPaths(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown to another user")
	}
	const nobody = 65534
	tr := newTree(t)
	sticky := tr.mkdir(t, "tmp")
	if err := os.Chmod(sticky, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	l := tr.link(t, filepath.Join(tr.root, "victim"), "tmp/link")
	if err := os.Lchown(l, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	g := &linkGuard{euid: 0}
	if _, err := g.resolve(filepath.Join(l, "x")); err == nil || !strings.Contains(err.Error(), "another user") {
		t.Errorf("a link made by another user in a sticky directory was followed: %v", err)
	}
	own := tr.mkdir(t, "tmp/claude")
	if why := g.ownDirectory(own); why != "" {
		t.Errorf("the user's own directory in a sticky directory refused: %s", why)
	}
	if err := os.Chown(own, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if why := g.ownDirectory(own); why == "" {
		t.Error("a directory owned by another user accepted as a default write path")
	}
}

// TestUnlistableWriteRoot: a write root srt cannot list refuses the run.
func TestUnlistableWriteRoot(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root lists any directory")
	}
	tr := newTree(t)
	if err := os.Chmod(tr.proj, 0o300); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(tr.proj, 0o755)
	if _, err := tr.compile(t, `{"filesystem":{"allowWrite":["."]}}`); !errors.Is(err, ErrUnenforceable) {
		t.Fatalf("Compile = %v, want ErrUnenforceable", err)
	}
}
