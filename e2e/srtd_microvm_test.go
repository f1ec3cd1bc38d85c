package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/srt-go/srt/client"
	"github.com/srt-go/srt/port"
)

// The microvm backend behind srtd (issues 6 and 7): real VMs (QEMU, TCG
// on these machines), at most two at once.

var (
	srtdStaticOnce sync.Once
	srtdStaticBin  string
	srtdStaticErr  error
)

// buildSrtdStatic builds srtd with CGO_ENABLED=0, so that it is its own
// microvm guest /init.
func buildSrtdStatic(t *testing.T) string {
	t.Helper()
	srtdStaticOnce.Do(func() {
		srtdStaticBin = filepath.Join(filepath.Dir(srtBin), "srtd-static")
		gomod, _ := exec.Command("go", "env", "GOMOD").Output()
		b := exec.Command("go", "build", "-o", srtdStaticBin, "./cmd/srtd")
		b.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
		b.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := b.CombinedOutput(); err != nil {
			srtdStaticErr = fmt.Errorf("building srtd: %v\n%s", err, out)
		}
		os.Chmod(srtdStaticBin, 0o755)
	})
	if srtdStaticErr != nil {
		t.Fatal(srtdStaticErr)
	}
	return srtdStaticBin
}

// requireQEMU skips unless this host has QEMU; the tests run as root (the
// kernel cache is /var/cache/srt-microvm).
func requireQEMU(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("qemu-system-x86_64 not installed (apt-get install qemu-system-x86)")
	}
	if os.Geteuid() != 0 {
		t.Skip("the microvm srtd tests run as root; the unprivileged variant is not written yet")
	}
}

// startSrtdVM runs the static srtd as this user with extra environment.
func startSrtdVM(t *testing.T, env []string, args ...string) *srtd {
	t.Helper()
	base := []string{"PATH=" + cleanPATH, "HOME=" + os.Getenv("HOME"), "USER=root", "SHELL=/bin/bash"}
	return launchSrtd(t, buildSrtdStatic(t), t.TempDir(), nil, append(base, env...), 120*time.Second, args...)
}

func pidAlive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }

func detailPID(h port.Handle) int {
	if f, ok := h.Details["pid"].(float64); ok {
		return int(f)
	}
	return 0
}

// TestSrtdMicroVM: a session that asks for microvm gets a VM behind the
// same API as native: the handle's backend and details, an exec's events
// in order, the bind rules tried from inside, egress through the
// session's proxies only, suspend (to disk) and resume, and destroy
// leaving no QEMU.
func TestSrtdMicroVM(t *testing.T) {
	requireSandbox(t)
	requireQEMU(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "host-says-hi") }))
	defer ln.Close()
	ctx := context.Background()
	start := time.Now()
	d := startSrtdVM(t, nil, "--name-glob-write-denies", "none")
	t.Logf("srtd started in %v", time.Since(start))
	if p := awaitMicroVMProbe(t, d); !p.MicroVMAvailable {
		t.Fatalf("probe %+v; want microvmAvailable", p)
	}
	t.Logf("microvm probe done %v after start", time.Since(start))
	if !strings.Contains(d.stderr(), `microvm="available: QEMU microVM`) {
		t.Fatalf("srtd's log does not report microvm available:\n%s", d.stderr())
	}

	rw, ro, prot, state := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ro, "x"), []byte("ro-data\n"), 0o644)
	os.WriteFile(filepath.Join(rw, "protected.txt"), []byte("keep\n"), 0o644)
	t0 := time.Now()
	h, err := d.c.Launch(ctx, port.Spec{SessionID: "vm1", WorkspaceID: "w", Mode: port.ModeChat,
		BindMounts: []port.BindMount{
			{HostPath: rw, GuestPath: "/ws"},
			{HostPath: ro, GuestPath: "/ro", ReadOnly: true},
			{HostPath: prot, GuestPath: "/prot"},
		},
		// not-yet.txt does not exist: the guest's supervisor refuses
		// creating it, as the native backend's creation-time rules do.
		ProtectedPaths: []string{prot, filepath.Join(rw, "protected.txt"), filepath.Join(rw, "not-yet.txt")},
		GuestWorkdir:   "/ws", NetworkEnabled: true, EgressAllowlist: []string{"127.0.0.1"},
	}, port.BackendMicroVM)
	if err != nil {
		t.Fatalf("launch microvm: %v\n%s", err, d.stderr())
	}
	t.Logf("launch-to-warm %v", time.Since(t0))
	if h.Backend != port.BackendMicroVM || h.State != port.StateWarm {
		t.Fatalf("handle %+v; want microvm, warm", h)
	}
	for _, k := range []string{"accel", "kernel", "bootMs", "pid"} {
		if _, ok := h.Details[k]; !ok {
			t.Errorf("details lack %q: %v", k, h.Details)
		}
	}
	qemuPID := detailPID(h)

	t.Run("exec-events-in-order", func(t *testing.T) {
		in := "from-stdin"
		events, err := d.c.Exec(ctx, "vm1", client.ExecRequest{Argv: []string{"sh", "-c", "echo one; read x; echo $x; echo err >&2; pwd; exit 7"}, Stdin: &in})
		if err != nil {
			t.Fatal(err)
		}
		var types []port.EventType
		var out string
		code := -1
		for ev, err := range events {
			if err != nil {
				t.Fatal(err)
			}
			if uint64(len(types)+1) != ev.Seq {
				t.Errorf("event %s seq %d after %d events", ev.Type, ev.Seq, len(types))
			}
			types = append(types, ev.Type)
			if ev.Type == port.EventStdout {
				out += string(ev.Data)
			}
			if ev.Type == port.EventExit {
				code = *ev.ExitCode
			}
		}
		if len(types) < 4 || types[0] != port.EventStarting || types[1] != port.EventReady || types[len(types)-1] != port.EventExit {
			t.Errorf("events %v; want starting, ready, ..., exit", types)
		}
		if code != 7 || out != "one\nfrom-stdin\n/ws\n" {
			t.Errorf("exit %d stdout %q; want 7 and one/from-stdin//ws", code, out)
		}
	})

	t.Run("binds-from-inside", func(t *testing.T) {
		out, _ := d.sh(t, "vm1", "touch /ws/new && echo rw=ok; touch /ro/y && echo ro=w; cat /ro/x; touch /prot/p && echo prot=w; echo x >> /ws/protected.txt && echo protfile=w; echo x > /ws/not-yet.txt && echo notyet=w; touch /etc/vm-x && echo etc=w; ls / >/dev/null && echo ls=ok")
		for _, good := range []string{"rw=ok", "ro-data", "ls=ok"} {
			if !strings.Contains(out, good) {
				t.Errorf("no %q in\n%s", good, out)
			}
		}
		for _, bad := range []string{"ro=w", "prot=w", "protfile=w", "notyet=w"} {
			if strings.Contains(out, bad) {
				t.Errorf("%q in\n%s", bad, out)
			}
		}
		if _, err := os.Stat(filepath.Join(rw, "new")); err != nil {
			t.Errorf("the write to the rw bind did not reach the host: %v", err)
		}
		if b, _ := os.ReadFile(filepath.Join(rw, "protected.txt")); string(b) != "keep\n" {
			t.Errorf("protected file changed: %q", b)
		}
		if _, err := os.Stat(filepath.Join(ro, "y")); err == nil {
			t.Error("the read-only bind was written")
		}
	})

	t.Run("egress", func(t *testing.T) {
		url := "http://" + ln.Addr().String() + "/"
		for _, tc := range []struct {
			name, script string
			code         int
			want         string
		}{
			{"allowed-through-proxy", "srt-guest fetch " + url, 0, "host-says-hi"},
			{"unlisted-refused", "srt-guest fetch http://example.org/", 1, "403"},
			{"metadata-refused", "srt-guest fetch http://169.254.169.254/latest/meta-data/", 1, "403"},
			{"no-direct-route", "srt-guest dial " + ln.Addr().String(), 1, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				stdout, stderr, code, err := d.c.Run(ctx, "vm1", client.ExecRequest{Argv: []string{"sh", "-c", tc.script}})
				if err != nil {
					t.Fatal(err)
				}
				if code != tc.code || !strings.Contains(string(stdout)+string(stderr), tc.want) {
					t.Errorf("exit %d out %q err %q; want %d and %q", code, stdout, stderr, tc.code, tc.want)
				}
			})
		}
		events, err := d.c.Exec(ctx, "vm1", client.ExecRequest{Argv: []string{"srt-guest", "fetch", "http://denied.example/"}})
		if err != nil {
			t.Fatal(err)
		}
		saw := false
		for ev, err := range events {
			if err != nil {
				t.Fatal(err)
			}
			saw = saw || ev.Type == port.EventViolation && ev.Violation != nil && strings.Contains(ev.Violation.Target, "denied.example")
		}
		if !saw {
			t.Error("no violation event for a refused destination")
		}
	})

	t.Run("suspend-resume", func(t *testing.T) {
		h, err := d.c.Suspend(ctx, "vm1")
		if err != nil || h.State != port.StateSuspended {
			t.Fatalf("suspend: %+v %v", h, err)
		}
		if h.Details["suspendedToDisk"] != true {
			t.Errorf("an idle VM was not suspended to disk: %v", h.Details)
		}
		if _, err := d.c.Exec(ctx, "vm1", client.ExecRequest{Argv: []string{"true"}}); err == nil {
			t.Error("exec in a suspended sandbox was accepted")
		} else if ce, ok := err.(*client.Error); !ok || ce.Status != 409 {
			t.Errorf("exec while suspended: %v; want 409", err)
		}
		if h, err = d.c.Resume(ctx, "vm1"); err != nil || h.State != port.StateWarm {
			t.Fatalf("resume: %+v %v", h, err)
		}
		qemuPID = detailPID(h) // a new QEMU after a snapshot
		if out, code := d.sh(t, "vm1", "cat /ws/new && echo back; cat /ro/x"); code != 0 || !strings.Contains(out, "back") || !strings.Contains(out, "ro-data") {
			t.Errorf("after resume: exit %d %q", code, out)
		}
	})

	t.Run("review-mode", func(t *testing.T) {
		// A second VM while the first is warm (two at once).
		h2, err := d.c.Launch(ctx, port.Spec{SessionID: "vm2", WorkspaceID: "w", Mode: port.ModeReview,
			BindMounts:      []port.BindMount{{HostPath: rw, GuestPath: "/ws"}},
			RunnerStateDirs: []string{state}, NetworkEnabled: false}, port.BackendMicroVM)
		if err != nil {
			t.Fatal(err)
		}
		defer d.c.Destroy(ctx, "vm2")
		if h2.Backend != port.BackendMicroVM {
			t.Fatalf("handle %+v", h2)
		}
		out, _ := d.sh(t, "vm2", fmt.Sprintf("touch /ws/review && echo bind=w; touch %s/s && echo state=w; srt-guest fetch http://%s/ || echo net=refused", state, ln.Addr()))
		if strings.Contains(out, "bind=w") || !strings.Contains(out, "state=w") || !strings.Contains(out, "net=refused") {
			t.Errorf("review mode: %s", out)
		}
	})

	t.Run("destroy-leaves-no-qemu", func(t *testing.T) {
		if !pidAlive(qemuPID) {
			t.Fatalf("QEMU pid %d not running before destroy", qemuPID)
		}
		h, err := d.c.Destroy(ctx, "vm1")
		if err != nil || h.State != port.StateDestroyed {
			t.Fatalf("destroy: %+v %v", h, err)
		}
		for deadline := time.Now().Add(5 * time.Second); pidAlive(qemuPID); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("QEMU pid %d still alive after destroy", qemuPID)
			}
		}
		if _, err := d.c.Get(ctx, "vm1"); err == nil {
			t.Error("a destroyed session is still listed")
		}
	})
}

// TestSrtdMicroVMIncapableHost: on a host that cannot start a VM (QEMU
// missing, simulated with the operator setting SRT_MICROVM_QEMU), the
// probe says so and an explicit microvm request fails loudly.
func TestSrtdMicroVMIncapableHost(t *testing.T) {
	requireSandbox(t)
	ctx := context.Background()
	d := startSrtdVM(t, []string{"SRT_MICROVM_QEMU=/nonexistent/qemu-system-x86_64"})
	if p := awaitMicroVMProbe(t, d); p.MicroVMAvailable || p.MicroVMState != port.MicroVMUnavailable || !strings.Contains(p.MicroVMNote, "qemu") {
		t.Errorf("probe %+v; want microvm unavailable, naming qemu", p)
	}
	if !strings.Contains(d.stderr(), `microvm="unavailable:`) {
		t.Errorf("srtd's log does not say microvm unavailable:\n%s", d.stderr())
	}
	_, err := d.c.Launch(ctx, port.Spec{SessionID: "vm", WorkspaceID: "w"}, port.BackendMicroVM)
	ce, ok := err.(*client.Error)
	if !ok || ce.Status != 503 || !strings.Contains(ce.Error(), "not falling back") {
		t.Errorf("explicit microvm on an incapable host: %v; want 503, not falling back", err)
	}
	if out, err := exec.Command("pgrep", "-f", "nonexistent/qemu").Output(); err == nil {
		t.Errorf("a process is left: %s", out)
	}
}
