package fsplan

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/settings"
)

// TestPlanMountsOrder checks the security-relevant order of the plan on a
// real directory tree: parents before children, denies after the write
// root they are in, parents of protected paths pinned, tmpfs remounted
// read-only last.
func TestPlanMountsOrder(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	for _, d := range []string{"proj/.git/hooks", "proj/sub/deeper", "proj/secret/public", "proj/a/b"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"proj/.git/HEAD", "proj/.git/config", "proj/a/b/.bashrc", "proj/secret/key"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	proj := filepath.Join(root, "proj")
	s := settings.Default()
	s.Filesystem.AllowWrite = []settings.PathEntry{{Path: "."}}
	s.Filesystem.DenyWrite = []settings.PathEntry{{Path: "sub/deeper"}}
	s.Filesystem.DenyRead = []settings.PathEntry{{Path: "secret"}}
	s.Filesystem.AllowRead = []settings.PathEntry{{Path: "secret/public"}}
	p, err := policy.Compile(s, policy.Env{Cwd: proj, Home: root})
	if err != nil {
		t.Fatal(err)
	}
	plan := Build(p, Options{})
	index := func(kind OpKind, dst string) int {
		return slices.IndexFunc(plan.Ops, func(o Op) bool { return o.Kind == kind && o.Dst == dst })
	}
	must := func(kind OpKind, dst string) int {
		t.Helper()
		i := index(kind, dst)
		if i < 0 {
			t.Fatalf("no %v op for %s in plan:\n%s", kind, dst, dump(plan))
		}
		return i
	}
	write := must(OpBind, proj)
	for _, c := range []struct {
		kind OpKind
		dst  string
	}{
		{OpROBind, filepath.Join(proj, "sub/deeper")},
		{OpROBind, filepath.Join(proj, ".git/hooks")},
		{OpROBind, filepath.Join(proj, ".git/config")},
		{OpROBind, filepath.Join(proj, "a/b/.bashrc")},
		{OpBind, filepath.Join(proj, ".git")}, // pin
		{OpBind, filepath.Join(proj, "a")},    // pin
		{OpBind, filepath.Join(proj, "a/b")},  // pin
		{OpTmpfs, filepath.Join(proj, "secret")},
	} {
		if i := must(c.kind, c.dst); i < write {
			t.Errorf("%s mounted before its write root", c.dst)
		}
	}
	if must(OpROBind, filepath.Join(proj, "a/b/.bashrc")) < must(OpBind, filepath.Join(proj, "a/b")) {
		t.Errorf("protected file mounted before its pinned parent")
	}
	if must(OpBind, filepath.Join(proj, "secret/public")) < must(OpTmpfs, filepath.Join(proj, "secret")) {
		t.Errorf("allowRead carve-out mounted before the deny that hides it")
	}
	if must(OpRemountRO, filepath.Join(proj, "secret")) != len(plan.Ops)-1 {
		t.Errorf("remount-ro is not last")
	}
	var names []string
	for _, ph := range plan.Placeholders {
		names = append(names, strings.TrimPrefix(ph.Path, proj+"/"))
	}
	slices.Sort(names)
	want := []string{".bash_login", ".bash_logout", ".bash_profile", ".bashrc", ".claude", ".config", ".git/commondir", ".git/config.worktree", ".git/modules", ".git/worktrees", ".gitconfig", ".gitmodules", ".hg", ".idea", ".inputrc", ".mcp.json", ".profile", ".ripgreprc", ".ssh", ".vscode", ".zlogin", ".zlogout", ".zprofile", ".zshenv", ".zshrc"}
	if !slices.Equal(names, want) {
		t.Errorf("placeholders = %v, want %v", names, want)
	}
	// With the creation-time rules, a missing protected name is refused
	// when it is made: no placeholder, no mount for it; what exists keeps
	// its mounts.
	withRules := Build(p, Options{CreationRules: true})
	if len(withRules.Placeholders) != 0 {
		t.Errorf("placeholders with creation-time rules: %v", withRules.Placeholders)
	}
	for _, o := range plan.Ops {
		if _, missing := slices.BinarySearch(want, strings.TrimPrefix(o.Dst, proj+"/")); missing {
			continue
		}
		if !slices.ContainsFunc(withRules.Ops, func(w Op) bool { return w == o }) {
			t.Errorf("with creation-time rules, %v %s is gone", o.Kind, o.Dst)
		}
	}
}

func dump(p Plan) string {
	var b strings.Builder
	for _, o := range p.Ops {
		b.WriteString(strings.Join(o.Args(), " ") + "\n")
	}
	return b.String()
}
