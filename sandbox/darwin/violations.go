package darwin

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/srt-go/srt/violation"
)

// This file reads Seatbelt's denials back from the unified log. It is pure
// (no process is started) so that it builds and is tested everywhere; the
// `log stream` runner is in monitor.go.
//
// The kernel's Sandbox extension logs every refused operation as one
// event whose message is
//
//	Sandbox: PROCESS(PID) deny(N) OPERATION [TARGET]
//
// (the srt-notes §5 shape, and what `log stream` shows on a Mac), and when
// the deciding rule carries (with message "TEXT"), TEXT follows on a line
// of its own, at the very end of the message: the reference's monitor
// selects its lines with `eventMessage ENDSWITH "<tag suffix>"` and finds
// the tag on a line starting with "CMD64_". The same operation refused
// again in the same process is coalesced by the OS into one event whose
// message starts with "N duplicate report(s) for ". Every deny the
// profile writes carries the run's tag (writer.rule), so a line ending
// with another tag, or with none, is another run's or another program's.

// SeatbeltReason is the Reason of every Seatbelt denial: the log does not
// say which of the profile's rules refused the operation.
const SeatbeltReason = "seatbelt"

// LogPredicate returns the `log stream --predicate` of one run: the
// kernel's events (processID 0, which no user process can log as) whose
// message ends with the run's tag, and the monitor's own marker lines,
// which contain id (a string of NewTag's alphabet, as is tag). The
// parser checks both again: the predicate only keeps the stream small.
func LogPredicate(tag, id string) string {
	return `(processID == 0 AND eventMessage ENDSWITH "` + tag + `") OR (eventMessage CONTAINS "` + id + `")`
}

// logEvent is the part of a `log stream --style ndjson` event the parser
// reads. The field names are Apple's (log(1), "ndjson" style); a real
// Seatbelt denial looks like
//
//	{"messageType":"Error","subsystem":"","category":"","processID":0,
//	 "processImagePath":"/kernel",
//	 "senderImagePath":"/System/Library/Extensions/Sandbox.kext/Contents/MacOS/Sandbox",
//	 "timestamp":"2026-09-05 23:01:34.988314-0500",
//	 "eventMessage":"Sandbox: cat(96728) deny(1) file-read-data /private/var/folders/…/read.txt"}
//
// where processID and processImagePath name the reporter (the kernel),
// never the refused process: that one is only in the message.
type logEvent struct {
	EventMessage     *string `json:"eventMessage"`
	ProcessID        *int64  `json:"processID"`
	ProcessImagePath string  `json:"processImagePath"`
	Timestamp        string  `json:"timestamp"`
}

// logTimestamp is the layout of an ndjson event's "timestamp": local time
// with microseconds and the zone's offset.
const logTimestamp = "2006-01-02 15:04:05.999999-0700"

// denyMessage is a denial's message once the tag and the duplicate
// prefix are removed: process (any text, the first "(PID) deny(N) " ends
// it), PID, the operation, and the target (any text, newlines included,
// or none). A process name holding ") deny(" could shift the split; it
// can only mislead the reports of its own run.
var denyMessage = regexp.MustCompile(`(?s)^Sandbox: (.+?)\(([0-9]+)\) deny\([0-9]+\) ([a-z][a-z0-9*-]*)(?: (.*))?$`)

// duplicatePrefix is how the OS coalesces repeats: "1 duplicate report
// for Sandbox: …", "3 duplicate reports for Sandbox: …".
var duplicatePrefix = regexp.MustCompile(`^[0-9]+ duplicate reports? for `)

// ParseLogLine turns one line of `log stream --style ndjson` into the
// Seatbelt denial it reports. It returns ok=false for everything else: a
// line that is not a JSON object (the stream's "Filtering the log data
// using …" banner, a truncated line), an event not logged by the kernel
// (processID other than 0: a program writing a message that ends with
// the tag through syslog), a message that does not end with exactly tag
// on its own line or word (another run, or no tag at all), a message
// that is not "Sandbox: … deny(N) …" (an allowed operation, anything
// else the kernel says), and the noise the reference also drops
// (isNoise). Time is the event's timestamp, zero when it has none or it
// does not parse; Exe is the process name as the kernel gives it (its
// short name, not a path); Reason is SeatbeltReason; Raw is left empty
// (violation.Violation.Line).
func ParseLogLine(line []byte, tag string) (v violation.Violation, ok bool) {
	if tag == "" {
		return v, false
	}
	var ev logEvent
	if err := json.Unmarshal(line, &ev); err != nil || ev.EventMessage == nil || ev.ProcessID == nil || *ev.ProcessID != 0 {
		return v, false
	}
	msg := strings.TrimRight(*ev.EventMessage, " \t\r\n")
	body, found := strings.CutSuffix(msg, tag)
	if !found || body == "" || (body[len(body)-1] != '\n' && body[len(body)-1] != ' ') {
		return v, false
	}
	body = strings.TrimRight(body, " \t\r\n")
	if loc := duplicatePrefix.FindStringIndex(body); loc != nil {
		body = body[loc[1]:]
	}
	m := denyMessage.FindStringSubmatch(body)
	if m == nil || isNoise(body) {
		return v, false
	}
	pid, err := strconv.Atoi(m[2])
	if err != nil {
		return v, false
	}
	v = violation.Violation{Action: m[3], Target: m[4], Reason: SeatbeltReason, PID: pid, Exe: m[1]}
	if t, err := time.Parse(logTimestamp, ev.Timestamp); err == nil {
		v.Time = t
	}
	return v, true
}

// isNoise reports the denials the reference's monitor always drops
// (srt-notes §5): the sandboxed programs' lookups of the diagnostics
// daemons, and anything about mDNSResponder (the resolver's socket and
// service, which every name lookup tries and the proxies make useless).
// details is the message after the duplicate prefix.
func isNoise(details string) bool {
	return strings.Contains(details, "mDNSResponder") ||
		strings.Contains(details, "mach-lookup com.apple.diagnosticd") ||
		strings.Contains(details, "mach-lookup com.apple.analyticsd")
}

// isMarker reports whether line is the event `logger MARKER` produced:
// its message is marker and nothing else, and it was logged by
// loggerPath. The monitor logs a marker and waits for it to know that the
// stream is attached (and, at the end, that it has caught up); `log` logs
// its own command line, predicate and id included, which must not count,
// hence the exact message and the process check.
func isMarker(line []byte, marker, loggerPath string) bool {
	var ev logEvent
	if err := json.Unmarshal(line, &ev); err != nil || ev.EventMessage == nil {
		return false
	}
	return strings.TrimSpace(*ev.EventMessage) == marker && ev.ProcessImagePath == loggerPath
}
