package inside

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/srt-go/srt/internal/envlist"
	"github.com/srt-go/srt/sandbox/linux/wire"
)

// TestLookPathIn: the agent looks a command up in the request's PATH,
// relative to the request's directory, and fails with a shell's codes.
func TestLookPathIn(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "tool"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "data"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/nonexistent:" + bin}
	for _, tc := range []struct {
		argv0, dir, want string
		code             int
	}{
		{"tool", "", filepath.Join(bin, "tool"), 0},
		{"data", "", "", wire.ExitNotExec},
		{"missing", "", "", wire.ExitNotFound},
		{"bin/tool", dir, filepath.Join(dir, "bin/tool"), 0},
		{"./bin/data", dir, "", wire.ExitNotExec},
		{"bin", "", "", wire.ExitNotFound}, // a directory in PATH's dirs is not a command
	} {
		got, code, err := lookPathIn(tc.argv0, env, tc.dir)
		if got != tc.want || code != tc.code || (err != nil) != (tc.code != 0) {
			t.Errorf("lookPathIn(%q, %q) = %q, %d, %v; want %q, %d", tc.argv0, tc.dir, got, code, err, tc.want, tc.code)
		}
	}
}

// TestSetEnv: the request's variables replace PID 1's, once each.
func TestSetEnv(t *testing.T) {
	got := envlist.Set([]string{"A=1", "AB=2", "A=3"}, "A", "x")
	if len(got) != 2 || got[0] != "AB=2" || got[1] != "A=x" {
		t.Errorf("setEnv = %q", got)
	}
}
