package darwin

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

// The sample lines below are synthetic: written by hand from the format
// in srt-notes §5 (`log stream --style compact`, kernel "Sandbox:"
// messages ending with the rule's message), not recorded on a Mac. The
// first real run should replace them with recorded lines.
func TestParseLogLine(t *testing.T) {
	tag := "CMD64_" + base64.StdEncoding.EncodeToString([]byte("npm install")) + "_END_0011223344556677_SBX"
	other := "CMD64_" + base64.StdEncoding.EncodeToString([]byte("ls")) + "_END_8899aabbccddeeff_SBX"
	for _, c := range []struct {
		name, line     string
		ok             bool
		action, target string
		process        string
		pid            int
	}{
		{"file-write-create",
			"2025-01-15 10:23:45.123 E  kernel[0:1a2b] (Sandbox) Sandbox: touch(4242) deny(1) file-write-create /Users/me/.bashrc " + tag,
			true, "file-write-create", "/Users/me/.bashrc", "touch", 4242},
		{"file-read-data-with-space",
			"2025-01-15 10:23:46.001 E  kernel[0:1a2b] (Sandbox) Sandbox: cat(77) deny(1) file-read-data /Users/me/Library/Application Support/x " + tag,
			true, "file-read-data", "/Users/me/Library/Application Support/x", "cat", 77},
		{"network-outbound",
			"2025-01-15 10:23:47.500 Df kernel[0:1a2b] (Sandbox) Sandbox: node(901) deny(1) network-outbound 93.184.216.34:443 " + tag,
			true, "network-outbound", "93.184.216.34:443", "node", 901},
		{"mach-lookup",
			"2025-01-15 10:23:48.000 E  kernel[0:1a2b] (Sandbox) Sandbox: go(12) deny(1) mach-lookup com.apple.trustd.agent " + tag,
			true, "mach-lookup", "com.apple.trustd.agent", "go", 12},
		{"process-name-with-parens",
			"2025-01-15 10:23:49.000 E  kernel[0:1a2b] (Sandbox) Sandbox: Code Helper (Renderer)(5150) deny(2) file-write-unlink /Users/me/p/.git " + tag,
			true, "file-write-unlink", "/Users/me/p/.git", "Code Helper (Renderer)", 5150},
		{"no-target",
			"2025-01-15 10:23:50.000 E  kernel[0:1a2b] (Sandbox) Sandbox: sh(3) deny(1) pseudo-tty " + tag,
			true, "pseudo-tty", "", "sh", 3},
		{"other-session",
			"2025-01-15 10:23:51.000 E  kernel[0:1a2b] (Sandbox) Sandbox: ls(3) deny(1) file-read-data /x " + other,
			false, "", "", "", 0},
		{"noise-mdnsresponder",
			"2025-01-15 10:23:52.000 E  kernel[0:1a2b] (Sandbox) Sandbox: mDNSResponder(88) deny(1) network-outbound 1.1.1.1:53 " + tag,
			false, "", "", "", 0},
		{"header", "Filtering the log data using \"eventMessage ENDSWITH \\\"_END_0011223344556677_SBX\\\"\"", false, "", "", "", 0},
		{"allow-line", "2025-01-15 10:23:53.000 E  kernel[0:1a2b] (Sandbox) Sandbox: ls(3) allow file-read-data /x " + tag, false, "", "", "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, ok := ParseLogLine(c.line+"\n", tag)
			if ok != c.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, c.ok, v)
			}
			if !ok {
				return
			}
			if v.Action != c.action || v.Target != c.target || v.Process != c.process || v.PID != c.pid {
				t.Errorf("got %q %q %q %d", v.Action, v.Target, v.Process, v.PID)
			}
			if v.Command != "npm install" {
				t.Errorf("command %q", v.Command)
			}
			if v.Time.IsZero() || v.Time.Minute() != 23 {
				t.Errorf("time %v", v.Time)
			}
			if strings.HasSuffix(v.Raw, "\n") || !strings.HasPrefix(v.String(), "deny "+c.action) {
				t.Errorf("raw %q / string %q", v.Raw, v.String())
			}
		})
	}
}

func TestTag(t *testing.T) {
	long := strings.Repeat("é", 150)
	a, b := NewTag(long), NewTag(long)
	if a == b {
		t.Error("two tags for the same command are equal")
	}
	if !tagPattern.MatchString(a) {
		t.Errorf("tag %q outside its alphabet", a)
	}
	if got := decodeCommand(a); got != strings.Repeat("é", 100) {
		t.Errorf("decoded %q", got)
	}
	if s := TagSuffix(a); !strings.HasPrefix(s, "_END_") || !strings.HasSuffix(s, "_SBX") || len(s) != len("_END_")+16+len("_SBX") {
		t.Errorf("suffix %q", s)
	}
	if p := LogPredicate(a); p != `(eventMessage ENDSWITH "`+TagSuffix(a)+`")` {
		t.Errorf("predicate %s", p)
	}
}

func TestIgnored(t *testing.T) {
	v := Violation{Raw: "... deny(1) file-read-data /usr/bin/x ..."}
	rules := map[string][]string{"*": {"/System"}, "git push": {"/usr/bin"}}
	if Ignored(v, "ls", rules) {
		t.Error("ignored for a command the rule does not name")
	}
	if !Ignored(v, "git push origin", rules) {
		t.Error("not ignored for the named command")
	}
	_ = time.Now
}
