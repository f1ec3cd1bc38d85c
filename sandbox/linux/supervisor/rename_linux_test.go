package supervisor

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/srt-go/srt/policy"
)

// TestTreeDenied: renaming a directory is refused when a name below it
// is protected at one end and not at the other: a protected file must
// not leave its protected place by a rename of a parent (which the
// mounts pin, but a mount may not be there), nor a protected name come
// into being; a repository moved whole keeps its hooks protected at both
// ends and moves.
func TestTreeDenied(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	for _, f := range []string{"a/d/secret.txt", "repo/.git/hooks/x", "plain/hooks/x"} {
		os.MkdirAll(filepath.Dir(filepath.Join(base, f)), 0o755)
		os.WriteFile(filepath.Join(base, f), nil, 0o644)
	}
	c := &nameRules{tmpdir: "/nonexistent"}
	c.add(policy.EscapeGlob(base+"/a/d/secret.txt"), "protectedPaths[0]")
	c.add("**/.git/hooks/**", "mandatory write-deny **/.git/hooks/**")
	dir, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dir)
	for _, tc := range []struct {
		name, to string
		deny     bool
	}{
		{"a", "x", true},          // secret.txt would leave its protected place
		{"repo", "moved", false},  // hooks protected at both ends
		{"plain", "w/.git", true}, // .git/hooks/x would come into being
		{"plain", "other", false}, // nothing protected either way
	} {
		rule, _ := treeDenied(c, dir, tc.name, base+"/"+tc.name, base+"/"+tc.to)
		if (rule != "") != tc.deny {
			t.Errorf("rename %s -> %s: rule %q, want denied %v", tc.name, tc.to, rule, tc.deny)
		}
	}
}
