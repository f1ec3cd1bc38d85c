package guardian

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/srt-go/srt/sandbox/linux/wire"
)

func newState(t *testing.T, locks string) *state {
	t.Helper()
	return &state{locks: locks}
}

func create(t *testing.T, g *state, path string, dir bool) bool {
	t.Helper()
	rep, err := g.handle(wire.GuardianRequest{Op: wire.GuardianCreate, Path: path, Dir: dir, Content: "x"})
	if err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
	return rep.Created
}

// TestSharedPlaceholder: two sandboxes share a placeholder; only the
// last to clean up removes it, so the other's mount is never detached
// under it.
func TestSharedPlaceholder(t *testing.T) {
	locks, root := t.TempDir(), t.TempDir()
	path := filepath.Join(root, ".git")
	a, b := newState(t, locks), newState(t, locks)
	if !create(t, a, path, true) {
		t.Fatal("first sandbox did not create the placeholder")
	}
	if create(t, b, path, true) {
		t.Fatal("second sandbox created it again")
	}
	a.cleanup()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("removed while another sandbox holds it: %v", err)
	}
	b.cleanup()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("left behind by the last sandbox: %v", err)
	}
}

// TestPlaceholderReplaced: a file someone put in the placeholder's place
// (another inode), or wrote into it, is not removed.
func TestPlaceholderReplaced(t *testing.T) {
	locks, root := t.TempDir(), t.TempDir()
	replaced, written := filepath.Join(root, "replaced"), filepath.Join(root, "written")
	g := newState(t, locks)
	create(t, g, replaced, false)
	create(t, g, written, false)
	// Renamed away rather than removed, so that its inode stays in use.
	if err := os.Rename(replaced, filepath.Join(root, "kept")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(replaced, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(written, []byte("someone's work"), 0o644); err != nil {
		t.Fatal(err)
	}
	g.cleanup()
	for _, p := range []string{replaced, written} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
}

// TestPlaceholderNoSymlinks: a placeholder is never created through a
// symbolic link on its path.
func TestPlaceholderNoSymlinks(t *testing.T) {
	locks, root, elsewhere := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	g := newState(t, locks)
	if _, err := g.handle(wire.GuardianRequest{Op: wire.GuardianCreate, Path: filepath.Join(root, "link", "hooks"), Dir: true}); err == nil {
		t.Fatal("created through a symlink")
	}
	if _, err := os.Lstat(filepath.Join(elsewhere, "hooks")); !os.IsNotExist(err) {
		t.Fatalf("placeholder appeared behind the link: %v", err)
	}
}

// TestWaitDeadEveryWatched: cleanup waits for every process srt named,
// not only the first (bubblewrap, which a kill ends before the sandbox's
// PID 1 and the rest of its PID namespace); bubblewrap's process group
// is the first pid's. A process gone before cleanup, even reaped and its
// pid free for reuse, does not hold cleanup up.
func TestWaitDeadEveryWatched(t *testing.T) {
	bwrap, pid1 := exec.Command("sleep", "60"), exec.Command("sleep", "60")
	for _, c := range []*exec.Cmd{bwrap, pid1} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer c.Process.Kill()
	}
	g := newState(t, t.TempDir())
	for _, c := range []*exec.Cmd{bwrap, pid1} {
		if _, err := g.handle(wire.GuardianRequest{Op: wire.GuardianWatch, PIDs: []int{c.Process.Pid}}); err != nil {
			t.Fatal(err)
		}
	}
	if g.pgid != bwrap.Process.Pid {
		t.Fatalf("pgid %d, want bubblewrap's %d", g.pgid, bwrap.Process.Pid)
	}
	bwrap.Process.Kill()
	bwrap.Wait()
	done := make(chan struct{})
	go func() { g.waitDead(); close(done) }()
	select {
	case <-done:
		t.Fatal("cleanup went ahead while the sandbox's PID 1 still ran")
	case <-time.After(200 * time.Millisecond):
	}
	pid1.Process.Kill()
	pid1.Wait()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("cleanup still waits once every watched process is gone")
	}
}
