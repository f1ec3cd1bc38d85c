package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
		argv := []string{"bwrap", "--unshare-user", "--disable-userns", "--die-with-parent",
			"--ro-bind", "/", "/", "--tmpfs", "/tmp", "--bind", baseDir, baseDir,
			"--ro-bind", filepath.Dir(srtBin), filepath.Dir(srtBin), "--dev", "/dev", "--proc", "/proc",
			"--chdir", proj, srtBin, "-s", filepath.Join(dir, "s.json"), "--", "sh", "-c", script}
		cmd := u.command(t.Context(), proj, nil, argv...)
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
