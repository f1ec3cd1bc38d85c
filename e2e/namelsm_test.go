package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
)

// The in-kernel path of the creation-time name rules
// (sandbox/linux/namelsm): as root, where the kernel loads and attaches
// the BPF LSM program. Elsewhere these tests skip, saying why, unless
// SRT_TEST_REQUIRE_BPFLSM is set (a host known to run it), where they
// fail. The attack tables (creation_test.go, mandatory_test.go) run on
// the supervisor's path, the default; SRT_NAME_RULES=kernel opts a run
// into the kernel's.

const kernelPathLine = "creation-time rules path"

// kernelEnv opts a run into the in-kernel path (experimental, off by
// default: linux.NameRulesEnv).
var kernelEnv = []string{"SRT_NAME_RULES=kernel"}

// needKernelPath skips unless `srt --check` run as root says the
// in-kernel path is in use here.
func needKernelPath(t *testing.T) {
	t.Helper()
	requireSandbox(t)
	if os.Geteuid() != 0 {
		t.Skip("the in-kernel path needs root")
	}
	check := exec.Command(srtBin, "--check")
	check.Env = append(os.Environ(), kernelEnv...)
	out, _ := check.CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, kernelPathLine) {
			if strings.Contains(l, "kernel (BPF LSM)") && !strings.Contains(l, "not available") {
				return
			}
			if os.Getenv("SRT_TEST_REQUIRE_BPFLSM") != "" {
				t.Fatalf("the in-kernel path is required here: %s", l)
			}
			t.Skipf("no in-kernel path here: %s", strings.TrimSpace(l))
		}
	}
	t.Fatalf("srt --check has no %q line:\n%s", kernelPathLine, out)
}

// namelsmPrograms counts the BPF programs of namelsm loaded now.
func namelsmPrograms(t *testing.T) int {
	t.Helper()
	n := 0
	var id ebpf.ProgramID
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if errors.Is(err, os.ErrNotExist) {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		id = next
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue // gone meanwhile
		}
		if info, err := p.Info(); err == nil && info.Type == ebpf.LSM && strings.HasPrefix(info.Name, "inode_create") {
			n++
		}
		p.Close()
	}
}

// TestKernelNamesUsed: with the program loaded, srt -d says the kernel
// path runs, a refused name gets EACCES with the supervisor's record,
// the git exceptions hold, and srt unloads the program when it exits.
func TestKernelNamesUsed(t *testing.T) {
	needKernelPath(t)
	u := &account{name: "root", home: os.Getenv("HOME"), direct: true}
	dir := u.workDir(t)
	out, errOut, code := srtRun{u: u, dir: dir, settings: creationSettings, pre: []string{"-d"}, env: kernelEnv,
		args: []string{"sh", "-c", `for i in $(seq 1000); do : > f$i; done; touch .env; echo rc=$?; mkdir -p r/.git/hooks && : > r/.git/hooks/x.sample && echo sample-ok; touch r/.git/hooks/post-checkout; echo hook=$?`}}.run(t)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, `path="kernel (BPF LSM)"`) {
		t.Errorf("srt -d does not say the kernel path runs:\n%s", errOut)
	}
	for _, want := range []string{"rc=1", "sample-ok", "hook=1"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "file-write-create "+filepath.Join(dir, ".env")+" (filesystem.denyWrite[0])") {
		t.Errorf("no record of the refused .env with its rule:\n%s", errOut)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".env")); err == nil {
		t.Error(".env exists on the host")
	}
	if n := namelsmPrograms(t); n != 0 {
		t.Errorf("%d namelsm programs still loaded after srt exited", n)
	}
}

// TestKernelNamesIsolation: two sandboxes at once, each with its own
// rule, and a host process: each sandbox refuses only its own rule's
// names, the host process makes any name, and nothing stays loaded.
func TestKernelNamesIsolation(t *testing.T) {
	needKernelPath(t)
	u := &account{name: "root", home: os.Getenv("HOME"), direct: true}
	before := namelsmPrograms(t)
	dirA, dirB := u.workDir(t), u.workDir(t)
	setA := `{"filesystem": {"allowWrite": ["."], "denyWrite": ["**/*.alpha"]}}`
	setB := `{"filesystem": {"allowWrite": ["."], "denyWrite": ["**/*.beta"]}}`
	// Each sandbox waits for the other to be up, then tries both names;
	// meanwhile the host makes both names in both directories.
	script := `while [ ! -e go ]; do sleep 0.05; done; touch x.alpha; echo alpha=$?; touch x.beta; echo beta=$?`
	var wg sync.WaitGroup
	res := make([]string, 2)
	for i, r := range []srtRun{{u: u, dir: dirA, settings: setA, env: kernelEnv, args: []string{"sh", "-c", script}},
		{u: u, dir: dirB, settings: setB, env: kernelEnv, args: []string{"sh", "-c", script}}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, errOut, _ := r.run(t)
			res[i] = out + errOut
		}()
	}
	time.Sleep(500 * time.Millisecond)
	for _, d := range []string{dirA, dirB} {
		for _, n := range []string{"host.alpha", "host.beta"} {
			if err := os.WriteFile(filepath.Join(d, n), nil, 0o644); err != nil {
				t.Errorf("the host cannot make %s in %s while sandboxes run: %v", n, d, err)
			}
		}
	}
	if n := namelsmPrograms(t); n < before+2 {
		t.Errorf("%d namelsm programs while two sandboxes run, want %d", n, before+2)
	}
	for _, d := range []string{dirA, dirB} {
		os.WriteFile(filepath.Join(d, "go"), nil, 0o644)
	}
	wg.Wait()
	if !strings.Contains(res[0], "alpha=1") || !strings.Contains(res[0], "beta=0") {
		t.Errorf("sandbox A (denies *.alpha):\n%s", res[0])
	}
	if !strings.Contains(res[1], "alpha=0") || !strings.Contains(res[1], "beta=1") {
		t.Errorf("sandbox B (denies *.beta):\n%s", res[1])
	}
	if n := namelsmPrograms(t); n != before {
		t.Errorf("%d namelsm programs after both runs, %d before", n, before)
	}
}

// TestCreationRulesSupervisorForced: without SRT_NAME_RULES=kernel a run
// uses the supervisor, which srt -d says, with the same refusal.
func TestCreationRulesSupervisorForced(t *testing.T) {
	requireSandbox(t)
	u := &account{name: "root", home: os.Getenv("HOME"), direct: true}
	if os.Geteuid() != 0 {
		t.Skip("as root")
	}
	dir := u.workDir(t)
	out, errOut, code := srtRun{u: u, dir: dir, settings: creationSettings, pre: []string{"-d"},
		args: []string{"sh", "-c", `touch .env; echo rc=$?`}}.run(t)
	if code != 0 {
		t.Errorf("exit %d", code)
	}
	if !strings.Contains(errOut, `path="supervisor (seccomp user notification)" why="the in-kernel path is experimental: SRT_NAME_RULES=kernel tries it"`) {
		t.Errorf("srt -d does not say the supervisor runs by default:\n%s", errOut)
	}
	if !strings.Contains(out, "rc=1") {
		t.Errorf(".env not refused:\n%s", out)
	}
}
