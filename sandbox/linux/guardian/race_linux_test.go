package guardian

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/srt-go/srt/sandbox/linux/wire"
)

// swapLayout is a host file of the user's (root/.bash_logout, 220
// bytes), a write root (root/proj) where a placeholder goes, and a link
// root/lnk -> "." that the sandbox swaps with proj (RENAME_EXCHANGE), so
// that root/proj/.bash_logout names the user's file while it is swapped.
func swapLayout(t *testing.T) (root, victim, ph string) {
	root = t.TempDir()
	victim = filepath.Join(root, ".bash_logout")
	if err := os.WriteFile(victim, []byte(strings.Repeat("#", 220)), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(root, "proj"), 0o755)
	os.Symlink(".", filepath.Join(root, "lnk"))
	return root, victim, filepath.Join(root, "proj", ".bash_logout")
}

// swapping flips root/proj and root/lnk until the returned stop is called.
func swapping(root string) (stop func()) {
	var done atomic.Bool
	ended := make(chan struct{})
	go func() {
		for !done.Load() {
			unix.Renameat2(unix.AT_FDCWD, filepath.Join(root, "proj"), unix.AT_FDCWD, filepath.Join(root, "lnk"), unix.RENAME_EXCHANGE)
		}
		close(ended)
	}()
	return func() { done.Store(true); <-ended }
}

// TestSwappedParentAtCreate: while the guardian makes a placeholder, the
// sandbox swaps a directory on the way for a link. The guardian took the
// placeholder's identity by name, and then removed the user's file that
// the name reached at cleanup. Now it works through the directory it
// opened without following links, and records what it created.
func TestSwappedParentAtCreate(t *testing.T) {
	for i := range 300 {
		root, victim, ph := swapLayout(t)
		g := newState(t, t.TempDir())
		stop := swapping(root)
		g.handle(wire.GuardianRequest{Op: wire.GuardianCreate, Path: ph})
		stop()
		if fi, err := os.Lstat(filepath.Join(root, "proj")); err == nil && fi.Mode()&os.ModeSymlink == 0 {
			unix.Renameat2(unix.AT_FDCWD, filepath.Join(root, "proj"), unix.AT_FDCWD, filepath.Join(root, "lnk"), unix.RENAME_EXCHANGE)
		}
		g.cleanup()
		if _, err := os.Lstat(victim); err != nil {
			t.Fatalf("iteration %d: the user's file was removed: %v", i, err)
		}
	}
}

// TestSwappedParentAtCleanup: the same swap while the guardian removes
// its placeholders: a check and a removal by name were two walks of the
// path, and the second could reach the user's file.
func TestSwappedParentAtCleanup(t *testing.T) {
	for i := range 300 {
		root, victim, ph := swapLayout(t)
		g := newState(t, t.TempDir())
		g.handle(wire.GuardianRequest{Op: wire.GuardianCreate, Path: ph})
		stop := swapping(root)
		g.cleanup()
		stop()
		if _, err := os.Lstat(victim); err != nil {
			t.Fatalf("iteration %d: the user's file was removed: %v", i, err)
		}
	}
}
