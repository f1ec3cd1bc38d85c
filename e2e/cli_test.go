package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// writeSettings is the policy of most tests: the work directory is the
// only write root.
const writeSettings = `{"filesystem":{"allowWrite":["."]}}`

// TestCLI checks srt's command line: argument passing, exit statuses and
// srt's own options (issue 2, "What a user must be able to do").
func TestCLI(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		pre      []string // srt options, after -s FILE
		args     []string
		noDashes bool // no "--" before args
		wantOut  string
		outRE    string // instead of wantOut
		wantCode int
		errRE    string // stderr must match; "" means stderr empty
	}{
		{name: "echo", args: []string{"echo", "hi"}, wantOut: "hi\n"},
		{name: "exit-status", args: []string{"sh", "-c", "exit 3"}, wantCode: 3},
		{name: "false", args: []string{"false"}, wantCode: 1},
		{name: "killed-by-TERM", args: []string{"sh", "-c", "kill -TERM $$"}, wantCode: 143},
		{name: "killed-by-SEGV", args: []string{"sh", "-c", "kill -SEGV $$"}, wantCode: 139},
		{name: "killed-by-KILL", args: []string{"sh", "-c", "kill -KILL $$"}, wantCode: 137},
		{name: "command-not-found", args: []string{"no-such-command-e2e"}, wantCode: 127, errRE: `no-such-command-e2e`},
		{name: "not-executable", args: []string{"/etc/hostname"}, wantCode: 126, errRE: `/etc/hostname`},
		{name: "dash-c-positional", pre: []string{"-c", "echo $0 $1"}, args: []string{"a", "b"}, noDashes: true, wantOut: "a b\n"},
		{name: "dash-c-shell-syntax", pre: []string{"-c", "echo one | tr o O && echo two"}, noDashes: true, wantOut: "One\ntwo\n"},
		{name: "args-verbatim", args: []string{"printf", "%s|", "a b", "$x", "*", `"q"`, "'s'", "", "a\nb"}, wantOut: "a b|$x|*|\"q\"|'s'||a\nb|"},
		{name: "options-after-command-belong-to-it", args: []string{"echo", "-d", "-c", "x"}, noDashes: true, wantOut: "-d -c x\n"},
		{name: "settings-option-after-command", args: []string{"echo", "--settings", "/nonexistent"}, noDashes: true, wantOut: "--settings /nonexistent\n"},
		{name: "double-dash-passed-after-command", args: []string{"echo", "--", "x"}, wantOut: "-- x\n"},
		{name: "double-dash-then-dash-command", args: []string{"-no-such-e2e"}, wantCode: 127, errRE: `-no-such-e2e`},
		{name: "version", pre: []string{"-V"}, noDashes: true, outRE: `^srt \S+\n$`},
		{name: "version-long", pre: []string{"--version"}, noDashes: true, outRE: `^srt \S+\n$`},
		{name: "help", pre: []string{"-h"}, noDashes: true, outRE: `(?s)^Usage: srt .*--settings.*`},
		{name: "help-long", pre: []string{"--help"}, noDashes: true, outRE: `(?s)^Usage: srt .*`},
		{name: "unknown-option", pre: []string{"--bogus-e2e"}, args: []string{"echo", "ran"}, noDashes: true, wantCode: 125, errRE: `^srt: .*bogus-e2e.*\n$`},
		{name: "no-command", wantCode: 125, noDashes: true, errRE: `^srt: .*command.*\n$`},
		{name: "no-command-after-dashes", wantCode: 125, errRE: `^srt: .*command.*\n$`},
		{name: "empty-command", args: []string{""}, wantCode: 125, errRE: `^srt: .*\n$`},
		// Seed 003's first examples: one argument holding a command line.
		{name: "one-string-command-line", args: []string{"echo one | tr o O; echo $((1+1))"}, wantOut: "One\n2\n"},
		{name: "one-string-bashrc-refused", args: []string{`echo "malicious" >> .bashrc || echo refused`}, wantOut: "refused\n", errRE: `\.bashrc`},
		{name: "one-string-not-found", args: []string{"no-such-e2e arg"}, wantCode: 127, errRE: `no-such-e2e`},
	}
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				dir := u.workDir(t)
				out, errOut, code := srtRun{u: u, dir: dir, settings: writeSettings, pre: tc.pre, args: tc.args, noDashes: tc.noDashes}.run(t)
				errOut = withoutReport(errOut)
				if code != tc.wantCode {
					t.Errorf("exit status %d, want %d; stderr: %s", code, tc.wantCode, errOut)
				}
				switch {
				case tc.outRE != "":
					if !regexp.MustCompile(tc.outRE).MatchString(out) {
						t.Errorf("stdout %q does not match %q", out, tc.outRE)
					}
				case out != tc.wantOut:
					t.Errorf("stdout %q, want %q", out, tc.wantOut)
				}
				switch {
				case tc.errRE == "" && errOut != "":
					t.Errorf("stderr %q, want empty", errOut)
				case tc.errRE != "" && !regexp.MustCompile(tc.errRE).MatchString(errOut):
					t.Errorf("stderr %q does not match %q", errOut, tc.errRE)
				}
			})
		}
	})
}

// TestSettingsErrors checks that every bad settings file makes srt fail
// closed: status 125, one "srt: " line naming the problem, and the command
// never runs (it would create a marker file).
func TestSettingsErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		settings string // written to bad.json; "-" means do not create it
		errRE    string
	}{
		{"missing-file", "-", `bad\.json.*does not exist`},
		{"empty-file", "", `bad\.json.*empty`},
		{"whitespace-only", " \n\t\n", `bad\.json.*empty`},
		{"invalid-json", "{\n  \"filesystem\": {\n    \"allowWrite\": [\".\",}\n}", `bad\.json:3:\d+: .*invalid JSON`},
		{"invalid-json-truncated", `{"filesystem":`, `bad\.json:1:\d+`},
		{"schema-empty-path", `{"filesystem":{"allowWrite":[".","b",""]}}`, `bad\.json:1:\d+: filesystem\.allowWrite\[2\]: path cannot be empty`},
		{"schema-wrong-type", `{"filesystem":{"denyRead":"~/.ssh"}}`, `filesystem\.denyRead`},
		{"schema-depth-out-of-range", `{"mandatoryDenySearchDepth":11}`, `mandatoryDenySearchDepth`},
		{"unknown-key-typo", `{"filesytem":{"allowWrite":["."]}}`, `"filesytem".*did you mean "filesystem"`},
		{"unknown-nested-key-typo", `{"filesystem":{"alowWrite":["."]}}`, `alowWrite.*allowWrite`},
		{"unsupported-filter-request", `{"network":{"filterRequest":{}}}`, `network\.filterRequest.*not supported`},
		{"tls-terminate-not-object", `{"network":{"tlsTerminate":true}}`, `network\.tlsTerminate: expected an object`},
	}
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				dir := u.workDir(t)
				file := filepath.Join(dir, "bad.json")
				if tc.settings != "-" {
					u.write(t, file, tc.settings)
				}
				before := snapshot(t, dir)
				out, errOut, code := srtRun{u: u, dir: dir, pre: []string{"-s", file}, args: []string{"sh", "-c", "touch marker; echo ran"}}.run(t)
				if code != 125 {
					t.Errorf("exit status %d, want 125; stderr: %s", code, errOut)
				}
				if out != "" {
					t.Errorf("stdout %q: the command ran", out)
				}
				if !strings.HasPrefix(errOut, "srt: ") || strings.Count(errOut, "\n") != 1 || !strings.HasSuffix(errOut, "\n") {
					t.Errorf("stderr %q is not one line starting with \"srt: \"", errOut)
				}
				if !regexp.MustCompile(tc.errRE).MatchString(errOut) {
					t.Errorf("stderr %q does not match %q", errOut, tc.errRE)
				}
				assertUnchanged(t, dir, before)
			})
		}
	})
}

// TestIgnoredKeys checks that the reference's helper keys are accepted
// (and named in the debug output), not refused.
func TestIgnoredKeys(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		dir := u.workDir(t)
		out, errOut, code := srtRun{u: u, dir: dir, settings: `{"ripgrep":{"command":"rg"},"seccomp":{},"socatPath":"/x"}`, pre: []string{"-d"}, args: []string{"echo", "ok"}}.run(t)
		if code != 0 || out != "ok\n" {
			t.Fatalf("status %d stdout %q stderr %s", code, out, errOut)
		}
		if !strings.Contains(errOut, "ripgrep") {
			t.Errorf("debug output does not name the ignored key ripgrep: %s", errOut)
		}
	})
}

// TestDefaultSettings checks that a missing default settings file means
// the built-in defaults: the command runs, reads work, writes are refused.
func TestDefaultSettings(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		home := u.workDir(t) // no .srt-settings.json in it
		dir := u.workDir(t)
		u.write(t, filepath.Join(dir, "existing"), "old\n")
		before, beforeHome := snapshot(t, dir), snapshot(t, home)
		out, errOut, code := srtRun{u: u, dir: dir, env: []string{"HOME=" + home}, args: []string{"sh", "-c",
			`cat existing; echo new > created; echo $?; echo new > existing; echo $?; touch "$HOME/h"; echo $?`}}.run(t)
		if code != 0 {
			t.Errorf("exit status %d, want 0 (the last echo); stderr: %s", code, errOut)
		}
		if out != "old\n2\n2\n1\n" {
			t.Errorf("stdout %q, want %q", out, "old\n2\n2\n1\n")
		}
		if strings.Count(errOut, errEROFS) != 3 {
			t.Errorf("want three %q errors, stderr: %s", errEROFS, errOut)
		}
		assertUnchanged(t, dir, before)
		assertUnchanged(t, home, beforeHome)
	})
}

// TestDefaultSettingsFile checks that ~/.srt-settings.json is read when
// there is no -s.
func TestDefaultSettingsFile(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		home, dir := u.workDir(t), u.workDir(t)
		u.write(t, filepath.Join(home, ".srt-settings.json"), `{"filesystem":{"allowWrite":["`+dir+`"]}}`)
		_, errOut, code := srtRun{u: u, dir: dir, env: []string{"HOME=" + home}, args: []string{"touch", "made"}}.run(t)
		if code != 0 {
			t.Fatalf("status %d: %s", code, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, "made")); err != nil {
			t.Errorf("the default settings file's allowWrite was not applied: %v", err)
		}
		// A broken default file is an error too, never the defaults.
		u.write(t, filepath.Join(home, ".srt-settings.json"), `{`)
		_, errOut, code = srtRun{u: u, dir: dir, env: []string{"HOME=" + home}, args: []string{"touch", "made2"}}.run(t)
		if code != 125 || !strings.HasPrefix(errOut, "srt: ") {
			t.Errorf("broken default settings: status %d stderr %q, want 125", code, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, "made2")); err == nil {
			t.Errorf("the command ran with a broken default settings file")
		}
	})
}

// TestDebugOnStderr checks that debug lines never reach stdout.
func TestDebugOnStderr(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		for _, tc := range []struct {
			name string
			pre  []string
			env  []string
		}{
			{"flag-d", []string{"-d"}, nil},
			{"flag-debug", []string{"--debug"}, nil},
			{"env-SRT_DEBUG", nil, []string{"SRT_DEBUG=1"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				dir := u.workDir(t)
				out, errOut, code := srtRun{u: u, dir: dir, settings: writeSettings, pre: tc.pre, env: tc.env, args: []string{"echo", "hi"}}.run(t)
				if code != 0 || out != "hi\n" {
					t.Errorf("status %d stdout %q, want 0 and exactly \"hi\\n\"", code, out)
				}
				if errOut == "" {
					t.Errorf("no debug output on stderr")
				}
			})
		}
	})
}

var sleepSeq atomic.Int64

// uniqueSleep returns a sleep duration argument no other process has, so
// pgrep finds exactly this test's sleep.
func uniqueSleep() string {
	return fmt.Sprintf("%d.%d%d", 30+sleepSeq.Add(1), os.Getpid()%1000, time.Now().UnixNano()%1000)
}

// TestSignals checks that SIGTERM, SIGINT, SIGHUP and SIGQUIT sent to srt
// reach the command, that srt then exits with 128+N promptly, and that
// nothing of the sandbox is left.
func TestSignals(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		for _, tc := range []struct {
			sig  syscall.Signal
			want int
		}{
			{syscall.SIGTERM, 143},
			{syscall.SIGINT, 130},
			{syscall.SIGHUP, 129},
			{syscall.SIGQUIT, 131},
		} {
			t.Run(tc.sig.String(), func(t *testing.T) {
				t.Parallel()
				dir := u.workDir(t)
				arg := uniqueSleep()
				r := srtRun{u: u, dir: dir, settings: writeSettings, args: []string{"sleep", arg}}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				cmd := u.command(ctx, dir, nil, r.argv(t)...)
				before := snapshot(t, dir)
				var errOut bytes.Buffer
				cmd.Stderr = &errOut
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				if !waitFor("^sleep "+arg+"$", 10*time.Second) {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("the sandboxed sleep never appeared; stderr: %s", errOut.String())
				}
				sent := time.Now()
				cmd.Process.Signal(tc.sig)
				err := cmd.Wait()
				if d := time.Since(sent); d > 3*time.Second {
					t.Errorf("srt took %v to exit after %v", d, tc.sig)
				}
				if code := exitCode(err); code != tc.want {
					t.Errorf("exit status %d, want %d; stderr: %s", code, tc.want, errOut.String())
				}
				if !waitGone("^sleep "+arg+"$", 2*time.Second) {
					t.Errorf("the sandboxed sleep survived srt")
				}
				waitUnchanged(t, dir, before, 3*time.Second)
			})
		}
	})
}

// waitFor waits up to d for a process matching pattern.
func waitFor(pattern string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for !pgrep(pattern) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// TestSIGKILL checks that when srt itself is killed with SIGKILL, the
// sandbox dies with it and no placeholder of a missing protected path
// (there are many with allowWrite ".") is left in the work directory.
func TestSIGKILL(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		dir := u.workDir(t)
		u.mkdir(t, filepath.Join(dir, ".git"))
		u.write(t, filepath.Join(dir, "a", ".bashrc"), "keep\n")
		arg := uniqueSleep()
		r := srtRun{u: u, dir: dir, settings: writeSettings, args: []string{"sh", "-c", "sleep " + arg + "; echo after"}}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := u.command(ctx, dir, nil, r.argv(t)...)
		before := snapshot(t, dir)
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if !waitFor("^sleep "+arg+"$", 10*time.Second) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the sandboxed sleep never appeared; stderr: %s", errOut.String())
		}
		// While it runs, the placeholders exist on the host.
		if _, err := os.Lstat(filepath.Join(dir, ".bashrc")); err != nil {
			t.Logf("no placeholder for .bashrc while running (%v); the test proves less", err)
		}
		cmd.Process.Kill()
		cmd.Wait()
		if !waitGone("^sleep "+arg+"$", 2*time.Second) {
			t.Errorf("the sandboxed sleep survived srt's SIGKILL by more than 2s")
		}
		waitUnchanged(t, dir, before, 3*time.Second)
	})
}

// TestStdin checks that stdin passes through.
func TestStdin(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		dir := u.workDir(t)
		data := "data\nline two\n" + strings.Repeat("x", 200000) + "\n"
		out, errOut, code := srtRun{u: u, dir: dir, settings: writeSettings, stdin: data, args: []string{"cat"}}.run(t)
		if code != 0 || out != data {
			t.Errorf("status %d, stdout of %d bytes (want %d); stderr: %s", code, len(out), len(data), errOut)
		}
	})
}

// TestPIDNamespace checks that the command sees only its own processes:
// no bwrap, no host process, and that PID 1's command line carries no
// policy.
func TestPIDNamespace(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		dir := u.workDir(t)
		out, errOut, code := sh(t, u, dir, writeSettings, `
for p in /proc/[0-9]*; do echo "$(basename $p) $(cat $p/comm 2>/dev/null)"; done
echo ---
tr '\0' ' ' < /proc/1/cmdline; echo
echo ---
cat /proc/1/environ >/dev/null 2>&1 && echo environ-readable || echo environ-refused`)
		if code != 0 {
			t.Fatalf("status %d: %s", code, errOut)
		}
		parts := strings.Split(out, "---\n")
		if len(parts) != 3 {
			t.Fatalf("unexpected output %q", out)
		}
		procs := strings.Split(strings.TrimSpace(parts[0]), "\n")
		if len(procs) > 5 {
			t.Errorf("%d processes visible, want only the command's few:\n%s", len(procs), parts[0])
		}
		for _, p := range procs {
			if strings.Contains(p, "bwrap") {
				t.Errorf("bwrap is visible inside: %s", p)
			}
		}
		if !strings.HasPrefix(procs[0], "1 ") {
			t.Errorf("no PID 1 in the sandbox: %s", parts[0])
		}
		if hasAny(parts[1], settingsName, "allowWrite", dir) {
			t.Errorf("PID 1's command line shows the settings: %q", parts[1])
		}
		if strings.TrimSpace(parts[2]) != "environ-refused" {
			t.Errorf("PID 1's environ is readable by the command")
		}
	})
}

// TestBackgroundJobsDie checks that what the command leaves running dies
// with it.
func TestBackgroundJobsDie(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		dir := u.workDir(t)
		arg := uniqueSleep()
		_, errOut, code := sh(t, u, dir, writeSettings, `(sleep 1; touch marker) & (sleep `+arg+`) & (trap "" HUP TERM; sleep `+arg+`1) & exit 0`)
		if code != 0 {
			t.Fatalf("status %d: %s", code, errOut)
		}
		if !waitGone("^sleep "+arg+"$", 2*time.Second) {
			t.Errorf("a background job outlived the command")
		}
		time.Sleep(1500 * time.Millisecond)
		if _, err := os.Lstat(filepath.Join(dir, "marker")); err == nil {
			t.Errorf("a background job ran after the command exited (marker created)")
		}
	})
}

// TestEnvironment checks SANDBOX_RUNTIME and the private TMPDIR: it
// exists, is writable and empty in each run, and the host never sees what
// is written there.
func TestEnvironment(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		dir, callerTmp := u.workDir(t), u.workDir(t)
		script := `echo "rt=$SANDBOX_RUNTIME"; echo "tmp=$TMPDIR"; echo "inherited=$E2E_VAR"
test -d "$TMPDIR" && test -w "$TMPDIR" && echo writable
echo "entries=$(ls -A "$TMPDIR" | wc -l)"
echo secret > "$TMPDIR/e2e-secret" && echo wrote`
		run := func() (tmp string) {
			out, errOut, code := srtRun{u: u, dir: dir, settings: writeSettings, env: []string{"E2E_VAR=v 1", "TMPDIR=" + callerTmp}, args: []string{"sh", "-c", script}}.run(t)
			if code != 0 {
				t.Fatalf("status %d: %s", code, errOut)
			}
			for _, want := range []string{"rt=1\n", "inherited=v 1\n", "writable\n", "entries=0\n", "wrote\n"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			_, tmp, _ = strings.Cut(out, "tmp=")
			tmp, _, _ = strings.Cut(tmp, "\n")
			if !filepath.IsAbs(tmp) || tmp == callerTmp {
				t.Errorf("TMPDIR=%q, want srt's own absolute directory", tmp)
			}
			return tmp
		}
		tmp := run()
		if _, err := os.Lstat(filepath.Join(tmp, "e2e-secret")); err == nil {
			t.Errorf("the host sees %s/e2e-secret", tmp)
		}
		run() // entries=0 again: the second run does not see the first's file
	})
}

// TestEarlySignal sends SIGTERM to srt while the sandbox is still
// starting: srt must still exit 143 (or 125 before the command runs), and
// nothing of the sandbox may outlive it.
func TestEarlySignal(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		for i := range 12 {
			dir := u.workDir(t)
			arg := uniqueSleep()
			r := srtRun{u: u, dir: dir, settings: writeSettings, args: []string{"sleep", arg}}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			cmd := u.command(ctx, dir, nil, r.argv(t)...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Duration(i*3) * time.Millisecond)
			cmd.Process.Signal(syscall.SIGTERM)
			code := exitCode(cmd.Wait())
			cancel()
			if code != 143 && code != 125 {
				t.Errorf("SIGTERM after %dms: exit status %d, want 143 (or 125)", i*3, code)
			}
			if !waitGone("^sleep "+arg+"$", 2*time.Second) {
				t.Errorf("SIGTERM after %dms: the sandboxed command outlived srt", i*3)
				killOwn("^sleep " + arg + "$")
			}
		}
	})
}

// killOwn kills, by PID, the processes matching a pattern unique to this
// test run.
func killOwn(pattern string) {
	out, _ := exec.Command("pgrep", "-f", pattern).Output()
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// TestCheck: srt --check lists each guarantee with ok or MISSING and exits
// 0 only when every one holds (this test machine has them all).
func TestCheck(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		out, errOut, code := srtRun{u: u, dir: dir, pre: []string{"--check"}, noDashes: true}.run(t)
		for _, name := range []string{"bubblewrap", "user namespace", "filesystem policy", "network isolation", "seccomp filter", "no_new_privs", "creation-time name rules"} {
			if !regexp.MustCompile(`(?m)^ok\s+` + regexp.QuoteMeta(name)).MatchString(out) {
				t.Errorf("--check: no ok line for %q", name)
			}
		}
		if code != 0 || t.Failed() {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
	})
}
