package fsplan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/settings"
)

// mountState is what the sandbox can do at a path once a plan's mounts
// are in place.
type mountState struct {
	read  bool // the host's content there can be read
	write bool // the host's content there can be changed
}

// simulate applies plan's operations as the kernel would and returns the
// state of sandbox path g: the last operation whose destination holds g
// decides (a later mount at an ancestor hides earlier ones below it), and
// --remount-ro makes the last mount at exactly its destination read-only.
// A tmpfs hides the host (nothing below it can be read or changed on the
// host); /dev/null bound on a file makes it unreadable (nodev); nothing
// can come into being below a file that is a mount point.
func simulate(plan Plan, g string) mountState {
	ro := map[int]bool{}
	for i, o := range plan.Ops {
		if o.Kind != OpRemountRO {
			continue
		}
		for j := i - 1; j >= 0; j-- {
			if plan.Ops[j].Dst == o.Dst && plan.Ops[j].Kind != OpRemountRO {
				ro[j] = true
				break
			}
		}
	}
	for i := len(plan.Ops) - 1; i >= 0; i-- {
		o := plan.Ops[i]
		if o.Kind == OpRemountRO || o.Kind == OpSymlink || !policy.Within(g, o.Dst) {
			continue
		}
		if o.Dst != g && (o.Kind == OpBind || o.Kind == OpROBind) && o.Src != "/dev/null" {
			if fi, err := os.Stat(o.Src); err == nil && !fi.IsDir() {
				// Below a file that is a mount point: nothing can be
				// created there, and the file cannot be replaced.
				return mountState{read: true}
			}
		}
		switch {
		case o.Kind == OpTmpfs || o.Kind == OpDev || o.Kind == OpProc:
			return mountState{}
		case o.Src == "/dev/null":
			return mountState{}
		case o.Kind == OpBind:
			return mountState{read: true, write: !ro[i]}
		default:
			return mountState{read: true}
		}
	}
	return mountState{} // a confined view's empty root
}

// attackTree is a workspace as a previous run left it: the sandboxed
// command controls its write roots between runs.
type attackTree struct {
	name  string
	dirs  []string
	files []string
	links [][2]string // name, target
	// ro must be neither writable nor creatable; rw must stay writable
	// (so that a plan making everything read-only fails the test).
	ro, rw []string
}

var attackTrees = []attackTree{
	{name: "plain repository", dirs: []string{".git/hooks", ".git/objects", "src"}, files: []string{".git/HEAD", ".git/config", "src/main.go"},
		ro: []string{".git/hooks", ".git/hooks/pre-commit", ".git/config", ".bashrc", ".zshrc", ".gitmodules", ".vscode", ".vscode/settings.json", ".claude/commands/x.md", ".mcp.json"},
		rw: []string{"src/main.go", "src/new.go", ".git/objects/ab", ".git/HEAD"}},
	{name: "hooks directory removed", dirs: []string{".git/objects"}, files: []string{".git/HEAD", ".git/config"},
		ro: []string{".git/hooks", ".git/hooks/post-checkout", ".git/config"}, rw: []string{".git/objects/ab"}},
	{name: "no repository yet", dirs: []string{"src"},
		ro: []string{".git", ".git/hooks/pre-commit", ".git/config", ".bashrc", ".idea/workspace.xml"}, rw: []string{"src/x"}},
	{name: "start-up files planted", files: []string{".bashrc", ".profile", ".zshenv", ".ripgreprc"}, dirs: []string{"work"},
		ro: []string{".bashrc", ".profile", ".zshenv", ".ripgreprc", ".bash_login"}, rw: []string{"work/a"}},
	{name: "nested repository deep down", dirs: []string{"a/b/c/.git/hooks", "a/b/c/src"}, files: []string{"a/b/c/.git/HEAD", "a/b/c/.git/config"},
		ro: []string{"a/b/c/.git/hooks/pre-push", "a/b/c/.git/config"}, rw: []string{"a/b/c/src/x", "a/b/x"}},
	{name: "agent config present", dirs: []string{".claude/commands", ".claude/agents"}, files: []string{".claude/settings.json"},
		ro: []string{".claude/settings.json", ".claude/commands/evil.md", ".claude/agents/a.md", ".claude/settings.local.json"}},
	{name: "git directory as a file", files: []string{".git"}, dirs: []string{"real/hooks"},
		ro: []string{".git", ".git/hooks"}, rw: []string{"real/hooks/x"}},
	{name: "agent config dir replaced by a file", files: []string{".claude", ".hg"},
		ro: []string{".claude/commands/x.md", ".claude/settings.json", ".hg/hgrc"}},
	{name: "linked worktree metadata", dirs: []string{".git/worktrees/w/hooks", ".git/modules/m/hooks"}, files: []string{".git/HEAD", ".git/config", ".git/worktrees/w/commondir"},
		ro: []string{".git/worktrees", ".git/modules", ".git/modules/m/hooks/x"}},
}

// TestAttackTreesBothViews runs each prepared tree through the host view
// (the srt command line: allowWrite the workspace) and the confined view
// (srtd: the workspace bound writable at /work) and asserts the same
// read/write state at every protected path in both, and the state each
// attack needs refused.
func TestAttackTreesBothViews(t *testing.T) {
	for _, c := range attackTrees {
		t.Run(c.name, func(t *testing.T) {
			base, _ := filepath.EvalSymlinks(t.TempDir())
			ws, home := filepath.Join(base, "ws"), filepath.Join(base, "home")
			for _, d := range append([]string{"", "../home"}, c.dirs...) {
				if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range c.files {
				if err := os.WriteFile(filepath.Join(ws, f), []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, l := range c.links {
				if err := os.Symlink(l[1], filepath.Join(ws, l[0])); err != nil {
					t.Fatal(err)
				}
			}
			s := settings.Default()
			s.Filesystem.AllowWrite = []settings.PathEntry{{Path: ws}}
			hp, herr := policy.Compile(s, policy.Env{Cwd: ws, Home: home})
			vp, verr := policy.CompileView(policy.ViewRules{Binds: []policy.ViewBind{{Host: ws, Guest: "/work", Writable: true}},
				System: []string{"/usr"}, Home: home})
			if (herr == nil) != (verr == nil) {
				t.Fatalf("host view error %v, confined view error %v", herr, verr)
			}
			if herr != nil {
				return // both refuse
			}
			hostPlan, viewPlan := Build(hp, Options{}), Build(vp, Options{})
			guest := func(h string) string { return filepath.Join("/work", strings.TrimPrefix(h, ws)) }
			check := func(rel string, want mountState) {
				t.Helper()
				h := filepath.Join(ws, rel)
				hs, vs := simulate(hostPlan, h), simulate(viewPlan, guest(h))
				if hs != want || vs != want {
					t.Errorf("%s: host view %+v, confined view %+v, want %+v\nhost plan:\n%s\nconfined plan:\n%s", rel, hs, vs, want, dump(hostPlan), dump(viewPlan))
				}
			}
			for _, r := range c.ro {
				check(r, mountState{read: true})
			}
			for _, r := range c.rw {
				check(r, mountState{read: true, write: true})
			}
			// Every write-deny either view holds, in the same state in both,
			// and its parents are mount points in both (pinned: they cannot
			// be renamed away between runs).
			for _, d := range append(hp.DenyWrite, vp.DenyWrite...) {
				if !policy.Within(d.Resolved, ws) || d.Resolved == ws {
					continue
				}
				hs, vs := simulate(hostPlan, d.Resolved), simulate(viewPlan, guest(d.Resolved))
				if hs.write || vs.write || hs != vs {
					t.Errorf("%s (%s): host view %+v, confined view %+v", d.Resolved, d.Rule, hs, vs)
				}
				for a := filepath.Dir(d.Resolved); a != ws && d.Kind != policy.Missing; a = filepath.Dir(a) {
					if !hasDst(hostPlan, a) || !hasDst(viewPlan, guest(a)) {
						t.Errorf("parent %s of %s is not pinned in both views", a, d.Resolved)
					}
				}
			}
			// Every placeholder can be made: its directory exists as a
			// directory (a placeholder under a file would fail the launch).
			for _, ph := range append(hostPlan.Placeholders, viewPlan.Placeholders...) {
				if fi, err := os.Stat(filepath.Dir(ph.Path)); err != nil || !fi.IsDir() {
					t.Errorf("placeholder %s (%s) cannot be created: its directory is not one", ph.Path, ph.Rule)
				}
			}
			if len(hostPlan.Placeholders) != len(viewPlan.Placeholders) {
				t.Errorf("placeholders: host view %v, confined view %v", hostPlan.Placeholders, viewPlan.Placeholders)
			}
		})
	}
}

func hasDst(p Plan, dst string) bool {
	for _, o := range p.Ops {
		if o.Dst == dst {
			return true
		}
	}
	return false
}
