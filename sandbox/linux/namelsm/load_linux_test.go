package namelsm

import (
	"os"
	"testing"
)

// needLoad skips where the program cannot load (not root, no BPF LSM).
func needLoad(t *testing.T, rules []Rule) (*Program, []Mount) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("loading a BPF LSM program needs root")
	}
	mounts, err := ReadMounts()
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(rules, mounts, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Load(c, mounts)
	if err != nil {
		if os.Getenv("SRT_TEST_REQUIRE_BPFLSM") != "" {
			t.Fatal(err)
		}
		t.Skipf("the BPF LSM program does not load here: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p, mounts
}

func TestLoad(t *testing.T) {
	needLoad(t, []Rule{{"**/.bashrc", "r1"}, {"**/.vscode/**", "r2"}, {"**/*.key", "r3"}, {"/etc/x/**", "r4"}, {hooksPattern, "hooks"}})
}
