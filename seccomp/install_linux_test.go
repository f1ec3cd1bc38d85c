//go:build amd64 || arm64

package seccomp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"golang.org/x/net/bpf"
)

// The kernel tests re-execute the test binary as a "victim" child, which
// installs the filter (irreversible: no_new_privs and seccomp cannot be
// undone) and then makes the forbidden calls with raw system calls, so the
// test process itself is never filtered.

const victimEnv = "SRT_SECCOMP_VICTIM"

// Victim modes.
const (
	modeBaseline = "baseline" // probes without a filter: what the kernel alone says
	modeDeny     = "deny"     // Install(Build(Options{})), then probes
	modeAllow    = "allow"    // Install(Build(all options true)), then probes
	modeProbe    = "probe"    // probes only; the filter came from outside (bwrap)
	modeTrue     = "true"     // exit 0 at once: the target of the fork-exec probe
	// Modes that end in a kill: "<name>" runs unfiltered, "<name>+filter"
	// filtered. Each prints its result only if it survives.
	modeInt80 = "int80" // i386 getpid through int $0x80
	modeX32   = "x32"   // getpid with __X32_SYSCALL_BIT
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(victimEnv); mode != "" {
		os.Exit(victim(mode))
	}
	os.Exit(m.Run())
}

// runner starts victims, as the current user or as another uid.
type runner struct {
	exe  string              // test binary to run
	dir  string              // working directory of the victim
	cred *syscall.Credential // nil: the current user
	wrap []string            // argv prefix, e.g. bwrap and its options
}

// run starts the victim in mode and returns its JSON results, or the
// *exec.ExitError if it did not exit 0.
func (r runner) run(t *testing.T, mode string, extra ...*os.File) (map[string]string, error) {
	t.Helper()
	argv := append(append([]string{}, r.wrap...), r.exe, "-test.run=^$")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), victimEnv+"="+mode)
	cmd.Dir = r.dir
	cmd.ExtraFiles = extra
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if r.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: r.cred}
	}
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("victim %s: %w; stderr: %s", mode, err, stderr.Bytes())
		}
		return nil, err
	}
	out := map[string]string{}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("victim %s printed %q: %v (stderr: %s)", mode, stdout.Bytes(), err, stderr.Bytes())
	}
	return out, nil
}

// victimRunners returns a runner for the current user and, when this
// process may switch uid, one for nobody (65534). The binary is copied to
// a world-readable directory so that nobody can execute it.
func victimRunners(t *testing.T) map[string]runner {
	t.Helper()
	dir, err := os.MkdirTemp("", "srt-seccomp-victim-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "victim")
	if err := copyFile(exe, os.Args[0]); err != nil {
		t.Fatal(err)
	}
	rs := map[string]runner{"self": {exe: exe, dir: dir}}

	nobody := runner{exe: exe, dir: dir, cred: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if _, err := nobody.run(t, modeTrue); err != nil {
		t.Logf("not running victims as uid 65534: %v", err)
	} else {
		rs["nobody"] = nobody
	}
	return rs
}

func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// checkProbes compares a filtered run with the wants of column (deny or
// allow), falling back to the baseline run where the want is empty.
func checkProbes(t *testing.T, got, baseline map[string]string, allow bool) {
	t.Helper()
	if e, ok := got["open-ptmx"]; ok {
		t.Errorf("open /dev/ptmx: %s; the ioctl probes ran on fd -1", e)
	}
	for _, p := range probes {
		want := p.deny
		if allow {
			want = p.allow
		}
		if want == "" {
			want = baseline[p.name]
		}
		if g := got[p.name]; g != want {
			t.Errorf("%s: got %s, want %s (without the filter: %s)", p.name, g, want, baseline[p.name])
		} else {
			t.Logf("%-26s %-8s (without the filter: %s)", p.name, g, baseline[p.name])
		}
	}
}

func TestInstallKernel(t *testing.T) {
	for who, r := range victimRunners(t) {
		t.Run(who, func(t *testing.T) {
			baseline, err := r.run(t, modeBaseline)
			if err != nil {
				t.Fatal(err)
			}
			if baseline["no-new-privs"] != "0" {
				t.Fatalf("baseline victim already has no_new_privs=%s; the test cannot tell what Install did", baseline["no-new-privs"])
			}
			for _, mode := range []string{modeDeny, modeAllow} {
				t.Run(mode, func(t *testing.T) {
					got, err := r.run(t, mode)
					if err != nil {
						t.Fatal(err)
					}
					checkProbes(t, got, baseline, mode == modeAllow)
				})
			}
		})
	}
}

// TestEncodeBwrap feeds Encode's bytes to bwrap --seccomp, which loads
// them with prctl(PR_SET_SECCOMP) before exec: the victim, which installs
// nothing itself, must then see the deny results.
func TestEncodeBwrap(t *testing.T) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skipf("bwrap not installed: %v", err)
	}
	prog, err := Build(Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(t.TempDir(), "filter.bpf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(Encode(prog)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}

	self := victimRunners(t)["self"]
	baseline, err := self.run(t, modeBaseline)
	if err != nil {
		t.Fatal(err)
	}
	// Probe whether bwrap can run here at all (it needs root or user
	// namespaces); skip only on its own refusal, quoting it.
	probe := exec.Command(bwrap, "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "true")
	if out, err := probe.CombinedOutput(); err != nil {
		t.Skipf("bwrap cannot sandbox here: %v: %s", err, out)
	}
	r := self
	r.wrap = []string{bwrap, "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--seccomp", "3"}
	got, err := r.run(t, modeProbe, f)
	if err != nil {
		t.Fatal(err)
	}
	checkProbes(t, got, baseline, false)
}

// TestForeignArchKilled makes an i386 system call (int $0x80) from the
// 64-bit victim: without the filter it must work, with it the process must
// die of SIGSYS (SECCOMP_RET_KILL_PROCESS).
func TestForeignArchKilled(t *testing.T) {
	if int80Syscall == nil {
		t.Skipf("int $0x80 is an amd64 instruction; on %s the arch check is covered by TestFilterVM", runtime.GOARCH)
	}
	r := victimRunners(t)["self"]
	out, err := r.run(t, modeInt80)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGSEGV {
			t.Skipf("kernel has no IA-32 emulation: int $0x80 faulted without any filter (%v)", err)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if out["int80-getpid"] != out["getpid"] {
		t.Fatalf("unfiltered int $0x80 getpid = %s, want the victim's pid %s", out["int80-getpid"], out["getpid"])
	}
	wantKilled(t, r, modeInt80+"+filter")
}

// TestX32Killed makes getpid with __X32_SYSCALL_BIT set.
func TestX32Killed(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skipf("x32 exists only on amd64, not %s", runtime.GOARCH)
	}
	r := victimRunners(t)["self"]
	out, err := r.run(t, modeX32)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("unfiltered x32 getpid: %s (ENOSYS: kernel runs with x32 disabled)", out["x32-getpid"])
	wantKilled(t, r, modeX32+"+filter")
}

func wantKilled(t *testing.T, r runner, mode string) {
	t.Helper()
	out, err := r.run(t, mode)
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("victim %s survived (results %v, err %v); want it killed by SIGSYS", mode, out, err)
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGSYS {
		t.Fatalf("victim %s: %v, want killed by SIGSYS", mode, err)
	}
}

func TestInstallRejectsBadProgram(t *testing.T) {
	// Both fail before any system call, so they are safe in-process.
	if err := Install(nil); err == nil {
		t.Error("Install(nil) succeeded")
	}
	big := make([]bpf.RawInstruction, maxInstructions+1)
	if err := Install(big); err == nil {
		t.Error("Install of 4097 instructions succeeded")
	}
}
