// Package violation records what a sandbox refused, attributed to the
// command that tried it (seed 003, "Détection et surveillance des
// violations", "Attribution des violations"; seed 000,
// "SandboxViolation").
//
// Sources push Violations into a Store: the network proxies (refused
// connections), the seccomp notification listener (refused system calls)
// and the filesystem observer (writes and reads the mounts refuse). The
// Store is a bounded ring that never blocks a source; callers read it,
// subscribe to it, or fold a command's violations into its stderr with
// Annotate, the way an agent harness feeds them back to a model.
//
// Violations are reporting only: nothing here decides or weakens what the
// sandbox enforces, and IgnoreViolations filters reports, never refusals.
package violation

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"time"
)

// Actions, as seed 000 names them (Seatbelt's operation names, which the
// macOS backend reports verbatim).
const (
	// FileWriteCreate: creating a file, directory, link or device node.
	FileWriteCreate = "file-write-create"
	// FileWriteData: opening an existing file for writing or truncating it.
	FileWriteData = "file-write-data"
	// FileWriteUnlink: removing or renaming away a name.
	FileWriteUnlink = "file-write-unlink"
	// FileWriteMode, FileWriteOwner, FileWriteTimes, FileWriteXattr:
	// chmod, chown, utimes and the xattr calls.
	FileWriteMode  = "file-write-mode"
	FileWriteOwner = "file-write-owner"
	FileWriteTimes = "file-write-times"
	FileWriteXattr = "file-write-xattr"
	// FileReadData: opening a path under filesystem.denyRead.
	FileReadData = "file-read-data"
	// NetworkOutbound: a connection or request the proxies refused.
	NetworkOutbound = "network-outbound"
	// SocketUnix: socket(AF_UNIX) refused by the seccomp filter.
	SocketUnix = "socket-unix"
	// Syscall: any other system call the seccomp filter refused; Target
	// is the call's name.
	Syscall = "syscall"
)

// Violation is one refused operation.
type Violation struct {
	// Time is when the refusal was observed.
	Time time.Time `json:"time"`
	// Action is what was refused: one of the constants above.
	Action string `json:"action"`
	// Target is a path, "host:port", or a system call name
	// ("socket(AF_UNIX)", "unshare").
	Target string `json:"target"`
	// Reason names the rule that refused it ("filesystem.denyWrite[0]",
	// "outside the write roots", "seccomp", the proxy's text).
	Reason string `json:"reason"`
	// PID is the process inside the sandbox (its PID in the sandbox's PID
	// namespace); zero when unknown (network refusals).
	PID int `json:"pid,omitempty"`
	// Exe is that process's executable; empty when unknown.
	Exe string `json:"exe,omitempty"`
	// Command is the command text the violation is attributed to
	// (sandbox.Cmd.CommandText, else the command line).
	Command string `json:"command,omitempty"`
	// Key is the attribution key (sandbox.Cmd.CommandID, else a key
	// unique to the Cmd); empty where nothing attributes (srtd sessions,
	// whose events are per exec already).
	Key string `json:"key,omitempty"`
	// Protocol is how a refused connection came (network-outbound only):
	// "http" (a plain HTTP request), "connect" (HTTP CONNECT), "socks5",
	// or "loopback" (a host loopback port the allow-list names, relayed
	// into a Linux sandbox: sandbox/linux.ProtocolLoopback).
	Protocol string `json:"protocol,omitempty"`
	// Rule is the settings entry that refused it, when one did (a
	// deniedDomains entry), or the limit that did ("connection limit",
	// proxy.RuleConnLimit); empty otherwise.
	Rule string `json:"rule,omitempty"`
	// Raw is the one-line form shown to people and models:
	// "deny ACTION TARGET (REASON)".
	Raw string `json:"raw"`
}

// Line returns the reference's violation line, "deny ACTION TARGET
// (REASON)", without the reason when there is none.
func (v Violation) Line() string {
	var b strings.Builder
	b.WriteString("deny ")
	b.WriteString(v.Action)
	if v.Target != "" {
		b.WriteString(" ")
		b.WriteString(v.Target)
	}
	if v.Reason != "" {
		b.WriteString(" (")
		b.WriteString(v.Reason)
		b.WriteString(")")
	}
	return b.String()
}

// NewKey returns a fresh attribution key: 128 random bits, 22 characters
// of unpadded base64url (the reference's commandId shape). Two keys never
// collide in practice, so a re-run of the same command text starts with
// no violations.
func NewKey() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Ignored reports whether rules (settings ignoreViolations) suppress v for
// the command text command (srt-notes §1.1): the "*" entry applies to
// every command, any other entry when command contains it; v is
// suppressed when its Raw line (or, if Raw is empty, its Target) contains
// one of the entry's substrings. Empty substrings match nothing.
// Reporting only: the operation was refused either way.
func Ignored(v Violation, command string, rules map[string][]string) bool {
	text := v.Raw
	if text == "" {
		text = v.Line()
	}
	for pattern, subs := range rules {
		if pattern != "*" && (pattern == "" || !strings.Contains(command, pattern)) {
			continue
		}
		for _, s := range subs {
			if s != "" && strings.Contains(text, s) {
				return true
			}
		}
	}
	return false
}
