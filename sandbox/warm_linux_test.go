package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/srt-go/srt/policy"
)

// TestWarmMountsWherePlanned: a run left a symbolic link where a nested
// bind of the next session goes (ws/sub -> elsewhere). bubblewrap follows
// it when it makes the mount point, which would show the inner tree at
// another guest path, where the name rules judge it as the outer one's.
// PID 1 checks every mount of the confined view before anything runs, and
// the start fails; with a real directory there, the same view starts.
func TestWarmMountsWherePlanned(t *testing.T) {
	requireBwrap(t)
	base, _ := filepath.EvalSymlinks(t.TempDir())
	ws, inner := filepath.Join(base, "ws"), filepath.Join(base, "inner")
	for _, d := range []string{ws + "/elsewhere", inner} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("elsewhere", ws+"/sub"); err != nil {
		t.Fatal(err)
	}
	view := func() *policy.Policy {
		p, err := policy.CompileView(policy.ViewRules{Home: base, Binds: []policy.ViewBind{
			{Host: ws, Guest: "/w", Writable: true}, {Host: inner, Guest: "/w/sub", Writable: true}}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	w, err := StartWarm(context.Background(), view(), WarmOptions{Dir: "/w"})
	if err == nil {
		w.Kill()
		t.Fatal("a warm sandbox started with its nested bind mounted through a symbolic link")
	}
	if !strings.Contains(err.Error(), "mount /w/sub") {
		t.Errorf("error %v, want one naming the mount", err)
	}
	os.Remove(ws + "/sub")
	os.Mkdir(ws+"/sub", 0o755)
	w, err = StartWarm(context.Background(), view(), WarmOptions{Dir: "/w"})
	if err != nil {
		t.Fatalf("with a directory at the mount point: %v", err)
	}
	w.Kill()
}
