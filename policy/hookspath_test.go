package policy

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestHooksPaths reads core.hooksPath from a config, its includes (an
// includeIf whatever its condition) and quoted values.
func TestHooksPaths(t *testing.T) {
	d := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(d, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("inc", "[core]\n  hooksPath = \"/abs/hooks\" ; comment\n")
	write("cond", "[Core]\nHooksPath=~/h2\n")
	cfg := write("config", "[core]\n\tbare = false\n[core] hooksPath = .hus\\\nky/_\n[include]\n\tpath = inc\n[includeIf \"gitdir:/nowhere/\"]\n\tpath = cond\n")
	got := hooksPaths("/home/u", cfg)
	want := []string{".husky/_", "/abs/hooks", "/home/u/h2"}
	if !slices.Equal(got, want) {
		t.Errorf("hooksPaths = %q, want %q", got, want)
	}
	dirs := hooksDirs(got, "/repo")
	if wantDirs := []string{"/repo/.husky/_", "/repo/.husky", "/abs/hooks", "/home/u/h2"}; !slices.Equal(dirs, wantDirs) {
		t.Errorf("hooksDirs = %q, want %q", dirs, wantDirs)
	}
}
