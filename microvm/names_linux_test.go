package microvm_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/srt-go/srt/microvm"
	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/settings"
	"github.com/srt-go/srt/violation"
)

// TestNames boots one VM with Config.Names and runs one script: the
// policy's rules, written in host paths, are judged through a share shown
// at another guest path (/work); the guest's own trees are outside them;
// an existing protected file stays read-only and its directory cannot be
// moved away (pinned); the refusals come back as the native supervisor's
// records (the guest path as Target, the rule as Reason).
func TestNames(t *testing.T) {
	rw := t.TempDir()
	for _, f := range []string{".bashrc", "e/.mcp.json"} {
		os.MkdirAll(filepath.Dir(filepath.Join(rw, f)), 0o755)
		os.WriteFile(filepath.Join(rw, f), []byte("orig"), 0o644)
	}
	s, err := settings.Parse([]byte(`{"filesystem":{"allowWrite":["."],"enforceNamesAtCreation":true,"denyWrite":["**/.env"]}}`), "test")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Compile(s, policy.Env{Cwd: rw, Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []violation.Violation
	vm := launch(t, microvm.Config{
		System: policy.SystemDirs(policy.DefaultSystemDirs),
		Shares: []microvm.Share{{HostPath: rw, GuestPath: "/work"}},
		Names:  pol,
		OnViolation: func(v violation.Violation) {
			mu.Lock()
			got = append(got, v)
			mu.Unlock()
		},
	})
	d := vm.Details()
	t.Logf("guest Landlock ABI %v", d["guestLandlock"])
	if d["names"] != true {
		t.Errorf("Details()[names] = %v", d["names"])
	}
	script := `try() { n=$1; shift; if ( "$@" ) >/dev/null 2>&1; then echo "$n:ALLOWED"; else echo "$n:refused"; fi; }
cd /work
try env sh -c 'mkdir -p sub && echo x > sub/.env'
try bashrc-deep sh -c 'mkdir -p a/b/c && echo x > a/b/c/.bashrc'
try hook sh -c 'mkdir -p r/.git/hooks && echo x > r/.git/hooks/pre-commit'
try bashrc-existing sh -c 'echo x >> .bashrc'
try rename-existing sh -c 'echo y > y && mv y .bashrc'
try move-parent mv e e2
try symlink-swap sh -c 'ln -s .mcp.json lnk && echo x > lnk'
try hardlink sh -c 'echo z > z && ln z a/.env'
try usr-write sh -c 'echo x > /usr/srt-names-probe'
echo ok > ok.txt
try guest-tmp sh -c 'echo x > /tmp/.bashrc && mkdir -p /tmp/r/.git/hooks && echo x > /tmp/r/.git/hooks/pre-commit'
echo done
`
	code, out, errs := run(t, vm, []string{"sh", "-c", script}, "")
	if code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		name, verdict, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		want := "refused"
		if name == "guest-tmp" {
			want = "ALLOWED" // the guest's own /tmp reaches no host file
		}
		if verdict != want {
			t.Errorf("%s: %s, want %s", name, verdict, want)
		}
	}
	for _, p := range []string{"sub/.env", "a/b/c/.bashrc", "r/.git/hooks/pre-commit", "a/.env", ".mcp.json", "e2"} {
		if _, err := os.Lstat(filepath.Join(rw, p)); err == nil {
			t.Errorf("%s exists on the host", p)
		}
	}
	for _, f := range []string{".bashrc", "e/.mcp.json"} {
		if b, _ := os.ReadFile(filepath.Join(rw, f)); string(b) != "orig" {
			t.Errorf("%s changed: %q", f, b)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(rw, "ok.txt")); string(b) != "ok\n" {
		t.Errorf("ok.txt on the host: %q", b)
	}
	// A terminal session: /dev/tty opened for writing is the command's
	// own terminal (supervisor.SetTerminal), as native.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var tty bytes.Buffer
	p, err := vm.Exec(ctx, microvm.ExecRequest{Argv: []string{"sh", "-c", "echo via-tty > /dev/tty && echo TTY-OK; exit 3"},
		Stdin: strings.NewReader(""), Stdout: &tty, TTY: &microvm.TTYSize{Rows: 24, Cols: 80}})
	if err != nil {
		t.Fatal(err)
	}
	if code, err := p.Wait(); err != nil || code != 3 || !strings.Contains(tty.String(), "via-tty") || !strings.Contains(tty.String(), "TTY-OK") {
		t.Errorf("/dev/tty under the rules: exit %d, %v, output %q", code, err, tty.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if _, err := os.Lstat("/usr/srt-names-probe"); err == nil {
		os.Remove("/usr/srt-names-probe")
		t.Errorf("/usr/srt-names-probe was created on the host")
	}
	found, usr := false, false
	for _, v := range got {
		if v.Action == violation.FileWriteCreate && v.Target == "/work/sub/.env" && strings.Contains(v.Reason, "filesystem.denyWrite") {
			found = true
		}
		// A host system directory is judged at its own host path, by the
		// policy's write roots (guestMapping), not as the guest's own.
		if v.Action == violation.FileWriteCreate && v.Target == "/usr/srt-names-probe" {
			usr = true
		}
	}
	if !found {
		t.Errorf("no file-write-create record for /work/sub/.env with the denyWrite rule; got %+v", got)
	}
	if !usr {
		t.Errorf("no file-write-create record for /usr/srt-names-probe; got %+v", got)
	}
}

// BenchmarkExecRoundTripNames runs "true" (the host's, over 9p), the
// busybox applet, and a shell creating 100 files in the writable share,
// in a warm VM with the host's userland, without and with the
// creation-time rules (Config.Names: the notifying filter, the Landlock
// backstop and the guest supervisor performing every create), both VMs
// measured in the same run.
func BenchmarkExecRoundTripNames(b *testing.B) {
	requireQEMU(b)
	rw := b.TempDir()
	s, err := settings.Parse([]byte(`{"filesystem":{"allowWrite":["."],"enforceNamesAtCreation":true,"denyWrite":["**/.env"]}}`), "bench")
	if err != nil {
		b.Fatal(err)
	}
	pol, err := policy.Compile(s, policy.Env{Cwd: rw, Home: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	for _, names := range []bool{false, true} {
		cfg := systemBenchConfig()
		cfg.Shares = []microvm.Share{{HostPath: rw, GuestPath: "/work"}}
		if names {
			cfg.Names = pol
		}
		vm, err := microvm.Launch(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		for _, w := range []struct {
			name string
			argv []string
		}{
			{"true", []string{"true"}},
			{"busybox-true", []string{"/.srt/bin/true"}},
			{"create-100", []string{"sh", "-c", `cd /work && rm -rf d && mkdir d && i=0; while [ $i -lt 100 ]; do echo x > d/f$i; i=$((i+1)); done`}},
		} {
			b.Run(fmt.Sprintf("names=%v/%s", names, w.name), func(b *testing.B) {
				var ds []time.Duration
				for b.Loop() {
					start := time.Now()
					p, err := vm.Exec(context.Background(), microvm.ExecRequest{Argv: w.argv})
					if err != nil {
						b.Fatal(err)
					}
					if code, err := p.Wait(); code != 0 || err != nil {
						b.Fatal(code, err)
					}
					ds = append(ds, time.Since(start))
				}
				b.ReportMetric(p50(ds), "p50-ms")
			})
		}
		vm.Close()
	}
}

// TestGuestHardened: a root workload cannot make the kernel start a
// program of its own as a usermode helper (which would run outside every
// guest rule), nor change the guest's own root: the review's escape
// (replace /sbin/modprobe, then socket(2) of an unloaded family) plants
// nothing on the host. Root's home and /var/tmp stay writable.
func TestGuestHardened(t *testing.T) {
	rw := t.TempDir()
	s, err := settings.Parse([]byte(`{"filesystem":{"allowWrite":["."],"enforceNamesAtCreation":true}}`), "test")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Compile(s, policy.Env{Cwd: rw, Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	vm := launch(t, microvm.Config{
		System: policy.SystemDirs(policy.DefaultSystemDirs),
		Shares: []microvm.Share{{HostPath: rw, GuestPath: "/work"}},
		Names:  pol,
	})
	script := `try() { n=$1; shift; if ( "$@" ) >/dev/null 2>&1; then echo "$n:ALLOWED"; else echo "$n:refused"; fi; }
printf '#!/bin/sh\necho x > /work/.bashrc\necho x > /work/PWNED\n' > /tmp/evil && chmod 755 /tmp/evil
echo "modprobe:[$(cat /proc/sys/kernel/modprobe)]"
try set-modprobe sh -c 'echo /tmp/evil > /proc/sys/kernel/modprobe'
try set-core-pattern sh -c 'echo "|/tmp/evil" > /proc/sys/kernel/core_pattern'
try set-uevent-helper sh -c 'echo /tmp/evil > /sys/kernel/uevent_helper'
try replace-sbin sh -c 'rm -rf /sbin && mkdir /sbin && cp /tmp/evil /sbin/modprobe'
try root-create touch /srt-root-probe
try replace-init sh -c 'cp /tmp/evil /init'
try remount-root mount -o remount,rw /
python3 -c '
import socket
for fam in (38, 5, 9, 21, 24, 29, 30, 31, 33, 35, 36, 37, 39, 40, 41, 42, 43, 44, 45):
    try: socket.socket(fam, socket.SOCK_SEQPACKET, 0).close()
    except OSError: pass
' 2>/dev/null
sleep 1
try home-write sh -c 'echo x > /root/.cache-probe'
try var-tmp-write sh -c 'echo x > /var/tmp/probe'
echo done
`
	code, out, errs := run(t, vm, []string{"sh", "-c", script}, "")
	if code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "modprobe:[]") {
		t.Errorf("kernel.modprobe is not empty:\n%s", out)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		name, verdict, ok := strings.Cut(l, ":")
		if !ok || name == "modprobe" {
			continue
		}
		want := "refused"
		if name == "home-write" || name == "var-tmp-write" {
			want = "ALLOWED"
		}
		if verdict != want {
			t.Errorf("%s: %s, want %s", name, verdict, want)
		}
	}
	for _, p := range []string{".bashrc", "PWNED"} {
		if _, err := os.Lstat(filepath.Join(rw, p)); err == nil {
			t.Errorf("%s was planted on the host", p)
		}
	}
}
