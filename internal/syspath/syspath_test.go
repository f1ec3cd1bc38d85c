//go:build unix

package syspath

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestLookPath plants a program of the same name in PATH directories a
// sandboxed run or another user could write, ahead of the system one.
func TestLookPath(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the trusted directory must be root-owned")
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(base, 0o755)
	mk := func(dir string, mode os.FileMode) string {
		d := filepath.Join(base, dir)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, mode)
		if err := os.WriteFile(filepath.Join(d, "helper"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	home := filepath.Join(base, "home")
	inHome := mk("home/.local/bin", 0o755)
	worldWritable := mk("shared", 0o777)
	other := mk("other", 0o755)
	if err := os.Chown(other, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	system := mk("sys", 0o755)
	t.Setenv("HOME", home)
	t.Setenv("PATH", inHome+":"+worldWritable+":"+other+":relative:"+system)
	got, err := LookPath("helper")
	if err != nil || got != filepath.Join(system, "helper") {
		t.Fatalf("LookPath = %q, %v; want the one in %s", got, err, system)
	}
	t.Setenv("PATH", inHome+":"+worldWritable+":"+other)
	if _, err := LookPath("helper"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("LookPath found a planted helper: %v", err)
	}
}
