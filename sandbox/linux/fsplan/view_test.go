package fsplan

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/srt-go/srt/policy"
)

// TestPlanView checks a confined plan: no "/" bind, system directories
// read-only, each bind at its guest path, a protected path read-only at
// its guest spelling, a runner state dir writable inside a read-only bind,
// a deeper guest mount not overwritten by the shallower one's rules, and
// the root remounted read-only last.
func TestPlanView(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	for _, d := range []string{"ws/.git/hooks", "ws/protected", "ro/state", "ro/sub", "other"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ws, ro, other := filepath.Join(root, "ws"), filepath.Join(root, "ro"), filepath.Join(root, "other")
	link := filepath.Join(root, "link-to-protected")
	os.Symlink(filepath.Join(ws, "protected"), link)
	p, err := policy.CompileView(policy.ViewRules{
		Binds: []policy.ViewBind{
			{Host: ws, Guest: "/workspace", Writable: true},
			{Host: ro, Guest: "/ro"},
			{Host: other, Guest: "/workspace/protected/deeper"},
		},
		Protected: []string{link},
		Writable:  []string{filepath.Join(ro, "state")},
		System:    []string{"/usr", "/bin", "/etc"},
		Home:      root,
	})
	if err != nil {
		t.Fatal(err)
	}
	plan := Build(p, Options{})
	idx := func(kind OpKind, src, dst string) int {
		return slices.IndexFunc(plan.Ops, func(o Op) bool { return o.Kind == kind && o.Dst == dst && (src == "" || o.Src == src) })
	}
	must := func(kind OpKind, src, dst string) int {
		t.Helper()
		i := idx(kind, src, dst)
		if i < 0 {
			t.Fatalf("no %v %s -> %s in plan:\n%s", kind, src, dst, dump(plan))
		}
		return i
	}
	if idx(OpROBind, "/", "/") >= 0 || idx(OpBind, "/", "/") >= 0 {
		t.Fatalf("confined plan binds the host root:\n%s", dump(plan))
	}
	must(OpROBind, "/usr", "/usr")
	if fi, err := os.Lstat("/bin"); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		must(OpSymlink, "", "/bin")
	}
	wsOp := must(OpBind, ws, "/workspace")
	prot := must(OpROBind, filepath.Join(ws, "protected"), "/workspace/protected")
	hooks := must(OpROBind, filepath.Join(ws, ".git/hooks"), "/workspace/.git/hooks")
	roOp := must(OpROBind, ro, "/ro")
	state := must(OpBind, filepath.Join(ro, "state"), "/ro/state")
	deeper := must(OpROBind, other, "/workspace/protected/deeper")
	if prot < wsOp || hooks < wsOp || state < roOp || deeper < prot {
		t.Errorf("order wrong:\n%s", dump(plan))
	}
	if last := plan.Ops[len(plan.Ops)-1]; last.Kind != OpRemountRO || last.Dst != "/" {
		t.Errorf("last op %v, want --remount-ro /", last.Args())
	}
	for _, ph := range plan.Placeholders {
		if !policy.Within(ph.Path, ws) && !policy.Within(ph.Path, filepath.Join(ro, "state")) {
			t.Errorf("placeholder %s outside the writable trees", ph.Path)
		}
	}
	if p.Readable(filepath.Join(root, "elsewhere")) || !p.Readable(filepath.Join(ws, "x")) {
		t.Errorf("Readable does not follow the view")
	}
}

// TestViewStateDir: a confined view whose writable bind holds srt's state
// directory (host /tmp bound elsewhere) shows it read-only and as a
// mount point there, as the host view does, so that a session cannot
// rename it away and leave one of its own making.
func TestViewStateDir(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	state := filepath.Join(root, "srt-test")
	if err := os.MkdirAll(filepath.Join(state, "tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	p, err := policy.CompileView(policy.ViewRules{Binds: []policy.ViewBind{{Host: root, Guest: "/hosttmp", Writable: true}}, System: []string{"/usr"}, Home: root})
	if err != nil {
		t.Fatal(err)
	}
	plan := Build(p, Options{TmpDir: filepath.Join(state, "tmp")})
	if !slices.ContainsFunc(plan.Ops, func(o Op) bool { return o.Kind == OpROBind && o.Src == state && o.Dst == "/hosttmp/srt-test" }) {
		t.Errorf("no read-only bind of the state directory at its guest path:\n%s", dump(plan))
	}
}
