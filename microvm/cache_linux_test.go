package microvm

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestCheckCacheDir: a cache another user could change is refused, in
// itself or on its way (not through a sticky /tmp), as given or as a link.
func TestCheckCacheDir(t *testing.T) {
	base := t.TempDir()
	mk := func(p string, mode os.FileMode) string {
		t.Helper()
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	own := mk(filepath.Join(base, "own"), 0o755)
	sticky := mk(filepath.Join(base, "sticky"), os.ModeSticky|0o777)
	inSticky := mk(filepath.Join(sticky, "srt-microvm"), 0o700)
	open := mk(filepath.Join(base, "open"), 0o777)
	openParent := mk(filepath.Join(base, "openparent"), 0o777)
	underOpen := mk(filepath.Join(openParent, "srt-microvm"), 0o755)
	link := filepath.Join(base, "link")
	if err := os.Symlink(own, link); err != nil {
		t.Fatal(err)
	}
	// A link on the way to a group- or world-writable parent.
	lp := filepath.Join(own, "lp")
	if err := os.Symlink(openParent, lp); err != nil {
		t.Fatal(err)
	}
	linkToOpen := filepath.Join(lp, "srt-microvm")
	for _, ok := range []string{own, inSticky} {
		if err := checkCacheDir(ok); err != nil {
			t.Errorf("%s: %v, want accepted", ok, err)
		}
	}
	bad := []string{open, underOpen, link, linkToOpen}
	if os.Geteuid() == 0 {
		other := mk(filepath.Join(sticky, "theirs"), 0o755)
		if err := os.Chown(other, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		bad = append(bad, other)
	}
	for _, b := range bad {
		if err := checkCacheDir(b); !errors.Is(err, ErrUntrustedCache) {
			t.Errorf("%s: %v, want ErrUntrustedCache", b, err)
		}
	}
}
