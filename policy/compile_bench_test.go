package policy

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/srt-go/srt/settings"
)

// benchCompile times Compile of js in a git repository (git init's
// layout) with an empty home directory, as bench/startup.sh's settings
// run does:
//
//	go test ./policy -run x -bench Compile -benchtime 300x
func benchCompile(b *testing.B, js string) {
	root := b.TempDir()
	home, proj := filepath.Join(root, "home"), filepath.Join(root, "project")
	os.MkdirAll(home, 0o755)
	if out, err := exec.Command("git", "init", "-q", proj).CombinedOutput(); err != nil {
		b.Skipf("git init: %v %s", err, out)
	}
	s, err := settings.Parse([]byte(js), "bench.json")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Compile(s, Env{Cwd: proj, Home: home}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompileRepository(b *testing.B) {
	benchCompile(b, `{"filesystem":{"allowWrite":["."]}}`)
}

func BenchmarkCompileDefault(b *testing.B) { benchCompile(b, `{}`) }
