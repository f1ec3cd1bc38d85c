package policy

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/srt-go/srt/settings"
)

// TestCompileStates is the policy's contract as a table: for settings
// over a prepared tree, what each path may be (read? written?). Every
// backend enforces exactly these answers (Readable, Writable).
func TestCompileStates(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	ws, home := filepath.Join(base, "ws"), filepath.Join(base, "home")
	for _, d := range []string{"ws/.git/hooks", "ws/src", "ws/secret/public", "ws/build", "ws/sub/.git", "home/.ssh"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"ws/.git/HEAD", "ws/.git/config", "ws/src/a.go", "ws/secret/key", "ws/.env", "ws/sub/.git/HEAD", "home/.ssh/id_ed25519", "home/.bashrc"} {
		if err := os.WriteFile(filepath.Join(base, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	entries := func(ps ...string) []settings.PathEntry {
		var out []settings.PathEntry
		for _, p := range ps {
			out = append(out, settings.PathEntry{Path: p})
		}
		return out
	}
	type want struct {
		path        string
		read, write bool
	}
	for _, c := range []struct {
		name string
		fs   settings.Filesystem
		want []want
	}{
		{"defaults: read everything, write nothing", settings.Filesystem{}, []want{
			{"ws/src/a.go", true, false}, {"home/.ssh/id_ed25519", true, false}, {"/etc/passwd", true, false}}},
		{"a write root keeps the mandatory denies", settings.Filesystem{AllowWrite: entries(".")}, []want{
			{"ws/src/a.go", true, true}, {"ws/new", true, true}, {"ws/.git/HEAD", true, true},
			{"ws/.git/hooks", true, false}, {"ws/.git/hooks/pre-commit", true, false}, {"ws/.git/config", true, false},
			{"ws/.bashrc", true, false}, {"ws/.vscode/settings.json", true, false}, {"ws/.claude/settings.json", true, false},
			{"ws/.mcp.json", true, false}, {"ws/sub/.git/hooks/x", true, false}, {"home/x", true, false}}},
		{"allowGitConfig frees the config, not the hooks", settings.Filesystem{AllowWrite: entries("."), AllowGitConfig: true}, []want{
			{"ws/.git/config", true, true}, {"ws/.git/hooks/pre-commit", true, false}}},
		{"denyWrite holes in a write root", settings.Filesystem{AllowWrite: entries("."), DenyWrite: entries("build", ".env")}, []want{
			{"ws/build", true, false}, {"ws/build/out", true, false}, {"ws/.env", true, false}, {"ws/src/a.go", true, true}}},
		{"denyRead with an allowRead carve-out", settings.Filesystem{AllowWrite: entries("."), DenyRead: entries("secret", "~/.ssh"), AllowRead: entries("secret/public")}, []want{
			{"ws/secret", false, false}, {"ws/secret/key", false, false}, {"ws/secret/public", true, true},
			{"home/.ssh/id_ed25519", false, false}, {"home/.bashrc", true, false}}},
		{"a missing denyRead cannot be written either", settings.Filesystem{AllowWrite: entries("."), DenyRead: entries("token")}, []want{
			{"ws/token", false, false}, {"ws/src/a.go", true, true}}},
		{"filesystem.disabled", settings.Filesystem{Disabled: true}, []want{
			{"ws/.git/hooks/x", true, true}, {"home/.bashrc", true, true}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := settings.Default()
			s.Filesystem = c.fs
			p, err := Compile(s, Env{Cwd: ws, Home: home})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				path := w.path
				if !filepath.IsAbs(path) {
					path = filepath.Join(base, path)
				}
				if r, wr := p.Readable(path), p.Writable(path); r != w.read || wr != w.write {
					t.Errorf("%s: read %v write %v, want read %v write %v", w.path, r, wr, w.read, w.write)
				}
			}
		})
	}
}

// TestOrigins: every rule carries the kind of rule it comes from, so that
// backends decide on Origin, never on the Rule's text.
func TestOrigins(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	ws := filepath.Join(base, "ws")
	os.MkdirAll(filepath.Join(ws, "build"), 0o755)
	s := settings.Default()
	s.Filesystem.AllowWrite = []settings.PathEntry{{Path: "."}}
	s.Filesystem.DenyWrite = []settings.PathEntry{{Path: "build"}}
	p, err := Compile(s, Env{Cwd: ws, Home: filepath.Join(base, "home")})
	if err != nil {
		t.Fatal(err)
	}
	origin := func(list []Path, path string) Origin {
		t.Helper()
		for _, e := range list {
			if e.Resolved == path {
				return e.Origin
			}
		}
		t.Fatalf("%s not in the list", path)
		return 0
	}
	if o := origin(p.DenyWrite, filepath.Join(ws, "build")); o != OriginUser {
		t.Errorf("denyWrite entry: %v", o)
	}
	if o := origin(p.DenyWrite, filepath.Join(ws, ".bashrc")); o != OriginMandatory {
		t.Errorf(".bashrc: %v", o)
	}
	if o := origin(p.AllowWrite, ws); o != OriginUser {
		t.Errorf("allowWrite entry: %v", o)
	}
	v, err := CompileView(ViewRules{Binds: []ViewBind{{Host: ws, Guest: "/w", Writable: true}}, Protected: []string{filepath.Join(ws, "build")}, Home: filepath.Join(base, "home")})
	if err != nil {
		t.Fatal(err)
	}
	if o := origin(v.DenyWrite, filepath.Join(ws, "build")); o != OriginProtected {
		t.Errorf("protectedPaths entry: %v", o)
	}
	if o := origin(v.AllowWrite, ws); o != OriginBind {
		t.Errorf("bind: %v", o)
	}
}

// TestViewLinksInBinds: a link inside any bind's tree may have been made
// by a session that had the bind writable (this one in chat mode,
// another one meanwhile): a runnerStateDirs entry or a bind reached
// through one is refused, even where this session's binds are
// read-only.
func TestViewLinksInBinds(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	ws, cfg := filepath.Join(base, "ws"), filepath.Join(base, "home", ".config")
	for _, d := range []string{ws, cfg} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink(cfg, filepath.Join(ws, "state"))
	os.MkdirAll(filepath.Join(ws, "real-state"), 0o755)
	for _, tc := range []struct {
		name     string
		writable []string
		binds    []ViewBind
		ok       bool
	}{
		{"state dir through a link in a read-only bind", []string{ws + "/state"}, []ViewBind{{Host: ws, Guest: "/w"}}, false},
		{"state dir through a link in a writable bind", []string{ws + "/state"}, []ViewBind{{Host: ws, Guest: "/w", Writable: true}}, false},
		{"a real state dir", []string{ws + "/real-state"}, []ViewBind{{Host: ws, Guest: "/w"}}, true},
		{"a bind through a link in another bind", nil, []ViewBind{{Host: ws, Guest: "/w"}, {Host: ws + "/state", Guest: "/cfg"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CompileView(ViewRules{Binds: tc.binds, Writable: tc.writable, Home: filepath.Join(base, "home")})
			if (err == nil) != tc.ok {
				t.Errorf("CompileView = %v, want ok %v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrUnenforceable) {
				t.Errorf("%v does not wrap ErrUnenforceable", err)
			}
		})
	}
}
