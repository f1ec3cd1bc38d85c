package microvm_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/srt-go/srt/microvm"
	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/settings"
)

// runScript runs sh -c script in vm and returns its output lines as a map
// "name" -> rest of the line, for scripts printing "name result...".
func runScript(t *testing.T, vm *microvm.VM, script string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	p, err := vm.Exec(ctx, microvm.ExecRequest{Argv: []string{"sh", "-c", script}, Stdout: &out, Stderr: &errb})
	if err != nil {
		t.Fatal(err)
	}
	if code, err := p.Wait(); code != 0 || err != nil {
		t.Fatalf("script: %d, %v\nstdout:\n%s\nstderr:\n%s", code, err, out.String(), errb.String())
	}
	t.Logf("script output:\n%s", out.String())
	res := map[string]string{}
	for _, l := range strings.Split(out.String(), "\n") {
		if k, v, ok := strings.Cut(l, " "); ok {
			res[k] = v
		}
	}
	return res
}

// systemAttempts is one shell script making every attempt of
// TestSystemShared, one line each: "name ok|FAIL detail". A line says ok
// when the guest saw what it must.
const systemAttempts = `
try() { name=$1; shift; if out=$("$@" 2>&1); then echo "$name ran $(echo $out | head -c 200)"; else echo "$name refused $(echo $out | head -c 200)"; fi; }
try git git --version
try python3 python3 -c 'print(6*7)'
try node node -e 'console.log(6*7)'
try shadow cat /etc/shadow
try gshadow cat /etc/gshadow
keys=""; for k in /etc/ssh/ssh_host_*_key; do [ -e "$k" ] || continue; if c=$(cat "$k" 2>/dev/null) && [ -n "$c" ]; then keys="$keys $k"; fi; done; echo "hostkeys readable:$keys"
try sslprivate ls -A /etc/ssl/private
try passwd cat /etc/passwd
try usrwrite touch /usr/srt-system-probe
try etcwrite sh -c 'echo x > /etc/srt-system-probe'
try binlink readlink /bin
try sh readlink -f /bin/sh
try tmpfs stat -f -c %T /tmp
try tmpwrite sh -c 'echo t > /tmp/t && cat /tmp/t'
try proc cat /proc/self/comm
try devnull sh -c 'echo x > /dev/null && echo fine'
try secretfile cat /work/secret.txt
try secretwrite sh -c 'echo stolen > /work/secret.txt'
try secretdir ls -A /work/secretdir
try secretdirfile cat /work/secretdir/f
try share cat /work/visible.txt
try shareln sh -c 'ln -sf /work/secret.txt /work/link && cat /work/link'
try sharerename mv /work/sub /work/sub2
echo end
`

// TestSystemShared boots one VM with the host's system directories, a
// writable share holding a denyRead file and directory, and runs
// systemAttempts; then the host is checked. A second boot sees what the
// first left (a symbolic link to the hidden file), and a third finds
// a denied path's parent replaced by a link and refuses to start.
func TestSystemShared(t *testing.T) {
	w := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(w, "secret.txt"), []byte("TOPSECRET"), 0o644))
	must(os.WriteFile(filepath.Join(w, "visible.txt"), []byte("visible"), 0o644))
	must(os.Mkdir(filepath.Join(w, "secretdir"), 0o755))
	must(os.WriteFile(filepath.Join(w, "secretdir", "f"), []byte("TOPSECRET2"), 0o644))
	must(os.MkdirAll(filepath.Join(w, "sub"), 0o755))
	must(os.WriteFile(filepath.Join(w, "sub", "key"), []byte("TOPSECRET3"), 0o644))
	deny := []string{filepath.Join(w, "secret.txt"), filepath.Join(w, "secretdir"), filepath.Join(w, "sub", "key")}
	cfg := func() microvm.Config {
		return microvm.Config{
			System:   policy.SystemDirs(policy.DefaultSystemDirs),
			Shares:   []microvm.Share{{HostPath: w, GuestPath: "/work"}},
			DenyRead: deny,
		}
	}
	vm := launch(t, cfg())
	r := runScript(t, vm, systemAttempts)
	vm.Close()
	ran := func(k, want string) {
		t.Helper()
		if v := r[k]; !strings.HasPrefix(v, "ran") || !strings.Contains(v, want) {
			t.Errorf("%s: %q, want it to run and print %q", k, v, want)
		}
	}
	refused := func(k string) {
		t.Helper()
		if v := r[k]; !strings.HasPrefix(v, "refused") {
			t.Errorf("%s: %q, want it refused", k, v)
		}
	}
	emptyOrRefused := func(k string) {
		t.Helper()
		if v := r[k]; v != "ran " && !strings.HasPrefix(v, "refused") || strings.Contains(v, "SECRET") {
			t.Errorf("%s: %q, want empty or refused", k, v)
		}
	}
	ran("git", "git version")
	ran("python3", "42")
	ran("node", "42")
	ran("passwd", "root:x:0:0")
	emptyOrRefused("shadow")
	emptyOrRefused("gshadow")
	if v := r["hostkeys"]; v != "readable:" {
		t.Errorf("ssh host keys: %q, want none readable", v)
	}
	emptyOrRefused("sslprivate")
	refused("usrwrite")
	refused("etcwrite")
	ran("binlink", "usr/bin")
	ran("sh", "/usr/bin/")
	ran("tmpfs", "tmpfs")
	ran("tmpwrite", "t")
	ran("proc", "cat")
	ran("devnull", "fine")
	emptyOrRefused("secretfile")
	refused("secretwrite")
	emptyOrRefused("secretdir")
	emptyOrRefused("secretdirfile")
	ran("share", "visible")
	emptyOrRefused("shareln")
	refused("sharerename")
	if r["end"] != "" && r["end"] != "\n" {
		t.Logf("end: %q", r["end"])
	}
	// The host: nothing written outside the share, the secrets intact.
	for _, p := range []string{"/usr/srt-system-probe", "/etc/srt-system-probe"} {
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("%s was created on the host", p)
		}
	}
	for p, want := range map[string]string{"secret.txt": "TOPSECRET", "secretdir/f": "TOPSECRET2", "sub/key": "TOPSECRET3"} {
		if b, err := os.ReadFile(filepath.Join(w, p)); err != nil || string(b) != want {
			t.Errorf("host %s: %q, %v; want %q", p, b, err, want)
		}
	}

	// Run 2: the link the first run left in the share leads to the hidden
	// file, which is hidden again.
	if _, err := os.Lstat(filepath.Join(w, "link")); err != nil {
		t.Fatalf("run 1 left no link: %v", err)
	}
	vm = launch(t, cfg())
	r = runScript(t, vm, `try() { name=$1; shift; if out=$("$@" 2>&1); then echo "$name ran $out"; else echo "$name refused $out"; fi; }
try link cat /work/link
try key cat /work/sub/key
`)
	vm.Close()
	emptyOrRefused("link")
	emptyOrRefused("key")

	// Run 3: a parent of a denied path replaced by a link between runs (by
	// something else than the guest, which its pin stopped) cannot be
	// covered: Launch refuses, before QEMU.
	must(os.Rename(filepath.Join(w, "sub"), filepath.Join(w, "sub2")))
	must(os.Symlink("sub2", filepath.Join(w, "sub")))
	c := cfg()
	c.InitPath = guestInit
	if vm, err := microvm.Launch(context.Background(), c); !errors.Is(err, microvm.ErrCannotHide) {
		if err == nil {
			vm.Close()
		}
		t.Errorf("Launch with a link on a denied path's way: %v, want ErrCannotHide", err)
	}
}

// TestSystemConfigRefused: system directories the guest mounts itself and
// shares into its pseudo filesystems are config errors.
func TestSystemConfigRefused(t *testing.T) {
	for _, c := range []microvm.Config{
		{System: []string{"/"}}, {System: []string{"/proc"}}, {System: []string{"/sys/kernel"}},
		{System: []string{"/dev"}}, {System: []string{"usr"}}, {System: []string{"/tmp"}},
		{Shares: []microvm.Share{{HostPath: "/tmp", GuestPath: "/dev/x"}}},
	} {
		if vm, err := microvm.Launch(context.Background(), c); err == nil {
			vm.Close()
			t.Errorf("Launch(%+v) started", c)
		}
	}
}

// systemBenchConfig is benchConfig with the host's system directories
// (the CLI's list) shown in the guest.
func systemBenchConfig() microvm.Config {
	c := benchConfig()
	c.System = policy.SystemDirs(policy.DefaultSystemDirs)
	return c
}

// BenchmarkLaunchToReadySystem is BenchmarkLaunchToReady with
// Config.System: the system exports are set up and mounted before ready.
func BenchmarkLaunchToReadySystem(b *testing.B) {
	requireQEMU(b)
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		vm, err := microvm.Launch(context.Background(), systemBenchConfig())
		if err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
		vm.Close()
	}
	b.ReportMetric(p50(ds), "p50-ms")
}

// BenchmarkExecRoundTripSystem runs "true" in a warm VM with
// Config.System, so PATH finds the host's /usr/bin/true (a dynamic
// executable read over 9p), and the busybox applet for comparison.
func BenchmarkExecRoundTripSystem(b *testing.B) {
	requireQEMU(b)
	vm, err := microvm.Launch(context.Background(), systemBenchConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer vm.Close()
	for _, argv := range [][]string{{"true"}, {"/.srt/bin/true"}} {
		b.Run(strings.ReplaceAll(argv[0], "/", "_"), func(b *testing.B) {
			var ds []time.Duration
			for b.Loop() {
				start := time.Now()
				p, err := vm.Exec(context.Background(), microvm.ExecRequest{Argv: argv})
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
}

// TestDenyReadOf: the policy's decision (policy.Readable) becomes
// Config.DenyRead; an allowRead at the same path re-opens it, and one
// strictly inside a hidden directory is refused (ErrUnenforceable).
func TestDenyReadOf(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "d", "x"), 0o755)
	os.WriteFile(filepath.Join(dir, "f"), []byte("s"), 0o644)
	compile := func(js string) *policy.Policy {
		t.Helper()
		s, err := settings.Parse([]byte(js), "test.json")
		if err != nil {
			t.Fatal(err)
		}
		p, err := policy.Compile(s, policy.Env{Cwd: dir, Home: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	real, _ := filepath.EvalSymlinks(dir)
	got, err := microvm.DenyReadOf(compile(`{"filesystem":{"denyRead":["./d","./f","./missing"]}}`))
	if err != nil || !slices.Contains(got, filepath.Join(real, "d")) || !slices.Contains(got, filepath.Join(real, "f")) ||
		slices.Contains(got, filepath.Join(real, "missing")) {
		t.Errorf("denyRead d, f, missing: %q, %v", got, err)
	}
	got, err = microvm.DenyReadOf(compile(`{"filesystem":{"denyRead":["./d"],"allowRead":["./d"]}}`))
	if err != nil || slices.Contains(got, filepath.Join(real, "d")) {
		t.Errorf("denyRead d re-opened by allowRead d: %q, %v", got, err)
	}
	if _, err := microvm.DenyReadOf(compile(`{"filesystem":{"denyRead":["./d"],"allowRead":["./d/x"]}}`)); !errors.Is(err, policy.ErrUnenforceable) {
		t.Errorf("allowRead inside a hidden directory: %v, want ErrUnenforceable", err)
	}
}
