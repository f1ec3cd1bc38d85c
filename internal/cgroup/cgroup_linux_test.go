package cgroup

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMain lets this test binary be the v1 trampoline, as sandbox.Main
// does for srt and srtd.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == EnterArg {
		RunEnter(os.Args[2:])
	}
	os.Exit(m.Run())
}

// parent is Find's parent, or the test skips saying why there is none.
func parent(t *testing.T) *Parent {
	t.Helper()
	p, err := Find("")
	if err != nil {
		t.Skipf("no writable memory cgroup hierarchy here: %v", err)
	}
	return p
}

func TestFindProbesAndLeavesNothing(t *testing.T) {
	p := parent(t)
	t.Logf("parent: %s", p)
	if _, err := os.Stat(filepath.Join(p.Dir(), fmt.Sprintf("srtd-probe-%d", os.Getpid()))); !os.IsNotExist(err) {
		t.Errorf("the probe cgroup is still there: %v", err)
	}
	// The same parent given explicitly.
	q, err := Find(p.Dir())
	if err != nil || q.Dir() != p.Dir() || q.Version() != p.Version() {
		t.Errorf("Find(%s) = %v, %v", p.Dir(), q, err)
	}
}

func TestFindRefusesWhatIsNotACgroup(t *testing.T) {
	for _, dir := range []string{t.TempDir(), "relative/dir", "/nonexistent/cgroup"} {
		if p, err := Find(dir); err == nil {
			t.Errorf("Find(%q) = %s; want an error", dir, p)
		}
	}
}

// TestOOMKillCountedAndNoEscape: a process started through Prepare is in
// the cgroup, so are its children, and going over the limit gets it killed
// by the kernel and counted in OOMKills; Remove kills what is left.
func TestOOMKillCountedAndNoEscape(t *testing.T) {
	p := parent(t)
	g, err := p.New(fmt.Sprintf("srt-test-%d", os.Getpid()), 32<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer g.remove()
	if g.Limit() != 32<<20 {
		t.Errorf("Limit = %d", g.Limit())
	}
	before, err := g.OOMKills()
	if err != nil {
		t.Fatal(err)
	}
	// A child that forks a grandchild, which prints its pid and sleeps.
	cmd := exec.Command("/bin/sh", "-c", "sleep 30 & echo $!; wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	release, err := g.Prepare(cmd)
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.Start()
	release()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	grandchild, _ := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	procs, err := g.Procs()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(procs, cmd.Process.Pid) || !slices.Contains(procs, grandchild) {
		t.Errorf("cgroup.procs = %v; want the child %d and its child %d", procs, cmd.Process.Pid, grandchild)
	}
	// Remove with processes inside kills them first.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go cmd.Wait()
	if err := g.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(g.Dir()); !os.IsNotExist(err) {
		t.Errorf("%s still there: %v", g.Dir(), err)
	}

	g, err = p.New(fmt.Sprintf("srt-test-oom-%d", os.Getpid()), 32<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer g.remove()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 to allocate with")
	}
	hog := exec.Command("python3", "-c", "b = bytearray(256 << 20); print('survived')")
	release, err = g.Prepare(hog)
	if err != nil {
		t.Fatal(err)
	}
	o, err := hog.CombinedOutput()
	release()
	if err == nil || strings.Contains(string(o), "survived") {
		t.Fatalf("256 MiB under a 32 MiB limit: %v %s", err, o)
	}
	after, err := g.OOMKills()
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Errorf("oom_kill %d -> %d; want it to move (%v %s)", before, after, err, o)
	}
}

func TestNewRefusesBadNames(t *testing.T) {
	p := &Parent{version: V1, dir: t.TempDir()}
	for _, name := range []string{"", "a/b", "..", "."} {
		if _, err := p.New(name, 1<<20); err == nil {
			t.Errorf("New(%q) worked", name)
		}
	}
	if _, err := p.New("x", 0); err == nil {
		t.Error("New with limit 0 worked")
	}
}

// TestPrepareV2ClonesInto: the v2 path (clone3 CLONE_INTO_CGROUP) starts
// the process in the cgroup. It needs a writable v2 hierarchy, with or
// without the memory controller.
func TestPrepareV2ClonesInto(t *testing.T) {
	mount := ""
	for _, m := range []string{sysCgroup, hybridV2} {
		if isFS(m, 0x63677270) {
			mount = m
		}
	}
	rel, err := ownPath(func(c string) bool { return c == "" })
	if mount == "" || err != nil {
		t.Skipf("no cgroup2 mount (%v)", err)
	}
	dir := filepath.Join(mount, rel, fmt.Sprintf("srt-test-v2-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot create a v2 cgroup: %v", err)
	}
	g := &Group{version: V2, dir: dir, limit: 1}
	defer g.remove()
	cmd := exec.Command("cat", "/proc/self/cgroup")
	release, err := g.Prepare(cmd)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.Output()
	release()
	if err != nil {
		t.Fatal(err)
	}
	want := "0::" + filepath.Join(rel, filepath.Base(dir)) + "\n"
	if !strings.Contains(string(out), want) {
		t.Errorf("/proc/self/cgroup of the child:\n%s\nwant the line %q", out, want)
	}
}
