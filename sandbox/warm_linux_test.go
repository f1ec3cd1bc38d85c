package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/settings"
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

// TestMountsCheckedAfterSetup: another sandbox with the same write root
// swaps a directory for a link between srt's planning and bubblewrap's
// mounts (here a bwrap wrapper does it, deterministically): .git becomes a
// link to a decoy, so bubblewrap's read-only bind of .git/hooks lands on
// the decoy's hooks, while the real hooks, renamed away, stay writable
// for whoever renames them back. PID 1 checks every planned bind once
// bubblewrap is done and the run fails before the command starts.
func TestMountsCheckedAfterSetup(t *testing.T) {
	requireBwrap(t)
	real, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip(err)
	}
	base, _ := filepath.EvalSymlinks(t.TempDir())
	ws := filepath.Join(base, "ws")
	for _, d := range []string{ws + "/.git/hooks", ws + "/decoy/hooks"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(ws+"/.git/HEAD", []byte("ref: refs/heads/main\n"), 0o644)
	wrapper := filepath.Join(base, "bwrap")
	script := fmt.Sprintf("#!/bin/sh\nmv %[1]s/.git %[1]s/.git-real && ln -s decoy %[1]s/.git\nexec %[2]s \"$@\"\n", ws, real)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	s := settings.Default()
	s.BwrapPath = wrapper
	s.Filesystem.AllowWrite = []settings.PathEntry{{Path: ws}}
	m, err := NewManager(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd := m.Command(context.Background(), "sh", "-c", "echo ran")
	cmd.Dir, cmd.Stderr = ws, &stderr
	err = cmd.Run()
	var se *SetupError
	if !errors.As(err, &se) || !strings.Contains(stderr.String()+err.Error(), "mount "+ws+"/.git") {
		t.Fatalf("run = %v, stderr %q; want a set-up failure naming the .git mount", err, stderr.String())
	}
}
