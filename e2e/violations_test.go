package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The violation tests (issue 5): each source — the network proxies, the
// seccomp filter, refused filesystem writes and reads — is triggered by a
// real command in a real sandbox, as root and as a user, and the record
// srt writes with --violations is checked exactly.

// violationRecord is one line of a --violations file.
type violationRecord struct {
	Time    string `json:"time"`
	Action  string `json:"action"`
	Target  string `json:"target"`
	Reason  string `json:"reason"`
	PID     int    `json:"pid"`
	Exe     string `json:"exe"`
	Command string `json:"command"`
	Key     string `json:"key"`
	Raw     string `json:"raw"`
}

// readViolations parses a --violations file, failing on any line that is
// not one JSON object with exactly the documented keys.
func readViolations(t *testing.T, path string) []violationRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("violations file: %v", err)
	}
	defer f.Close()
	var out []violationRecord
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var keys map[string]any
		if err := json.Unmarshal(sc.Bytes(), &keys); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		for k := range keys {
			if !slices.Contains([]string{"time", "action", "target", "reason", "pid", "exe", "command", "key", "protocol", "rule", "raw"}, k) {
				t.Errorf("unexpected key %q in %s", k, sc.Text())
			}
		}
		var v violationRecord
		json.Unmarshal(sc.Bytes(), &v)
		out = append(out, v)
	}
	return out
}

// find returns the records with action and target.
func find(vs []violationRecord, action, target string) []violationRecord {
	var out []violationRecord
	for _, v := range vs {
		if v.Action == action && v.Target == target {
			out = append(out, v)
		}
	}
	return out
}

// TestViolations triggers each source once and checks action, target,
// reason, attribution and the process fields.
func TestViolations(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		u.mkdir(t, filepath.Join(dir, "w"))
		u.write(t, filepath.Join(dir, "w", "protected.txt"), "keep")
		u.write(t, filepath.Join(dir, "secret", "key"), "s3cret")
		settings := `{"filesystem":{"allowWrite":["./w"],"denyWrite":["./w/protected.txt"],"denyRead":["./secret"]},` +
			`"network":{"allowedDomains":["allowed.example"]}}`
		for _, tc := range []struct {
			name, script                string
			action, target, reason, exe string
		}{
			{"network", "curl -sf -o /dev/null http://evil.example/",
				"network-outbound", "evil.example:80", "host is not on the allow list", ""},
			{"seccomp", "unshare -U true",
				"syscall", "unshare", "seccomp: EPERM", "/usr/bin/unshare"},
			{"fs-write-outside", "touch " + dir + "/outside.txt",
				"file-write-create", dir + "/outside.txt", "outside the write roots", "/usr/bin/touch"},
			{"fs-write-denied", "echo x > " + dir + "/w/protected.txt",
				"file-write-data", dir + "/w/protected.txt", "filesystem.denyWrite[0]", "/usr/bin/dash"},
			{"fs-read-denied", "cat " + dir + "/secret/key",
				"file-read-data", dir + "/secret/key", "filesystem.denyRead[0]", "/usr/bin/cat"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				vfile := filepath.Join(dir, tc.name+".jsonl")
				id := "id-" + tc.name
				_, stderr, code := srtRun{u: u, dir: dir, settings: settings,
					pre:  []string{"--violations", vfile, "--command-id", id},
					args: []string{"sh", "-c", tc.script}}.run(t)
				if code == 0 {
					t.Errorf("the command succeeded; it should have been refused. stderr: %s", stderr)
				}
				vs := readViolations(t, vfile)
				got := find(vs, tc.action, tc.target)
				if len(got) == 0 {
					t.Fatalf("no %s %s in %+v\nstderr: %s", tc.action, tc.target, vs, stderr)
				}
				v := got[0]
				if v.Key != id || v.Command != "sh -c "+tc.script || v.Reason != tc.reason {
					t.Errorf("key %q command %q reason %q; want %q %q %q", v.Key, v.Command, v.Reason, id, "sh -c "+tc.script, tc.reason)
				}
				if want := "deny " + tc.action + " " + tc.target + " (" + tc.reason + ")"; v.Raw != want {
					t.Errorf("raw %q, want %q", v.Raw, want)
				}
				if tc.exe != "" && (v.PID <= 1 || filepath.Base(v.Exe) != filepath.Base(tc.exe)) {
					t.Errorf("pid %d exe %q, want a sandbox pid > 1 and %s", v.PID, v.Exe, tc.exe)
				}
				if !strings.Contains(stderr, "blocked by the sandbox:") || !strings.Contains(stderr, v.Raw) {
					t.Errorf("no summary naming %q on stderr: %s", v.Raw, stderr)
				}
			})
		}
	})
}

// TestViolationsCLI: the file's mode and appending, the summary on stderr
// only and --quiet, the exit status left alone, and exit 125 without
// running the command when the file cannot be written.
func TestViolationsCLI(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		vfile := filepath.Join(dir, "v.jsonl")
		run := func(pre ...string) (string, string, int) {
			return srtRun{u: u, dir: dir, settings: `{}`, pre: append([]string{"--violations", vfile}, pre...),
				args: []string{"sh", "-c", "touch /srt-e2e-nope 2>/dev/null; exit 3"}}.run(t)
		}
		stdout, stderr, code := run()
		if code != 3 {
			t.Errorf("exit status %d, want the command's 3", code)
		}
		if stdout != "" {
			t.Errorf("stdout %q, want nothing", stdout)
		}
		want := "srt: 1 action was blocked by the sandbox:\n  deny file-write-create /srt-e2e-nope (outside the write roots)\n"
		if stderr != want {
			t.Errorf("stderr %q, want %q", stderr, want)
		}
		fi, err := os.Stat(vfile)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("violations file: %v, mode %v, want 0600", err, fi.Mode())
		}
		_, stderr, code = run("--quiet")
		if code != 3 || stderr != "" {
			t.Errorf("--quiet: exit %d, stderr %q; want 3 and nothing", code, stderr)
		}
		vs := readViolations(t, vfile)
		if len(vs) != 2 || vs[0].Key == vs[1].Key {
			t.Errorf("want 2 appended records with distinct default keys, got %+v", vs)
		}
		for _, v := range vs {
			if len(v.Key) != 22 {
				t.Errorf("default key %q is not a 22-character random key", v.Key)
			}
		}

		_, stderr, code = srtRun{u: u, dir: dir, settings: `{}`, pre: []string{"--debug", "-q"},
			args: []string{"sh", "-c", "touch /srt-e2e-nope 2>/dev/null; true"}}.run(t)
		if code != 0 || !strings.Contains(stderr, "srt: blocked: deny file-write-create /srt-e2e-nope (outside the write roots)\n") {
			t.Errorf("--debug: exit %d, stderr %q; want each violation as it happens", code, stderr)
		}

		marker := filepath.Join(dir, "ran")
		_, stderr, code = srtRun{u: u, dir: dir, settings: `{"filesystem":{"allowWrite":["."]}}`,
			pre:  []string{"--violations", "/proc/srt-e2e/nope.jsonl"},
			args: []string{"touch", marker}}.run(t)
		if _, err := os.Stat(marker); code != 125 || err == nil || !strings.Contains(stderr, "--violations") {
			t.Errorf("unwritable --violations: exit %d, command ran: %v, stderr %q; want 125, not run", code, err == nil, stderr)
		}
	})
}

// TestViolationsIgnored: ignoreViolations hides a refusal from every
// report (a "*" entry, and a command entry for the matching command
// only), while the refusal itself stands.
func TestViolationsIgnored(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		settings := `{"ignoreViolations":{"*":["evil.example","socket(AF_UNIX)"],"unshare -U":["unshare"]}}`
		script := "curl -s -o /dev/null -w '%{http_code} ' http://evil.example/; unshare -U true || echo refused; touch /srt-e2e-nope 2>/dev/null; true"
		vfile := filepath.Join(dir, "v.jsonl")
		stdout, stderr, _ := srtRun{u: u, dir: dir, settings: settings, pre: []string{"--violations", vfile},
			args: []string{"sh", "-c", script}}.run(t)
		if strings.TrimSpace(stdout) != "403 refused" {
			t.Errorf("stdout %q: the refusals must stand", stdout)
		}
		var got []string
		for _, v := range readViolations(t, vfile) {
			got = append(got, v.Action+" "+v.Target)
		}
		if want := []string{"file-write-create /srt-e2e-nope"}; !slices.Equal(got, want) {
			t.Errorf("recorded %q, want only %q\nstderr: %s", got, want, stderr)
		}
	})
}
