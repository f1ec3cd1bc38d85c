package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// secretValue is a fresh value no output could hold by chance.
func secretValue(t *testing.T, prefix string) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + hex.EncodeToString(b)
}

// credEnvSettings are settings with TLS termination, the working directory
// as write root and credentials cred.
func credEnvSettings(cred string) string {
	return `{"network": {"allowedDomains": ["api.example.com"], "tlsTerminate": {}}, "filesystem": {"allowWrite": ["."]}, "credentials": ` + cred + `}`
}

// TestCredentialsEnvAndFiles runs srt with masked and denied variables
// and files: nothing the sandbox can read (its environment, PID 1's,
// the files) shows a real value, and a masked file is a read-only copy
// whose mount can be neither removed nor moved.
func TestCredentialsEnvAndFiles(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		dir := u.workDir(t)
		token, denied, inFile, inDeny := secretValue(t, "ghp_"), secretValue(t, "deny_"), secretValue(t, "file_"), secretValue(t, "dfile_")
		u.write(t, filepath.Join(dir, "sub/creds.txt"), "user=bob\ntoken="+inFile+"\n")
		u.write(t, filepath.Join(dir, "deny.txt"), inDeny)
		os.Chmod(filepath.Join(dir, "sub/creds.txt"), 0o640)
		settings := credEnvSettings(fmt.Sprintf(`{"envVars": [{"name": "SRT_E2E_TOKEN", "mode": "mask"}, {"name": "SRT_E2E_DENIED", "mode": "deny"}],
		  "files": [{"path": %q, "mode": "mask", "extract": "token=(\\S+)"}, {"path": %q, "mode": "deny"}]}`,
			filepath.Join(dir, "sub/creds.txt"), filepath.Join(dir, "deny.txt")))
		script := `env; echo ---; cat /proc/self/environ | tr '\0' '\n'; cat /proc/1/environ | tr '\0' '\n'; echo ---
cat sub/creds.txt; cat deny.txt; echo ---
stat -c 'mode %a' sub/creds.txt
echo x >>sub/creds.txt && echo WROTE
rm -f sub/creds.txt && echo REMOVED
mv sub/creds.txt sub/moved 2>/dev/null && echo MOVED
mv sub sub2 2>/dev/null && echo MOVED-PARENT
umount sub/creds.txt 2>/dev/null && echo UNMOUNTED
cat sub/creds.txt`
		out, errOut, _ := srtRun{u: u, dir: dir, settings: settings, args: []string{"sh", "-c", script},
			env: []string{"SRT_E2E_TOKEN=" + token, "SRT_E2E_DENIED=" + denied, "SRT_E2E_COPY=Bearer " + token}}.run(t)
		for _, real := range []string{token, denied, inFile, inDeny} {
			if strings.Contains(out+errOut, real) {
				t.Errorf("a real value (%.8s...) is readable inside the sandbox:\n%s\nstderr: %s", real, out, errOut)
			}
		}
		shown := regexp.MustCompile(`(?m)^SRT_E2E_TOKEN=(.*)$`).FindStringSubmatch(out)
		if shown == nil || len(shown[1]) != len(token) {
			t.Errorf("SRT_E2E_TOKEN is not shown as a sentinel of its length:\n%s", out)
		}
		if strings.Contains(out, "SRT_E2E_DENIED") {
			t.Errorf("the denied variable is set inside:\n%s", out)
		}
		if shown != nil && !strings.Contains(out, "SRT_E2E_COPY=Bearer "+shown[1]) {
			t.Errorf("a variable holding the real value does not show the sentinel:\n%s", out)
		}
		if strings.Count(out, "user=bob\ntoken=") != 2 {
			t.Errorf("the masked file is not shown (twice, before and after the attempts) with its other content:\n%s", out)
		}
		if !strings.Contains(out, "mode 440") {
			t.Errorf("the masked copy does not show the file's mode without write bits:\n%s", out)
		}
		for _, bad := range []string{"WROTE", "REMOVED", "MOVED", "UNMOUNTED"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s: the masked file could be changed inside:\n%s", bad, out)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "sub/creds.txt")); string(b) != "user=bob\ntoken="+inFile+"\n" {
			t.Errorf("the host's file changed: %q", b)
		}

		// A later run after the credential file's parent became a link
		// (as a run could leave it, were the rename not refused) is
		// refused: the mask would be spelled through a planted link.
		if err := os.Rename(filepath.Join(dir, "sub"), filepath.Join(dir, "sub2")); err != nil {
			t.Fatal(err)
		}
		u.write(t, filepath.Join(dir, "decoy/creds.txt"), "token=decoy\n")
		u.write(t, filepath.Join(dir, "sub"), "->decoy")
		out, errOut, code := srtRun{u: u, dir: dir, settings: settings, args: []string{"sh", "-c", "echo ran; cat sub2/creds.txt"},
			env: []string{"SRT_E2E_TOKEN=" + token}}.run(t)
		if code != 125 || strings.Contains(out, "ran") || !strings.Contains(errOut, "credentials.files[0]") || strings.Contains(out+errOut, inFile) {
			t.Errorf("a run through a planted parent link: status %d stdout %q stderr %q; want 125 naming credentials.files[0]", code, out, errOut)
		}
	})
}

// TestCredentialsBadInput checks that a credentials mistake stops srt
// before the command runs, with one line naming the key.
func TestCredentialsBadInput(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, settings, key string }{
		{"extract-without-group", credEnvSettings(`{"envVars": [{"name": "SRT_E2E_TOKEN", "mode": "mask", "extract": "ghp_.*"}]}`), `credentials\.envVars\[0\]\.extract`},
		{"unknown-key", credEnvSettings(`{"envVars": [{"name": "SRT_E2E_TOKEN", "mod": "mask"}]}`), `credentials\.envVars\[0\].*did you mean "mode"`},
		{"unreachable-inject-host", credEnvSettings(`{"envVars": [{"name": "SRT_E2E_TOKEN", "mode": "mask", "injectHosts": ["evil.example"]}]}`), `credentials\.envVars\[0\]\.injectHosts\[0\].*not reachable`},
		{"no-tls-terminate", `{"network": {"allowedDomains": ["api.example.com"]}, "credentials": {"envVars": [{"name": "SRT_E2E_TOKEN", "mode": "mask"}]}}`, `credentials\.envVars\[0\]\.mode.*network\.tlsTerminate`},
		{"files-with-filesystem-disabled", `{"filesystem": {"disabled": true}, "credentials": {"files": [{"path": "/etc/hostname", "mode": "deny"}]}}`, `credentials\.files\[0\]`},
		{"no-match-error", credEnvSettings(`{"envVars": [{"name": "SRT_E2E_TOKEN", "mode": "mask", "extract": "key=(\\S+)", "onExtractNoMatch": "error"}]}`), `credentials\.envVars\[0\]\.extract.*nothing to mask`},
	}
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				dir := u.workDir(t)
				token := secretValue(t, "ghp_")
				out, errOut, code := srtRun{u: u, dir: dir, settings: tc.settings, args: []string{"sh", "-c", "touch marker; echo ran"},
					env: []string{"SRT_E2E_TOKEN=" + token}}.run(t)
				if code != 125 || out != "" {
					t.Errorf("status %d stdout %q, want 125 and nothing run; stderr: %s", code, out, errOut)
				}
				if !strings.HasPrefix(errOut, "srt: ") || strings.Count(errOut, "\n") != 1 {
					t.Errorf("stderr %q is not one line starting with \"srt: \"", errOut)
				}
				if !regexp.MustCompile(tc.key).MatchString(errOut) {
					t.Errorf("stderr %q does not match %q", errOut, tc.key)
				}
				if strings.Contains(errOut, token) {
					t.Errorf("the error shows the real value")
				}
				if _, err := os.Stat(filepath.Join(dir, "marker")); err == nil {
					t.Errorf("the command ran")
				}
			})
		}
	})
}
