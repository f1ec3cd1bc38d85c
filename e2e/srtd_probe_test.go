package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/srt-go/srt/port"
)

// The microvm probe in the background (issue 16): srtd serves before the
// test boot ends, says "probing" meanwhile, and a microvm launch that
// comes first waits for the verdict.

// awaitMicroVMProbe polls GET /v1/probe until the microvm verdict is
// known, and then until srtd's log has the line that gives it.
func awaitMicroVMProbe(t *testing.T, d *srtd) port.Probe {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		p, err := d.c.Probe(ctx)
		if err != nil {
			t.Fatalf("probe: %v", err)
		}
		if p.MicroVMState != port.MicroVMProbing {
			waitLog(t, d, `microvm="`+string(p.MicroVMState)+`: `)
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("the microvm probe is still running after 3 min:\n%s", d.stderr())
		}
	}
}

// waitLog waits up to 10 s for s in srtd's log (a line srtd writes after
// the state it reports changed).
func waitLog(t *testing.T, d *srtd, s string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(d.stderr(), s); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in srtd's log:\n%s", s, d.stderr())
		}
	}
}

// firstHealthz polls /healthz until its first 200.
func firstHealthz(t *testing.T, d *srtd) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		resp, err := http.Get(d.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no 200 on /healthz: %v\n%s", err, d.stderr())
		}
	}
}

// requireProbing fails unless /v1/probe says the microvm probe is still
// running (it takes seconds under TCG: a verdict already known means
// srtd waited for it).
func requireProbing(t *testing.T, d *srtd) {
	t.Helper()
	p, err := d.c.Probe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if p.MicroVMState != port.MicroVMProbing || p.MicroVMAvailable || p.MicroVMNote != "probing" {
		t.Fatalf("right after the first /healthz, /v1/probe = %+v; want microvmState probing (did srtd wait for the test boot?)", p)
	}
	if !p.Available || p.Note == "" {
		t.Errorf("while probing, the native part is missing: %+v", p)
	}
}

// TestSrtdMicroVMProbeInBackground: srtd serves while its microvm test
// boot runs: the start-up line says microvm=probing, /v1/probe says
// probing, a microvm launch sent meanwhile waits and starts once the
// probe is done; then /v1/probe says available and a second line says
// so.
func TestSrtdMicroVMProbeInBackground(t *testing.T) {
	requireSandbox(t)
	requireQEMU(t)
	ctx := context.Background()
	d := startSrtdVM(t, nil, "--name-glob-write-denies", "none")
	firstHealthz(t, d)
	requireProbing(t, d)
	if !strings.Contains(d.stderr(), "agent sandbox ON bubblewrap") || !strings.Contains(d.stderr(), "microvm=probing") {
		t.Errorf("start-up line does not say agent sandbox ON ... microvm=probing:\n%s", d.stderr())
	}
	type result struct {
		h   port.Handle
		err error
	}
	launched := make(chan result, 1)
	go func() {
		h, err := d.c.Launch(ctx, port.Spec{SessionID: "early", WorkspaceID: "w", Mode: port.ModeChat,
			BindMounts: []port.BindMount{{HostPath: t.TempDir(), GuestPath: "/ws"}}, GuestWorkdir: "/ws"}, port.BackendMicroVM)
		launched <- result{h, err}
	}()
	p := awaitMicroVMProbe(t, d)
	if p.MicroVMState != port.MicroVMAvailable || !p.MicroVMAvailable || !strings.Contains(p.MicroVMNote, "QEMU microVM") {
		t.Fatalf("probe after the test boot: %+v; want available", p)
	}
	if !strings.Contains(d.stderr(), `msg="microvm probe" microvm="available: QEMU microVM`) {
		t.Errorf("no microvm probe line:\n%s", d.stderr())
	}
	var r result
	select {
	case r = <-launched:
	case <-time.After(3 * time.Minute):
		t.Fatalf("the microvm launch sent while probing has not returned:\n%s", d.stderr())
	}
	if r.err != nil || r.h.Backend != port.BackendMicroVM || r.h.State != port.StateWarm {
		t.Fatalf("microvm launch sent while probing: %+v %v; want microvm, warm\n%s", r.h, r.err, d.stderr())
	}
	out, code := d.sh(t, "early", "echo in-vm; uname -n")
	if code != 0 || !strings.Contains(out, "in-vm") || !strings.Contains(out, "srt-early") {
		t.Errorf("exec in the early VM: %d %q", code, out)
	}
	if _, err := d.c.Destroy(ctx, "early"); err != nil {
		t.Error(err)
	}
}

// TestSrtdMicroVMProbeCancelled: srtd stopped while its test boot runs
// leaves no QEMU behind.
func TestSrtdMicroVMProbeCancelled(t *testing.T) {
	requireSandbox(t)
	requireQEMU(t)
	d := startSrtdVM(t, nil)
	firstHealthz(t, d)
	requireProbing(t, d)
	var qemu []int
	for deadline := time.Now().Add(2 * time.Minute); len(qemu) == 0; time.Sleep(20 * time.Millisecond) {
		qemu = descendantsNamed(d.cmd.Process.Pid, "qemu-system")
		if len(qemu) == 0 && time.Now().After(deadline) {
			t.Fatalf("no QEMU under srtd after 2 min:\n%s", d.stderr())
		}
	}
	if p, _ := d.c.Probe(context.Background()); p.MicroVMState != port.MicroVMProbing {
		t.Fatalf("the probe ended (%+v) before srtd could be stopped during it", p)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("srtd did not exit within 30 s of SIGTERM during the probe:\n%s", d.stderr())
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var left []int
		for _, pid := range qemu {
			if procRunning(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("QEMU %v still running after srtd exited:\n%s", left, d.stderr())
		}
	}
	// Close cancelled the test boot rather than waiting out its own
	// timeout (a QEMU dying with srtd would not show that).
	if !strings.Contains(d.stderr(), "shutting down") || strings.Contains(d.stderr(), "microvm probe still running") {
		t.Errorf("srtd did not cancel its probe on shutdown:\n%s", d.stderr())
	}
}

// descendantsNamed lists the processes under pid whose command name
// starts with prefix.
func descendantsNamed(pid int, prefix string) []int {
	parent := map[int]int{}
	name := map[int]string{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i, j := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if i < 0 || j < i {
			continue
		}
		f := strings.Fields(s[j+1:])
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		parent[p], name[p] = pp, s[i+1:j]
	}
	var out []int
	for p, n := range name {
		if !strings.HasPrefix(n, prefix) {
			continue
		}
		for a := parent[p]; a > 1; a = parent[a] {
			if a == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// procRunning: pid exists and is not a zombie.
func procRunning(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}
