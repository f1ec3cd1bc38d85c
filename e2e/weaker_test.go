package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// weakerArgv runs srt with srtArgs in proj where user namespaces are
// refused: inside a bubblewrap sandbox made with --disable-userns, so that
// enableWeakerNestedSandbox falls back to Landlock. The work directories
// are writable there, /tmp is private, and descriptors pass through.
func weakerArgv(proj string, srtArgs ...string) []string {
	return append([]string{"bwrap", "--unshare-user", "--disable-userns", "--die-with-parent",
		"--ro-bind", "/", "/", "--tmpfs", "/tmp", "--bind", baseDir, baseDir,
		"--ro-bind", filepath.Dir(srtBin), filepath.Dir(srtBin), "--dev", "/dev", "--proc", "/proc",
		"--chdir", proj, srtBin}, srtArgs...)
}

// TestWeakerSandbox runs srt where user namespaces are refused (inside a
// bubblewrap sandbox made with --disable-userns) with
// enableWeakerNestedSandbox: the command must run under Landlock and
// seccomp, srt must list the missing guarantees, and the rules that can
// still be enforced must hold.
func TestWeakerSandbox(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		proj := filepath.Join(dir, "proj")
		u.mkdir(t, filepath.Join(proj, "sub"))
		u.write(t, filepath.Join(dir, "secret.txt"), "secret")
		u.write(t, filepath.Join(proj, ".bashrc"), "original")
		settings := `{"enableWeakerNestedSandbox":true,
			"filesystem":{"allowWrite":["."],"denyRead":["` + filepath.Join(dir, "secret.txt") + `"]}}`
		u.write(t, filepath.Join(dir, "s.json"), settings)
		script := `echo data > sub/new && echo wrote-sub
			echo x > ` + filepath.Join(dir, "outside") + ` 2>/dev/null || echo outside-refused
			cat ../secret.txt 2>/dev/null || echo secret-refused
			echo evil >> .bashrc 2>/dev/null || echo bashrc-refused
			grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status
			exit 7`
		cmd := u.command(t.Context(), proj, nil, weakerArgv(proj, "-s", filepath.Join(dir, "s.json"), "--", "sh", "-c", script)...)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		if code := exitCode(err); code != 7 {
			t.Fatalf("exit %d, want 7 (the command's); stdout %q stderr %q", code, out.String(), errOut.String())
		}
		for _, want := range []string{"wrote-sub", "outside-refused", "secret-refused", "bashrc-refused", "CapEff:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("stdout lacks %q:\n%s", want, out.String())
			}
		}
		for _, want := range []string{"Missing guarantees", "no PID namespace", "Landlock ABI"} {
			if !strings.Contains(errOut.String(), want) {
				t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
			}
		}
		if b, _ := os.ReadFile(filepath.Join(proj, ".bashrc")); string(b) != "original" {
			t.Errorf(".bashrc changed on the host: %q", b)
		}
		if _, err := os.Stat(filepath.Join(dir, "outside")); err == nil {
			t.Errorf("a file was created outside the write roots")
		}
	})
}

// TestWeakerPassFD: in the Landlock sandbox, --pass-fd N hands the
// command descriptor N at the same number, which it reads and writes
// though the file it names is outside the write roots; without the
// option the command holds only 0, 1 and 2.
func TestWeakerPassFD(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		proj := filepath.Join(dir, "proj")
		u.mkdir(t, proj)
		shared := filepath.Join(dir, "shared.txt")
		u.write(t, filepath.Join(dir, "s.json"), `{"enableWeakerNestedSandbox":true,"filesystem":{"allowWrite":["."]}}`)
		script := `echo by-path >> ` + shared + ` 2>/dev/null && echo PATH-WRITTEN
			{ read line <&3 && echo "read: $line"; } 2>/dev/null || echo no-fd-3
			{ echo from-the-command >&3 && echo wrote-fd-3; } 2>/dev/null
			echo fds:; ls /proc/$$/fd`
		run := func(pre ...string) (stdout string, fds []string) {
			t.Helper()
			u.write(t, shared, "from-the-test\n")
			f, err := os.OpenFile(shared, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			args := append(append([]string{"-s", filepath.Join(dir, "s.json")}, pre...), "--", "sh", "-c", script)
			cmd := u.command(t.Context(), proj, nil, weakerArgv(proj, args...)...)
			cmd.ExtraFiles = []*os.File{f} // fd 3 in srt
			var out, errOut strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Run(); err != nil {
				t.Fatalf("srt %q: %v; stdout %q stderr %q", pre, err, out.String(), errOut.String())
			}
			if !strings.Contains(errOut.String(), "Missing guarantees") {
				t.Fatalf("not the Landlock sandbox; stderr %q", errOut.String())
			}
			_, list, _ := strings.Cut(out.String(), "fds:\n")
			fds = strings.Fields(list)
			slices.Sort(fds)
			return out.String(), fds
		}

		out, fds := run()
		if !strings.Contains(out, "no-fd-3") || strings.Contains(out, "wrote-fd-3") || !slices.Equal(fds, []string{"0", "1", "2"}) {
			t.Errorf("without --pass-fd: stdout %q, descriptors %q; want no fd 3 and only 0 1 2", out, fds)
		}
		if b, _ := os.ReadFile(shared); string(b) != "from-the-test\n" {
			t.Errorf("without --pass-fd the file changed: %q", b)
		}

		out, fds = run("--pass-fd", "3")
		if !strings.Contains(out, "read: from-the-test") || !strings.Contains(out, "wrote-fd-3") || !slices.Equal(fds, []string{"0", "1", "2", "3"}) {
			t.Errorf("with --pass-fd 3: stdout %q, descriptors %q; want fd 3 read and written, and 0 1 2 3", out, fds)
		}
		if strings.Contains(out, "PATH-WRITTEN") {
			t.Errorf("the file outside the write roots was written by name: %q", out)
		}
		if b, _ := os.ReadFile(shared); string(b) != "from-the-test\nfrom-the-command\n" {
			t.Errorf("with --pass-fd 3 the file holds %q, want the test's line and the command's", b)
		}
	})
}

// TestWeakerViolations: in the Landlock sandbox, a connection the proxies
// refuse and a system call the seccomp filter refuses are recorded in the
// --violations file, attributed as in the full sandbox, and summarised.
func TestWeakerViolations(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		proj := filepath.Join(dir, "proj")
		u.mkdir(t, proj)
		u.write(t, filepath.Join(dir, "s.json"), `{"enableWeakerNestedSandbox":true,
			"filesystem":{"allowWrite":["."]},"network":{"allowedDomains":["allowed.example"]}}`)
		vfile := filepath.Join(dir, "v.jsonl")
		script := `curl -sf -o /dev/null http://evil.example/ || echo curl-refused
			unshare -U true 2>/dev/null || echo unshare-refused`
		cmd := u.command(t.Context(), proj, nil, weakerArgv(proj, "-s", filepath.Join(dir, "s.json"),
			"--violations", vfile, "--command-id", "weak-id", "--", "sh", "-c", script)...)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("srt: %v; stdout %q stderr %q", err, out.String(), errOut.String())
		}
		for _, want := range []string{"curl-refused", "unshare-refused"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("stdout lacks %q: %q", want, out.String())
			}
		}
		if !strings.Contains(errOut.String(), "Missing guarantees") {
			t.Fatalf("not the Landlock sandbox; stderr %q", errOut.String())
		}
		vs := readViolations(t, vfile)
		for _, tc := range []struct{ action, target, reason, exe string }{
			{"network-outbound", "evil.example:80", "host is not on the allow list", ""},
			{"syscall", "unshare", "seccomp: EPERM", "unshare"},
		} {
			got := find(vs, tc.action, tc.target)
			if len(got) == 0 {
				t.Errorf("no %s %s in %+v\nstderr: %s", tc.action, tc.target, vs, errOut.String())
				continue
			}
			v := got[0]
			if v.Key != "weak-id" || v.Command != "sh -c "+script || v.Reason != tc.reason {
				t.Errorf("key %q command %q reason %q; want %q, the command, %q", v.Key, v.Command, v.Reason, "weak-id", tc.reason)
			}
			if tc.exe != "" && (v.PID <= 1 || filepath.Base(v.Exe) != tc.exe) {
				t.Errorf("pid %d exe %q, want a pid > 1 and %s", v.PID, v.Exe, tc.exe)
			}
			if !strings.Contains(errOut.String(), "blocked by the sandbox:") || !strings.Contains(errOut.String(), v.Raw) {
				t.Errorf("no summary naming %q on stderr: %s", v.Raw, errOut.String())
			}
		}
	})
}
