// Package darwin is the macOS backend: it compiles the same policy the
// Linux backend enforces into a Seatbelt profile for sandbox-exec(1)
// (seed 003, "Isolation du système de fichiers"; srt-notes §5), writes
// seed 000's agent and terminal profiles for the server, and reads the
// sandbox's violations back from the unified log.
//
// Profile generation is pure Go and builds on every platform, so its tests
// run on Linux against package sbpl's evaluator; only running
// sandbox-exec and `log stream` lives in _darwin.go files.
package darwin

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/srt-go/srt/policy"
)

// Options are what Profile needs besides the policy.
type Options struct {
	// Policy is the compiled policy (policy.Compile). Required.
	Policy *policy.Policy
	// Tag is the log tag every deny rule carries (NewTag). Required.
	Tag string
	// HTTPProxyPort and SOCKSProxyPort are the session's proxies on the
	// host's loopback; the command may connect to these two ports and no
	// other. Zero means that proxy does not exist.
	HTTPProxyPort, SOCKSProxyPort int
	// WriteRoots are extra writable directories, absolute: the session's
	// private TMPDIR. They get the same denies as the policy's write roots.
	WriteRoots []string
}

// tagPattern is what a tag may hold: NewTag's alphabet. A tag is quoted
// like any string, so this is not an injection guard but keeps the log
// predicate (which ends with the tag) simple.
var tagPattern = regexp.MustCompile(`^[A-Za-z0-9_+/=-]{1,400}$`)

// NewTag returns a fresh log tag for command, as the reference writes it
// (srt-notes §5): "CMD64_" + base64 of the command's first 100 characters
// + "_END_" + 16 random hex digits + "_SBX". The random part names the
// run: every deny rule of its profile carries the tag (writer.rule), the
// kernel ends each denial's log message with it, and the run's monitor
// takes only the messages ending with the whole tag (LogPredicate,
// ParseLogLine), so two runs, even of the same command, never read each
// other's denials. (The reference shares one random suffix per process,
// for its one monitor.)
func NewTag(command string) string {
	if utf8.RuneCountInString(command) > 100 {
		command = string([]rune(command)[:100])
	}
	var r [8]byte
	rand.Read(r[:])
	return "CMD64_" + base64.StdEncoding.EncodeToString([]byte(command)) + "_END_" + hex.EncodeToString(r[:]) + "_SBX"
}

// Profile compiles o.Policy into a Seatbelt profile. The profile denies
// by default and its structure is the security argument:
//
//  1. (deny default) with the tag: whatever no rule names is refused.
//  2. Allow rules: process, mach, ipc, sysctl, the proxy ports, reads
//     everywhere, writes under the write roots.
//  3. Deny rules, all after every allow, so that under SBPL's
//     last-match-wins no allow can re-open them: unreadable paths (with
//     their allowRead carve-outs written into the deny itself, as
//     require-not, so no ordering between allow and deny is needed),
//     denyWrite and the mandatory denies as paths and as name patterns
//     at any depth, writes to unreadable paths, and file-write-unlink on
//     every denied path's ancestors.
//
// It returns an error wrapping ErrUnsafePath for a path with a control
// character, and an error for a setting it cannot express (an
// allowMachLookup entry with '*' other than at the end).
func Profile(o Options) (string, error) {
	p := o.Policy
	if p == nil {
		return "", errors.New("darwin: no policy")
	}
	if !tagPattern.MatchString(o.Tag) {
		return "", fmt.Errorf("darwin: bad log tag %q", o.Tag)
	}
	nw, proc := p.Network, p.Process
	w := &writer{tag: o.Tag}
	w.line("(version 1)")
	w.rule(false, "default", nil, false)

	w.comment("Processes: run and fork, but see and signal only this sandbox's own.")
	w.line("(allow process-exec)")
	w.line("(allow process-fork)")
	w.line("(allow process-info* (target same-sandbox))")
	w.line("(allow signal (target same-sandbox))")
	w.line("(allow mach-priv-task-port (target same-sandbox))")
	w.line("(allow user-preference-read)")

	w.comment("Mach services: a fixed list; trustd, Apple Events and allowMachLookup only when set.")
	services := append([]string{}, machServices...)
	if proc.EnableWeakerNetworkIsolation {
		services = append(services, trustdService)
	}
	if proc.AllowAppleEvents {
		services = append(services, appleEventServices...)
	}
	var mach []string
	for _, n := range services {
		mach = append(mach, w.f("global-name", n))
	}
	for _, n := range nw.AllowMachLookup {
		base, wild := strings.CutSuffix(n, "*")
		if base == "" || strings.Contains(base, "*") {
			return "", fmt.Errorf("darwin: network.allowMachLookup %q: only one trailing * is allowed", n)
		}
		if wild {
			mach = append(mach, w.f("global-name-prefix", base))
		} else {
			mach = append(mach, w.f("global-name", base))
		}
	}
	w.rule(true, "mach-lookup", mach, true)
	if proc.AllowAppleEvents {
		w.line("(allow appleevent-send)")
		w.line("(allow lsopen)")
	}

	w.comment("IPC, IOKit, sysctl, notifications, device ioctls.")
	w.line("(allow ipc-posix-shm)")
	w.line("(allow ipc-posix-sem)")
	var iokit []string
	for _, c := range iokitClasses {
		iokit = append(iokit, w.f("iokit-user-client-class", c))
	}
	w.rule(true, "iokit-open", iokit, true)
	w.line("(allow iokit-get-properties)")
	w.line("(allow system-socket (require-all (socket-domain AF_SYSTEM) (socket-protocol 2)))")
	var sysctl []string
	for _, n := range sysctlNames {
		sysctl = append(sysctl, w.f("sysctl-name", n))
	}
	for _, n := range sysctlPrefixes {
		sysctl = append(sysctl, w.f("sysctl-name-prefix", n))
	}
	w.rule(true, "sysctl-read", sysctl, true)
	w.rule(true, "sysctl-write", []string{w.f("sysctl-name", sysctlWritable)}, true)
	w.line("(allow distributed-notification-post)")
	w.rule(true, "file-ioctl", w.literals(ioctlDevices), true)

	w.comment("Network: only the session's proxies on the loopback.")
	w.rule(true, "network-outbound", proxyFilters(o.HTTPProxyPort, o.SOCKSProxyPort), true)
	if nw.AllowLocalBinding {
		// Loopback only: a listener on every interface would let a host
		// on the LAN connect in and receive data, a way out around the
		// proxies. The reference allows "*:*" here.
		w.line(`(allow network-bind (local ip "localhost:*"))`)
		w.line(`(allow network-inbound (local ip "localhost:*"))`)
		w.line(`(allow network-outbound (remote ip "localhost:*"))`)
	}
	switch {
	case nw.AllowAllUnixSockets:
		w.line("(allow system-socket (socket-domain AF_UNIX))")
		w.line(`(allow network-bind (local unix-socket (path-regex "^/")))`)
		w.line(`(allow network-outbound (remote unix-socket (path-regex "^/")))`)
	case len(nw.AllowUnixSockets) > 0:
		w.line("(allow system-socket (socket-domain AF_UNIX))")
		var local, remote []string
		for _, sock := range nw.AllowUnixSockets {
			for _, sp := range hostSpellings(sock) {
				f := w.f("subpath", sp)
				local = append(local, "(local unix-socket "+f+")")
				remote = append(remote, "(remote unix-socket "+f+")")
			}
		}
		w.rule(true, "network-bind", local, true)
		w.rule(true, "network-outbound", remote, true)
	}
	if proc.AllowPty {
		w.comment("allowPty: a pseudo-terminal of the command's own.")
		w.line("(allow pseudo-tty)")
		pty := []string{w.f("literal", ptyMaster), w.f("regex", ptySlaveRegex)}
		w.rule(true, "file-ioctl", pty, true)
		w.rule(true, "file-read* file-write*", pty, true)
	}

	if p.FilesystemDisabled {
		w.comment("filesystem.disabled: no filesystem policy at all.")
		w.line("(allow file-read*)")
		w.line("(allow file-write*)")
		return w.done()
	}

	w.comment("Reads: everywhere (denies below).")
	w.line("(allow file-read*)")

	w.comment("Writes: the write roots and the standard devices (denies below).")
	var roots []string
	for _, r := range p.AllowWrite {
		roots = append(roots, w.subpaths(pathSpellings(r))...)
	}
	for _, r := range o.WriteRoots {
		roots = append(roots, w.subpaths(hostSpellings(r))...)
	}
	for _, g := range p.AllowWriteGlobs {
		roots = append(roots, w.globRegexes(globSpellings(g), false)...)
	}
	roots = append(roots, w.literals(deviceWritePaths)...)
	w.rule(true, "file-write*", roots, true)

	// Every rule below is a deny.
	unreadable := w.unreadable(p)
	w.comment("Denied reads: denyRead minus the more specific allowRead carve-outs.")
	w.rule(false, "file-read*", unreadable, true)

	w.comment("Denied writes: denyWrite and the mandatory denies found now, as paths.")
	var dw []string
	var unlink unlinkSet
	for _, d := range p.DenyWrite {
		sp := pathSpellings(d)
		dw = append(dw, w.subpaths(sp)...)
		unlink.addPath(sp)
	}
	w.rule(false, "file-write*", dw, true)

	w.comment("Denied writes: the mandatory names at any depth and the denyWrite globs,\n; as patterns, so that names created later are covered too (any letter case).")
	var pats []string
	for _, m := range p.MandatoryPatterns {
		pats = append(pats, m)
		unlink.addGlob(m)
	}
	for _, g := range p.DenyWriteGlobs {
		for _, sp := range globSpellings(g) {
			pats = append(pats, sp)
			unlink.addGlob(sp)
		}
	}
	w.rule(false, "file-write*", w.globRegexes(pats, true), true)

	w.comment("Denied writes: what cannot be read cannot be written either.")
	w.rule(false, "file-write*", unreadable, true)

	w.comment("No rename around a deny: unlink is denied on the ancestors of every\n; denied path, so neither it nor a directory above it can be moved away.")
	for _, d := range p.DenyRead {
		unlink.addPath(pathSpellings(d))
	}
	for _, g := range p.DenyReadGlobs {
		for _, sp := range globSpellings(g) {
			unlink.addGlob(sp)
		}
	}
	w.rule(false, "file-write-unlink", w.unlinkFilters(&unlink), true)
	return w.done()
}

func (w *writer) done() (string, error) {
	if w.err != nil {
		return "", fmt.Errorf("darwin: %w", w.err)
	}
	return w.b.String(), nil
}

// proxyFilters allows outbound connections to the proxy ports on the
// loopback. SBPL accepts only "localhost" or "*" as the host.
func proxyFilters(ports ...int) []string {
	var out []string
	for _, port := range ports {
		if port > 0 {
			out = append(out, `(remote ip "localhost:`+strconv.Itoa(port)+`")`)
		}
	}
	return out
}

// unreadable returns the filters matching what policy.Readable refuses:
// for each denyRead path D, (subpath D) minus every allowRead path
// strictly inside it (an allowRead equal to D cancels D: a tie goes to
// allowRead), and for each denyRead glob its regex minus the allowRead
// paths equal to a match.
func (w *writer) unreadable(p *policy.Policy) []string {
	var out []string
	for _, d := range p.DenyRead {
		var carve []string
		cancelled := false
		for _, a := range p.AllowRead {
			switch {
			case a.Resolved == d.Resolved:
				cancelled = true
			case policy.Within(a.Resolved, d.Resolved):
				carve = append(carve, w.subpaths(pathSpellings(a))...)
			}
		}
		for _, g := range p.AllowReadGlobs {
			if base, _ := doublestar.SplitPattern(g.Resolved); policy.Within(base, d.Resolved) {
				carve = append(carve, w.globRegexes(globSpellings(g), false)...)
			}
		}
		if cancelled {
			continue
		}
		deny := anyOf(w.subpaths(pathSpellings(d)))
		if len(carve) > 0 {
			deny = "(require-all " + deny + " (require-not " + anyOf(carve) + "))"
		}
		out = append(out, deny)
	}
	var exact []string
	for _, a := range p.AllowRead {
		exact = append(exact, w.literals(pathSpellings(a))...)
	}
	for _, g := range p.DenyReadGlobs {
		for _, r := range w.globRegexes(globSpellings(g), true) {
			if len(exact) > 0 {
				r = "(require-all " + r + " (require-not " + anyOf(exact) + "))"
			}
			out = append(out, r)
		}
	}
	return out
}
