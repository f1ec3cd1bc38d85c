package darwin

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/srt-go/srt/sandbox/darwin/sbpl"
	"github.com/srt-go/srt/violation"
)

// kernelEvent is a `log stream --style ndjson` line as the kernel's
// Sandbox extension logs it. Its fields are those of events recorded on a
// Mac (Darwin 25, arm64) by a public sandbox-exec probe, whose shape the
// logEvent comment quotes: the reporter is the kernel (processID 0,
// /kernel), the offender only appears in eventMessage; the identifiers
// here are made up. The tagged messages
// (the deny's "with message" on a last line of its own) follow the
// reference monitor's reading of its `log stream` output; they were not
// recorded here, as no Mac was available.
func kernelEvent(msg string) string {
	m, err := json.Marshal(msg)
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf(kernelEventFormat, m)
}

// kernelEventFormat is one event of `log stream --style ndjson`, with
// the escaped slashes Apple's JSON writer puts in paths; %s is the
// message as a JSON string.
const kernelEventFormat = `{"traceID":123456789,"eventType":"logEvent","source":null,` +
	`"formatString":"%%s","activityIdentifier":0,"subsystem":"","category":"",` +
	`"threadID":75214711,"senderImageUUID":"B3D8F1A2-0C41-3A6E-9D1E-6F2A8C3B9E10",` +
	`"bootUUID":"7908F0D7-3E9B-4C61-A0B4-1D2E3F405162","processImagePath":"\/kernel",` +
	`"senderImagePath":"\/System\/Library\/Extensions\/Sandbox.kext\/Contents\/MacOS\/Sandbox",` +
	`"timestamp":"2026-09-05 23:01:34.988314-0500","machTimestamp":43149983861291,` +
	`"messageType":"Error","processImageUUID":"0E8B7C6D-5A4F-3E2D-1C0B-A9F8E7D6C5B4",` +
	`"processID":0,"senderProgramCounter":1234567,"parentActivityIdentifier":0,` +
	`"timezoneName":"","userID":0,"eventMessage":%s}`

// event is an ndjson line with the given fields only.
func event(fields map[string]any) string {
	b, err := json.Marshal(fields)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestParseLogLine(t *testing.T) {
	tag := "CMD64_" + base64.StdEncoding.EncodeToString([]byte("npm install")) + "_END_0011223344556677_SBX"
	// Another run of the same command: same command part, other random part.
	sameCommand := "CMD64_" + base64.StdEncoding.EncodeToString([]byte("npm install")) + "_END_8899aabbccddeeff_SBX"
	other := "CMD64_" + base64.StdEncoding.EncodeToString([]byte("ls")) + "_END_8899aabbccddeeff_SBX"
	type want struct {
		action, target, exe string
		pid                 int
	}
	for _, c := range []struct {
		name, line string
		want       *want // nil: not a violation of this run
	}{
		{"file-write-create",
			kernelEvent("Sandbox: touch(4242) deny(1) file-write-create /Users/me/.bashrc\n" + tag),
			&want{violation.FileWriteCreate, "/Users/me/.bashrc", "touch", 4242}},
		{"file-read-data, a path with spaces",
			kernelEvent("Sandbox: cat(96728) deny(1) file-read-data /Users/me/Library/Application Support/x\n" + tag),
			&want{violation.FileReadData, "/Users/me/Library/Application Support/x", "cat", 96728}},
		{"network-outbound",
			kernelEvent("Sandbox: node(901) deny(1) network-outbound 93.184.216.34:443\n" + tag),
			&want{violation.NetworkOutbound, "93.184.216.34:443", "node", 901}},
		{"network-outbound to a unix socket",
			kernelEvent("Sandbox: python3.12(77) deny(1) network-outbound /private/var/run/docker.sock\n" + tag),
			&want{violation.NetworkOutbound, "/private/var/run/docker.sock", "python3.12", 77}},
		{"mach-lookup",
			kernelEvent("Sandbox: go(12) deny(1) mach-lookup com.apple.trustd.agent\n" + tag),
			&want{"mach-lookup", "com.apple.trustd.agent", "go", 12}},
		{"file-write-unlink, process name with spaces and parentheses",
			kernelEvent("Sandbox: Code Helper (Renderer)(5150) deny(2) file-write-unlink /Users/me/p/.git\n" + tag),
			&want{violation.FileWriteUnlink, "/Users/me/p/.git", "Code Helper (Renderer)", 5150}},
		{"operation with no target",
			kernelEvent("Sandbox: sh(3) deny(1) process-fork\n" + tag),
			&want{"process-fork", "", "sh", 3}},
		{"the OS's coalesced repeats, one",
			kernelEvent("1 duplicate report for Sandbox: bash(96731) deny(1) file-write-create /Users/me/p/.env\n" + tag),
			&want{violation.FileWriteCreate, "/Users/me/p/.env", "bash", 96731}},
		{"the OS's coalesced repeats, several",
			kernelEvent("12 duplicate reports for Sandbox: bash(96731) deny(1) file-write-data /Users/me/.zshrc\n" + tag),
			&want{violation.FileWriteData, "/Users/me/.zshrc", "bash", 96731}},
		{"tag after a space instead of a newline",
			kernelEvent("Sandbox: touch(4242) deny(1) file-write-create /Users/me/.bashrc " + tag),
			&want{violation.FileWriteCreate, "/Users/me/.bashrc", "touch", 4242}},
		{"trailing newline after the tag",
			kernelEvent("Sandbox: touch(4242) deny(1) file-write-create /etc/x\n" + tag + "\n"),
			&want{violation.FileWriteCreate, "/etc/x", "touch", 4242}},
		{"a file name holding a newline",
			kernelEvent("Sandbox: touch(9) deny(1) file-write-create /Users/me/a\nb\n" + tag),
			&want{violation.FileWriteCreate, "/Users/me/a\nb", "touch", 9}},
		{"minimal event",
			event(map[string]any{"processID": 0, "eventMessage": "Sandbox: ls(3) deny(1) file-read-data /x\n" + tag}),
			&want{violation.FileReadData, "/x", "ls", 3}},

		{"another command's run", kernelEvent("Sandbox: ls(3) deny(1) file-read-data /x\n" + other), nil},
		{"another run of the same command", kernelEvent("Sandbox: npm(3) deny(1) file-read-data /x\n" + sameCommand), nil},
		{"a tag ending with this one", kernelEvent("Sandbox: ls(3) deny(1) file-read-data /x\nX" + tag), nil},
		{"the tag inside the target, not at the end",
			kernelEvent("Sandbox: ls(3) deny(1) file-read-data /x/" + tag + "/y\n" + other), nil},
		{"no tag: a denial of a profile that is not ours",
			kernelEvent("Sandbox: mobileassetd(45396) deny(1) file-write-create /private/var/run/bootSessionMA.txt"), nil},
		{"only the tag", kernelEvent(tag), nil},
		{"logged by a user process (syslog), not the kernel",
			event(map[string]any{"processID": 4242, "processImagePath": "/usr/bin/logger",
				"eventMessage": "Sandbox: touch(4242) deny(1) file-write-create /etc/x\n" + tag}), nil},
		{"no processID", event(map[string]any{"eventMessage": "Sandbox: touch(1) deny(1) file-write-create /etc/x\n" + tag}), nil},
		{"processID not a number", event(map[string]any{"processID": "0", "eventMessage": "Sandbox: touch(1) deny(1) file-write-create /etc/x\n" + tag}), nil},
		{"eventMessage not a string", event(map[string]any{"processID": 0, "eventMessage": 42}), nil},
		{"no eventMessage", event(map[string]any{"processID": 0}), nil},
		{"allowed operation (a report rule)", kernelEvent("Sandbox: ls(3) allow file-read-data /x\n" + tag), nil},
		{"other kernel message with the tag", kernelEvent("AMFI: something about ls(3)\n" + tag), nil},
		{"deny without the Sandbox prefix", kernelEvent("ls(3) deny(1) file-read-data /x\n" + tag), nil},
		{"deny without a PID", kernelEvent("Sandbox: ls deny(1) file-read-data /x\n" + tag), nil},
		{"deny with a bad operation", kernelEvent("Sandbox: ls(3) deny(1) File-Read /x\n" + tag), nil},
		{"noise: mDNSResponder", kernelEvent("Sandbox: curl(88) deny(1) network-outbound /private/var/run/mDNSResponder\n" + tag), nil},
		{"noise: diagnosticd", kernelEvent("Sandbox: node(88) deny(1) mach-lookup com.apple.diagnosticd\n" + tag), nil},
		{"noise: analyticsd, coalesced", kernelEvent("2 duplicate reports for Sandbox: node(88) deny(1) mach-lookup com.apple.analyticsd\n" + tag), nil},
		{"banner", `Filtering the log data using "(processID == 0 AND eventMessage ENDSWITH \"` + tag + `\")"`, nil},
		{"compact style line", "2025-01-15 10:23:45.123 E  kernel[0:1a2b] (Sandbox) Sandbox: touch(4242) deny(1) file-write-create /x " + tag, nil},
		{"truncated JSON", kernelEvent("Sandbox: touch(4242) deny(1) file-write-create /x\n" + tag)[:200], nil},
		{"JSON array", `[` + kernelEvent("Sandbox: touch(1) deny(1) file-write-create /x\n"+tag) + `]`, nil},
		{"empty line", "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, ok := ParseLogLine([]byte(c.line), tag)
			if c.want == nil {
				if ok {
					t.Fatalf("parsed %+v", v)
				}
				return
			}
			if !ok {
				t.Fatalf("not parsed: %s", c.line)
			}
			got := want{v.Action, v.Target, v.Exe, v.PID}
			if got != *c.want {
				t.Errorf("got %+v, want %+v", got, *c.want)
			}
			if v.Reason != SeatbeltReason || v.Raw != "" || v.Key != "" || v.Command != "" {
				t.Errorf("reason %q raw %q key %q command %q", v.Reason, v.Raw, v.Key, v.Command)
			}
			if strings.Contains(v.Line(), tag) {
				t.Errorf("line holds the tag: %q", v.Line())
			}
		})
	}
	if _, ok := ParseLogLine([]byte(kernelEvent("Sandbox: ls(3) deny(1) file-read-data /x\n")), ""); ok {
		t.Error("an empty tag matched")
	}
}

func TestParseLogLineTime(t *testing.T) {
	tag := NewTag("true")
	v, ok := ParseLogLine([]byte(kernelEvent("Sandbox: cat(1) deny(1) file-read-data /x\n"+tag)), tag)
	if !ok {
		t.Fatal("not parsed")
	}
	want := time.Date(2026, 9, 5, 23, 1, 34, 988314000, time.FixedZone("", -5*3600))
	if !v.Time.Equal(want) {
		t.Errorf("time %v, want %v", v.Time, want)
	}
	for _, ts := range []any{nil, "yesterday", 17} {
		line := event(map[string]any{"processID": 0, "timestamp": ts, "eventMessage": "Sandbox: cat(1) deny(1) file-read-data /x\n" + tag})
		v, ok := ParseLogLine([]byte(line), tag)
		if ts == 17 {
			// A timestamp of the wrong type makes the line unreadable.
			if ok {
				t.Errorf("timestamp %v: parsed", ts)
			}
			continue
		}
		if !ok || !v.Time.IsZero() {
			t.Errorf("timestamp %v: ok %v time %v", ts, ok, v.Time)
		}
	}
}

func TestIsMarker(t *testing.T) {
	const marker = "srt-log-ready-00112233445566778899aabbccddeeff"
	for _, c := range []struct {
		name, line string
		want       bool
	}{
		{"logger's event", event(map[string]any{"processID": 812, "processImagePath": "/usr/bin/logger", "eventMessage": marker}), true},
		{"with a trailing newline", event(map[string]any{"processID": 812, "processImagePath": "/usr/bin/logger", "eventMessage": marker + "\n"}), true},
		{"log's own command line", event(map[string]any{"processID": 811, "processImagePath": "/usr/bin/log",
			"eventMessage": `log stream --style ndjson --predicate (eventMessage CONTAINS "` + marker + `")`}), false},
		{"the marker inside a longer message", event(map[string]any{"processID": 812, "processImagePath": "/usr/bin/logger", "eventMessage": "x " + marker}), false},
		{"another program", event(map[string]any{"processID": 813, "processImagePath": "/bin/sh", "eventMessage": marker}), false},
		{"the other marker", event(map[string]any{"processID": 812, "processImagePath": "/usr/bin/logger", "eventMessage": "srt-log-drained-00112233445566778899aabbccddeeff"}), false},
		{"malformed", `{"eventMessage":"` + marker, false},
		{"banner", "Filtering the log data using \"" + marker + "\"", false},
	} {
		if got := isMarker([]byte(c.line), marker, "/usr/bin/logger"); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestLogPredicate(t *testing.T) {
	tag := NewTag("git status")
	got := LogPredicate(tag, "abc123")
	want := `(processID == 0 AND eventMessage ENDSWITH "` + tag + `") OR (eventMessage CONTAINS "abc123")`
	if got != want {
		t.Errorf("predicate %s", got)
	}
	// The tag is quoted as it is: its alphabet has no quote or backslash.
	if strings.ContainsAny(tag, `"\`) {
		t.Errorf("tag %q needs escaping", tag)
	}
}

// TestEveryDenyCarriesTheTag checks what the parser relies on: every deny
// rule of every generated profile ends its log message with the run's
// tag, and no allow rule carries one, so a denial of this run is never
// dropped as another's.
func TestEveryDenyCarriesTheTag(t *testing.T) {
	for name, gen := range goldenCases() {
		src, err := gen()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		prof, err := sbpl.Load(src)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		denies := 0
		for _, r := range prof.Rules {
			switch {
			case r.Allow && r.Message != "":
				t.Errorf("%s: line %d: allow with message %q", name, r.Line, r.Message)
			case !r.Allow && r.Message != goldenTag:
				t.Errorf("%s: line %d: deny %v with message %q, want the tag", name, r.Line, r.Ops, r.Message)
			case !r.Allow:
				denies++
			}
		}
		if denies == 0 {
			t.Errorf("%s: no deny rule", name)
		}
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
	enc, ok := strings.CutPrefix(a, "CMD64_")
	if !ok {
		t.Fatalf("tag %q", a)
	}
	enc, rnd, ok := strings.Cut(enc, "_END_")
	if dec, err := base64.StdEncoding.DecodeString(enc); !ok || err != nil || string(dec) != strings.Repeat("é", 100) {
		t.Errorf("command part %q: %q %v", enc, dec, err)
	}
	if len(rnd) != 16+len("_SBX") || !strings.HasSuffix(rnd, "_SBX") {
		t.Errorf("random part %q", rnd)
	}
	// A tag as NewTag writes it is read back.
	if _, ok := ParseLogLine([]byte(kernelEvent("Sandbox: x(1) deny(1) file-read-data /y\n"+a)), a); !ok {
		t.Error("a fresh tag is not parsed")
	}
}
