package darwin

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// Violation is one operation Seatbelt refused, read from the unified log
// (seed 000, "SandboxViolation": action, target, raw).
type Violation struct {
	// Time is the log line's timestamp (local time; compact style has no
	// zone). Zero when the line has none.
	Time time.Time
	// Action is the refused operation: "file-read-data",
	// "file-write-create", "network-outbound", "mach-lookup"…
	Action string
	// Target is the path, address or service name the operation was on;
	// empty when the line names none.
	Target string
	// Process and PID are the refused process as the kernel named it.
	Process string
	PID     int
	// Command is the command line decoded from the tag (its first 100
	// characters), which attributes the violation to a command.
	Command string
	// Raw is the whole log line.
	Raw string
}

// String formats v as the reference's violation line: "deny ACTION TARGET".
func (v Violation) String() string {
	if v.Target == "" {
		return "deny " + v.Action
	}
	return "deny " + v.Action + " " + v.Target
}

// LogPredicate returns the `log stream --predicate` that selects the
// session's lines: those whose message ends with the tag's session
// suffix (srt-notes §5, "Violation monitor").
func LogPredicate(tag string) string {
	return `(eventMessage ENDSWITH "` + TagSuffix(tag) + `")`
}

// noisyProcesses are system daemons whose own sandbox denials can carry
// the tag's suffix in their message; they are not the command's doing.
var noisyProcesses = []string{"mDNSResponder", "diagnosticd", "analyticsd"}

// compactTime is the timestamp layout of `log stream --style compact`.
const compactTime = "2006-01-02 15:04:05.000"

// ParseLogLine reads one `log stream --style compact` line. It returns
// ok=false for a line that is not a sandbox denial carrying tag's session
// suffix: headers, other sessions, allowed operations, and the
// noisyProcesses. The expected shape (srt-notes §5) is
//
//	2025-01-15 10:23:45.123 E  kernel[0:1a2b] (Sandbox) Sandbox: touch(4242) deny(1) file-write-create /Users/me/.bashrc CMD64_..._END_..._SBX
//
// where the message after "Sandbox: " is PROCESS(PID) deny(N) ACTION
// [TARGET] and ends with the tag. A process name may hold spaces and
// parentheses; the PID is the last parenthesised number before " deny(".
func ParseLogLine(line, tag string) (Violation, bool) {
	line = strings.TrimRight(line, "\r\n")
	suffix := TagSuffix(tag)
	if suffix == "" || !strings.Contains(line, suffix) {
		return Violation{}, false
	}
	i := strings.Index(line, "Sandbox: ")
	if i < 0 {
		return Violation{}, false
	}
	msg := line[i+len("Sandbox: "):]
	d := strings.Index(msg, " deny(")
	if d < 0 {
		return Violation{}, false
	}
	v := Violation{Raw: line}
	proc := msg[:d]
	if o := strings.LastIndexByte(proc, '('); o >= 0 && strings.HasSuffix(proc, ")") {
		if pid, err := strconv.Atoi(proc[o+1 : len(proc)-1]); err == nil {
			v.PID = pid
			proc = proc[:o]
		}
	}
	v.Process = proc
	for _, n := range noisyProcesses {
		if proc == n {
			return Violation{}, false
		}
	}
	rest := msg[d+len(" deny("):]
	c := strings.Index(rest, ") ")
	if c < 0 {
		return Violation{}, false
	}
	rest = strings.TrimSpace(rest[c+2:])
	// Drop the tag (the whole CMD64_..._SBX word) from the end.
	if t := strings.LastIndex(rest, "CMD64_"); t >= 0 && strings.HasSuffix(rest, "_SBX") {
		v.Command = decodeCommand(rest[t:])
		rest = strings.TrimSpace(rest[:t])
	} else if strings.HasSuffix(rest, suffix) {
		rest = strings.TrimSpace(strings.TrimSuffix(rest, suffix))
	}
	v.Action, v.Target, _ = strings.Cut(rest, " ")
	v.Target = strings.TrimSpace(v.Target)
	if v.Action == "" {
		return Violation{}, false
	}
	if len(line) >= len(compactTime) {
		if t, err := time.ParseInLocation(compactTime, line[:len(compactTime)], time.Local); err == nil {
			v.Time = t
		}
	}
	return v, true
}

// decodeCommand returns the command encoded in a tag, or "".
func decodeCommand(tag string) string {
	s, ok := strings.CutPrefix(tag, "CMD64_")
	if !ok {
		return ""
	}
	enc, _, ok := strings.Cut(s, "_END_")
	if !ok {
		return ""
	}
	b, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return ""
	}
	return string(b)
}

// Ignored reports whether settings' ignoreViolations suppresses v for
// command (srt-notes §1.1): the "*" entry applies to every command, any
// other key when the command contains it, and v is suppressed when its
// raw line contains one of the key's substrings. Reporting only; nothing
// is enforced differently.
func Ignored(v Violation, command string, rules map[string][]string) bool {
	for key, subs := range rules {
		if key != "*" && !strings.Contains(command, key) {
			continue
		}
		for _, s := range subs {
			if s != "" && strings.Contains(v.Raw, s) {
				return true
			}
		}
	}
	return false
}
