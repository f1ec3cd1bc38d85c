package microvm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/srt-go/srt/microvm"
	"github.com/srt-go/srt/netrule"
	"golang.org/x/sys/unix"
)

func TestPTYSession(t *testing.T) {
	vm := launch(t, microvm.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	inR, inW := io.Pipe()
	var out syncBuffer
	p, err := vm.Exec(ctx, microvm.ExecRequest{Argv: []string{"sh"}, Stdin: inR, Stdout: &out,
		TTY: &microvm.TTYSize{Rows: 24, Cols: 80}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(out.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the terminal output:\n%s", want, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	fmt.Fprintf(inW, "tty; stty size; echo A$((6*7))B\n")
	waitFor("A42B")
	if s := out.String(); !strings.Contains(s, "/dev/pts/") || !strings.Contains(s, "24 80") {
		t.Errorf("not a 24x80 PTY:\n%s", s)
	}
	if err := p.Resize(microvm.TTYSize{Rows: 50, Cols: 132}); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(inW, "stty size; exit 7\n")
	code, err := p.Wait()
	if err != nil || code != 7 {
		t.Fatalf("Wait = %d, %v; want 7", code, err)
	}
	if !strings.Contains(out.String(), "50 132") {
		t.Errorf("resize not seen:\n%s", out.String())
	}
	inW.Close()
}

func TestSharesReadOnlyAndProtected(t *testing.T) {
	rw, ro := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ro, "data"), []byte("ro-data"), 0o644)
	os.Mkdir(filepath.Join(rw, "repo"), 0o755)
	os.WriteFile(filepath.Join(rw, "repo", "file"), []byte("orig"), 0o644)
	vm := launch(t, microvm.Config{
		Shares: []microvm.Share{
			{HostPath: rw, GuestPath: "/work"},
			{HostPath: ro, GuestPath: "/ref", ReadOnly: true},
		},
		ProtectedPaths: []string{"/work/repo"},
	})
	for _, tc := range []struct {
		name  string
		sh    string
		code  int
		check func(t *testing.T)
	}{
		{"write-rw-share", "echo hi > /work/new && cat /work/new", 0, func(t *testing.T) {
			if b, _ := os.ReadFile(filepath.Join(rw, "new")); string(b) != "hi\n" {
				t.Errorf("host sees %q", b)
			}
		}},
		{"read-ro-share", `test "$(cat /ref/data)" = ro-data`, 0, nil},
		{"write-ro-share", "echo x > /ref/data", 1, nil},
		{"create-in-ro-share", "touch /ref/new", 1, nil},
		{"remount-ro-share-rw", "mount -o remount,rw /ref && echo x > /ref/data", 1, nil},
		{"write-protected", "echo x > /work/repo/file", 1, nil},
		{"create-in-protected", "touch /work/repo/new", 1, nil},
		{"unmount-protected", "umount /work/repo && echo x > /work/repo/file", 1, nil},
		{"host-root-invisible", "test -e /work/../etc/debian_version || test -e /usr/bin/apt", 1, nil},
		// A set-id bit on a share's file lands on the host's file (9p
		// security_model=none): a set-user-ID shell would outlive the VM.
		{"setuid-on-share", "cp /bin/busybox /work/sh 2>/dev/null || cp /bin/sh /work/sh; chmod 4755 /work/sh", 1, func(t *testing.T) {
			if fi, err := os.Stat(filepath.Join(rw, "sh")); err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
				t.Errorf("host file %v", fi.Mode())
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, vm, []string{"sh", "-c", tc.sh}, "")
			if code != tc.code {
				t.Errorf("exit %d, want %d (stdout %q, stderr %q)", code, tc.code, out, errs)
			}
			if tc.check != nil {
				tc.check(t)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(ro, "data")); string(b) != "ro-data" {
		t.Errorf("read-only share changed: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(rw, "repo", "file")); string(b) != "orig" {
		t.Errorf("protected file changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(rw, "repo", "new")); err == nil {
		t.Error("file created in a protected directory")
	}
}

func TestEgressOnlyThroughProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "host-service-ok")
	})}
	go srv.Serve(ln)
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	pol, err := netrule.Compile(netrule.Rules{Allowed: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	vm := launch(t, microvm.Config{Policy: pol, Events: true})
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	for _, tc := range []struct {
		name string
		argv []string
		code int
		want string
	}{
		{"allowed-through-proxy", []string{"srt-guest", "fetch", url}, 0, "host-service-ok"},
		{"denied-through-proxy", []string{"srt-guest", "fetch", "http://example.com/"}, 1, "403"},
		{"allowed-through-socks5", []string{"srt-guest", "fetch-socks", url}, 0, "host-service-ok"},
		{"denied-through-socks5", []string{"srt-guest", "fetch-socks", "http://example.com/"}, 1, ""},
		{"direct-to-host-service", []string{"srt-guest", "dial", fmt.Sprintf("127.0.0.1:%d", port)}, 1, ""},
		{"direct-to-slirp-gateway", []string{"srt-guest", "dial", "10.0.2.2:80"}, 1, ""},
		{"direct-to-public-ip", []string{"srt-guest", "dial", "1.1.1.1:443"}, 1, ""},
		{"only-lo", []string{"ls", "/sys/class/net"}, 0, "lo\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, vm, tc.argv, "")
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d stdout %q stderr %q; want exit %d and %q", code, out, errs, tc.code, tc.want)
			}
		})
	}
	vm.Close()
	var vio []string
	for ev := range vm.Events() {
		if ev.Type == microvm.EventViolation {
			vio = append(vio, ev.Violation.Target)
		}
	}
	if len(vio) != 2 || vio[0] != "example.com:80" || vio[1] != "example.com:80" {
		t.Errorf("violation events %q, want example.com:80 from each proxy", vio)
	}
}

func TestEventsInOrder(t *testing.T) {
	vm := launch(t, microvm.Config{Events: true})
	code, _, _ := run(t, vm, []string{"sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do echo line$i; done; echo err >&2; exit 5"}, "")
	if code != 5 {
		t.Fatalf("exit %d", code)
	}
	// A context deadline kills the process: exit 137 and a killed event.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	p, err := vm.Exec(ctx, microvm.ExecRequest{Argv: []string{"sleep", "30"}})
	if err != nil {
		t.Fatal(err)
	}
	if code, err := p.Wait(); code != 137 || err != nil {
		t.Errorf("timed-out sleep: %d, %v; want 137", code, err)
	}
	vm.Close()
	var killed []string
	var types []string
	var stdout bytes.Buffer
	for ev := range vm.Events() {
		types = append(types, string(ev.Type))
		if ev.Type == microvm.EventStdout {
			stdout.Write(ev.Data)
		}
		if ev.Type == microvm.EventKilled {
			killed = append(killed, ev.Reason)
		}
	}
	got := strings.Join(types, " ")
	t.Logf("events: %s", got)
	if len(killed) != 1 || killed[0] != "timeout" {
		t.Errorf("killed reasons %q, want [timeout]", killed)
	}
	// stdout and stderr are two pipes, so their relative order is the
	// guest scheduler's; each stream's own order is checked above.
	if !strings.HasPrefix(got, "starting ready ") || !strings.HasSuffix(got, " exit killed exit") ||
		strings.Count(got, "stderr") != 1 || strings.Index(got, " exit") < strings.LastIndex(got, "std") {
		t.Errorf("events %s", got)
	}
	var want strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&want, "line%d\n", i)
	}
	if stdout.String() != want.String() {
		t.Errorf("stdout events %q", stdout.String())
	}
}

func TestSuspendResume(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), []byte("before"), 0o644)
	vm := launch(t, microvm.Config{Shares: []microvm.Share{{HostPath: dir, GuestPath: "/work"}}})
	ctx := context.Background()
	run(t, vm, []string{"sh", "-c", "echo mem > /tmp/in-ram"}, "")

	t.Run("pause", func(t *testing.T) {
		if err := vm.Suspend(ctx, microvm.SuspendOptions{}); err != nil {
			t.Fatal(err)
		}
		if s := vm.State(); s != microvm.StateSuspended {
			t.Fatalf("state %s", s)
		}
		if _, err := vm.Exec(ctx, microvm.ExecRequest{Argv: []string{"true"}}); !errors.Is(err, microvm.ErrState) {
			t.Errorf("Exec while suspended: %v, want ErrState", err)
		}
		if err := vm.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		if code, out, _ := run(t, vm, []string{"cat", "/tmp/in-ram"}, ""); code != 0 || out != "mem\n" {
			t.Errorf("after resume: %d %q", code, out)
		}
	})
	t.Run("snapshot-to-disk", func(t *testing.T) {
		pid := vm.PID()
		start := time.Now()
		if err := vm.Suspend(ctx, microvm.SuspendOptions{ToDisk: true}); err != nil {
			t.Fatal(err)
		}
		t.Logf("suspend to disk took %v", time.Since(start))
		if processAlive(pid) {
			t.Error("QEMU still runs while suspended to disk: RAM not freed")
		}
		os.WriteFile(filepath.Join(dir, "f"), []byte("changed while suspended"), 0o644)
		start = time.Now()
		if err := vm.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("resume from disk took %v", time.Since(start))
		if s := vm.State(); s != microvm.StateWarm {
			t.Fatalf("state %s", s)
		}
		if code, out, _ := run(t, vm, []string{"cat", "/tmp/in-ram", "/work/f"}, ""); code != 0 || out != "mem\nchanged while suspended" {
			t.Errorf("after restore: %d %q", code, out)
		}
	})
	t.Run("snapshot-refused-when-busy", func(t *testing.T) {
		p, err := vm.Exec(ctx, microvm.ExecRequest{Argv: []string{"sleep", "30"}, Dir: "/work"})
		if err != nil {
			t.Fatal(err)
		}
		if err := vm.Suspend(ctx, microvm.SuspendOptions{ToDisk: true}); !errors.Is(err, microvm.ErrBusy) {
			t.Errorf("Suspend to disk while busy: %v, want ErrBusy", err)
		}
		p.Kill()
		if code, _ := p.Wait(); code != 137 {
			t.Errorf("killed sleep: %d", code)
		}
	})
}

func TestCloseLeavesNothing(t *testing.T) {
	base := t.TempDir()
	t.Setenv("SRT_MICROVM_RUNDIR", base)
	vm := launch(t, microvm.Config{})
	pid := vm.PID()
	qemuPids := qemuProcesses(base)
	if len(qemuPids) == 0 {
		t.Fatalf("no QEMU process found for run base %s", base)
	}
	if ents, _ := os.ReadDir(base); len(ents) != 0 {
		t.Errorf("run directory left while running: %v", ents)
	}
	// Defence in depth: QEMU holds no capability, runs under its seccomp
	// filter (-sandbox on), and cannot write the kernel's global knobs
	// even though it may keep uid 0.
	for _, p := range qemuPids {
		for _, f := range []string{"sys/kernel/core_pattern", "sysrq-trigger"} {
			if _, err := os.Stat("/proc/" + f); err != nil {
				continue // not in this host's kernel
			}
			path := fmt.Sprintf("/proc/%d/root/proc/%s", p, f)
			var st syscall.Statfs_t
			if err := syscall.Statfs(path, &st); err != nil || st.Flags&unix.ST_RDONLY == 0 {
				t.Errorf("%s is not read-only in QEMU's view (%v)", path, err)
			}
		}
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
		st := string(b)
		if !strings.Contains(st, "CapEff:\t0000000000000000") || !strings.Contains(st, "Seccomp:\t2") {
			t.Errorf("QEMU %d is not confined:\n%s", p, st)
		}
	}
	vm.Close()
	if s := vm.State(); s != microvm.StateDestroyed {
		t.Errorf("state %s", s)
	}
	for _, p := range append(qemuPids, pid) {
		if processAlive(p) {
			t.Errorf("process %d alive after Close", p)
		}
	}
	if _, err := vm.Exec(context.Background(), microvm.ExecRequest{Argv: []string{"true"}}); !errors.Is(err, microvm.ErrState) {
		t.Errorf("Exec after Close: %v", err)
	}
}

func TestIncapableHostFailsLoudly(t *testing.T) {
	for _, tc := range []struct {
		name, qemu, init string
		unavailable      bool // an *UnavailableError, not a failed boot
	}{
		{"qemu-missing", "/nonexistent/qemu-system-x86_64", guestInit, true},
		{"qemu-broken", "/bin/false", guestInit, false},
		{"init-without-agent", "", "/bin/busybox", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			vm, err := microvm.Launch(ctx, microvm.Config{QEMUPath: tc.qemu, InitPath: tc.init})
			var ue *microvm.UnavailableError
			if err != nil && errors.As(err, &ue) != tc.unavailable {
				t.Errorf("error %v is not an *UnavailableError", err)
			}
			if err == nil {
				vm.Close()
				t.Fatal("Launch succeeded on an incapable host")
			}
			if vm != nil && vm.State() != microvm.StateError {
				t.Errorf("state %s, want error", vm.State())
			}
			t.Logf("error: %v", err)
			r := microvm.ProbeConfig(ctx, microvm.Config{QEMUPath: tc.qemu, InitPath: tc.init})
			if r.Available || r.Reason == "" {
				t.Errorf("Probe = %+v", r)
			}
		})
	}
}

func TestProbe(t *testing.T) {
	requireQEMU(t)
	vmSlots <- struct{}{}
	defer func() { <-vmSlots }()
	r := microvm.ProbeConfig(context.Background(), microvm.Config{InitPath: guestInit})
	if !r.Available {
		t.Fatalf("Probe: %+v", r)
	}
	t.Logf("%+v", r)
}

func TestParentKilledLeavesNoQEMU(t *testing.T) {
	requireQEMU(t)
	vmSlots <- struct{}{}
	defer func() { <-vmSlots }()
	base := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SRT_MICROVM_TEST_HELPER=1", "SRT_MICROVM_TEST_INIT="+guestInit,
		"SRT_MICROVM_RUNDIR="+base)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line := make(chan string, 1)
	go func() {
		b := make([]byte, 256)
		n, _ := io.ReadAtLeast(out, b, 1)
		line <- string(b[:n])
	}()
	select {
	case l := <-line:
		if !strings.HasPrefix(l, "PID") {
			t.Fatalf("helper: %s", l)
		}
	case <-time.After(120 * time.Second):
		t.Fatal("helper did not boot a VM")
	}
	qemu := qemuProcesses(base)
	if len(qemu) == 0 {
		t.Fatal("no QEMU process")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range qemu {
		for processAlive(p) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if processAlive(p) {
			t.Errorf("QEMU %d outlived its killed parent", p)
			syscall.Kill(p, syscall.SIGKILL)
		}
	}
	if ents, _ := os.ReadDir(base); len(ents) != 0 {
		t.Errorf("run directory left: %v", ents)
	}
}

// qemuProcesses returns the QEMU processes whose command line names
// the run base dir.
func qemuProcesses(base string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		args := strings.Split(string(b), "\x00")
		if len(args) > 0 && strings.HasSuffix(args[0], "qemu-system-x86_64") && strings.Contains(string(b), base) {
			out = append(out, pid)
		}
	}
	return out
}

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// A zombie is dead for our purposes.
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}

type syncBuffer struct {
	mu  chan struct{}
	buf bytes.Buffer
}

func (b *syncBuffer) lock() {
	if b.mu == nil {
		b.mu = make(chan struct{}, 1)
	}
	b.mu <- struct{}{}
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.lock()
	defer func() { <-b.mu }()
	return b.buf.Write(p)
}
func (b *syncBuffer) String() string { b.lock(); defer func() { <-b.mu }(); return b.buf.String() }

// TestCacheNeverWritable: a writable share that holds the VMs' cache
// (the guest kernel and the initramfs whose /init enforces the next VMs'
// rules; ~/.cache/srt-microvm is under a shared $HOME) shows it read-only,
// and it cannot be moved away; the rest of the share stays writable.
func TestCacheNeverWritable(t *testing.T) {
	// A copy of the cache (hard links where it can), so that a failure
	// cannot damage the one the other tests boot from.
	parent := t.TempDir()
	cache := filepath.Join(parent, "srt-microvm")
	copyTree(t, microvm.DefaultCacheDir(), cache)
	probe := filepath.Join(parent, "srt-cache-test-probe")
	vm := launch(t, microvm.Config{CacheDir: cache, Shares: []microvm.Share{{HostPath: parent, GuestPath: "/vc"}}})
	c := "/vc/" + filepath.Base(cache)
	script := `try() { n=$1; shift; if ( "$@" ) >/dev/null 2>&1; then echo "$n:ALLOWED"; else echo "$n:refused"; fi; }
try create touch ` + c + `/planted
try append sh -c 'for f in ` + c + `/initrd-*.cpio; do echo x >> "$f" || exit 1; done'
try remove sh -c 'rm -f ` + c + `/initrd-*.cpio'
try rename mv ` + c + ` /vc/srt-cache-moved
try unmount umount ` + c + `
try elsewhere sh -c 'echo ok > /vc/srt-cache-test-probe'
`
	code, out, errs := run(t, vm, []string{"sh", "-c", script}, "")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		name, verdict, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		want := "refused"
		if name == "elsewhere" {
			want = "ALLOWED"
		}
		if verdict != want {
			t.Errorf("%s: %s, want %s", name, verdict, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(cache, "planted")); err == nil {
		os.Remove(filepath.Join(cache, "planted"))
		t.Error("a file was planted in the VMs' cache")
	}
	if _, err := os.Lstat(filepath.Join(parent, "srt-cache-moved")); err == nil {
		t.Fatal("the VMs' cache was moved away")
	}
	if b, _ := os.ReadFile(probe); string(b) != "ok\n" {
		t.Errorf("the share around the cache is not writable: %q", b)
	}
}

// copyTree copies directory tree src to dst, hard-linking files where it
// can but the initramfs images, which TestCacheNeverWritable writes to.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		to := filepath.Join(dst, strings.TrimPrefix(p, src))
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case !d.Type().IsRegular():
			return nil
		}
		if !strings.HasPrefix(d.Name(), "initrd-") && os.Link(p, to) == nil {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
