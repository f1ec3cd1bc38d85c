package dirindex

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestSaveByDescriptor checks that Save makes a missing directory chain
// (0700) and never follows a symbolic link on the way to the index
// file's directory, nor writes into a directory that is not private:
// a root srt whose $HOME lies in a user's tree must not be led to write
// elsewhere.
func TestSaveByDescriptor(t *testing.T) {
	if !Cacheable(stat1) {
		t.Skip("no index on this system")
	}
	T := t.TempDir()
	save := func(path string) error {
		ix := OpenWithClock(path, clock(now))
		ix.Walk("k").Store("/d", stat1, result)
		return ix.Save()
	}
	fresh := filepath.Join(T, "home/.cache/srt-go/dirindex")
	if err := save(fresh); err != nil {
		t.Fatalf("a missing chain: %v", err)
	}
	if fi, err := os.Stat(filepath.Dir(fresh)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("made directory: %v %v", fi, err)
	}
	if r, _ := Open(fresh).Walk("k").Lookup("/d", stat1); len(r.Entries) != 2 {
		t.Errorf("saved index not read back: %v", r)
	}
	victim := filepath.Join(T, "victim")
	if err := os.Mkdir(victim, 0o700); err != nil {
		t.Fatal(err)
	}
	// A link as the last component, and as a parent.
	if err := os.Symlink(victim, filepath.Join(T, "lastlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(T, filepath.Join(T, "parentlink")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(T, "lastlink/dirindex"), filepath.Join(T, "parentlink/victim/dirindex")} {
		if err := save(p); err == nil {
			t.Errorf("%s: saved through a link", p)
		}
	}
	// Not private.
	open := filepath.Join(T, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o755)
	if err := save(filepath.Join(open, "dirindex")); !errors.Is(err, errNotPrivate) {
		t.Errorf("a 0755 directory: %v", err)
	}
	for _, d := range []string{victim, open} {
		if ents, _ := os.ReadDir(d); len(ents) != 0 {
			t.Errorf("%s holds %v", d, ents)
		}
	}
}
