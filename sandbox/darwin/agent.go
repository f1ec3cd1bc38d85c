package darwin

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/srt-go/srt/policy"
)

// Spec is the part of seed 000's SandboxSpec ("SandboxSpec") that the
// agent profile is generated from, with the seed's field names. srtd's
// port fills it at each launch (port/seatbelt.go).
type Spec struct {
	// BindMounts are the host paths the agent works on. With the native
	// backend GuestPath equals HostPath; the profile uses HostPath.
	BindMounts []BindMount `json:"bindMounts"`
	// Mode sets the write rules: "chat" (and "", the seed's default)
	// keeps writable bind mounts writable; "review", "plan" and
	// "orchestrate" make every bind mount read-only. Another value is an
	// error.
	Mode string `json:"mode"`
	// ProtectedPaths are host paths never writable in any mode (the
	// registered original working copies).
	ProtectedPaths []string `json:"protectedPaths"`
	// RunnerStateDirs are host directories writable in every mode (the
	// runner's own state, e.g. a managed CLAUDE_CONFIG_DIR).
	RunnerStateDirs []string `json:"runnerStateDirs"`
	// ExecGrantRoots are operator-approved trees from which binaries may
	// run even though they are writable (seed 000: they reopen the exec
	// block on writable directories, macOS only).
	ExecGrantRoots []string `json:"execGrantRoots"`
	// Egress names the session's proxy pair; the domain allow-list is the
	// proxies' business, not the profile's.
	Egress Egress `json:"egress"`
	// DenyWriteNames are file-name globs (".env", "*.key"; one with a
	// "/" is a whole-path glob) never writable nor creatable at any depth,
	// like the mandatory names: the port's launch policy
	// (port.StandardNameGlobWriteDenies).
	DenyWriteNames []string `json:"-"`

	// Home is the home directory the secret paths are under. Required.
	Home string `json:"-"`
	// TmpDir is the session's private temporary directory, writable in
	// every mode. Empty means none.
	TmpDir string `json:"-"`
	// Tag is the log tag (NewTag). Required.
	Tag string `json:"-"`
}

// BindMount is seed 000's SandboxBindMount.
type BindMount struct {
	HostPath  string `json:"hostPath"`
	GuestPath string `json:"guestPath"`
	ReadOnly  bool   `json:"readOnly"`
}

// Egress is where the sandbox's connections may go: the session's HTTP
// and SOCKS5 proxies on the host's loopback (seed 000, "Sortie réseau").
// A zero port means that proxy does not exist.
type Egress struct {
	HTTPProxyPort  int `json:"httpProxyPort"`
	SOCKSProxyPort int `json:"socksProxyPort"`
}

// SecretPaths are the read-deny set, relative to the home directory
// (seed 000, "Backend natif": ~/.ssh, ~/.aws, ~/.gnupg, ~/.config/gh,
// ~/Library/Keychains "and the rest of the read-deny set"): credentials
// of ssh, clouds, package registries, git forges, containers, and the
// macOS keychains and cookie stores. They are unreadable, unwritable, and
// cannot be renamed.
var SecretPaths = []string{
	".ssh", ".aws", ".gnupg", ".config/gh", "Library/Keychains",
	".netrc", ".git-credentials", ".config/git/credentials",
	".docker/config.json", ".kube", ".config/gcloud", ".azure",
	".npmrc", ".pypirc", ".cargo/credentials.toml", ".password-store",
	"Library/Cookies", "Library/Application Support/com.apple.TCC",
}

// TerminalSecretPaths are the terminal profile's read-deny set, exactly
// the seed's list ("Terminal hébergé par le serveur").
var TerminalSecretPaths = []string{".ssh", ".aws", ".gnupg", ".config/gh", "Library/Keychains"}

// DangerousBinaries may never run, from anywhere: each hands work to a
// process outside the sandbox (launchd, Launch Services, Apple Events),
// reads secrets the profile cannot see through (keychain, clipboard,
// screen), or changes privileges or system policy.
var DangerousBinaries = []string{
	"/usr/bin/osascript", // Apple Events: scripts other apps, outside the sandbox
	"/usr/bin/open",      // Launch Services starts apps outside the sandbox
	"/bin/launchctl",     // a launchd job runs outside the sandbox
	"/usr/bin/security",  // keychain access
	"/usr/bin/sudo",      // privilege change
	"/usr/bin/su",        // privilege change
	"/usr/bin/login",     // privilege change
	"/usr/sbin/screencapture",
	"/usr/bin/pbpaste", // the clipboard may hold secrets
	"/usr/bin/automator",
	"/usr/bin/shortcuts",
	"/usr/bin/tccutil",        // privacy permissions
	"/usr/bin/dscl",           // directory services (users, passwords)
	"/usr/sbin/sysadminctl",   // user accounts
	"/usr/sbin/spctl",         // Gatekeeper policy
	"/usr/sbin/nvram",         // firmware variables
	"/usr/bin/csrutil",        // System Integrity Protection
	"/usr/sbin/systemsetup",   // system settings
	"/usr/bin/defaults",       // writes other apps' preferences
	"/usr/libexec/PlistBuddy", // the same
}

// dnsSocket is mDNSResponder's socket: name resolution for the proxies'
// clients that resolve before connecting (seed 000: "les ports des proxys
// in-process plus le DNS").
const dnsSocket = "/private/var/run/mDNSResponder"

// AgentProfile returns seed 000's agent profile for spec: permissive by
// default ((allow default), because a deny-by-default profile leaves an
// interactive shell unusable) with targeted denies. Order matters here,
// the last matching rule deciding:
//
//  1. (allow default).
//  2. Reads of the secret paths denied.
//  3. Writes reset to deny, then the writable sub-paths allowed: the
//     writable bind mounts (mode chat only), runnerStateDirs, TmpDir,
//     the standard devices.
//  4. Then, after every write allow, the write denies that hold even
//     inside a writable root: the mandatory names and DenyWriteNames at
//     any depth,
//     protectedPaths, the secret paths; and file-write-unlink on their
//     ancestors, so a rename cannot get around them.
//  5. process-exec denied for DangerousBinaries, and for anything in a
//     writable directory unless under execGrantRoots.
//  6. Network denied, then outbound allowed to the two proxy ports and
//     to mDNSResponder's socket (DNS). The loopback is not opened in bulk
//     and unix sockets are not allowed.
func AgentProfile(spec Spec) (string, error) {
	if spec.Home == "" || !filepath.IsAbs(spec.Home) {
		return "", errors.New("darwin: agent profile: Home must be an absolute path")
	}
	if !tagPattern.MatchString(spec.Tag) {
		return "", fmt.Errorf("darwin: bad log tag %q", spec.Tag)
	}
	writableMounts := true
	switch spec.Mode {
	case "", "chat":
	case "review", "plan", "orchestrate":
		writableMounts = false
	default:
		return "", fmt.Errorf("darwin: agent profile: unknown mode %q", spec.Mode)
	}
	for _, l := range [][]string{spec.ProtectedPaths, spec.RunnerStateDirs, spec.ExecGrantRoots} {
		for _, p := range l {
			if !filepath.IsAbs(p) {
				return "", fmt.Errorf("darwin: agent profile: %q is not absolute", p)
			}
		}
	}
	var writable []string
	for _, m := range spec.BindMounts {
		if !filepath.IsAbs(m.HostPath) {
			return "", fmt.Errorf("darwin: agent profile: bind mount %q is not absolute", m.HostPath)
		}
		if writableMounts && !m.ReadOnly {
			writable = append(writable, m.HostPath)
		}
	}
	writable = append(writable, spec.RunnerStateDirs...)
	if spec.TmpDir != "" {
		writable = append(writable, spec.TmpDir)
	}

	w := &writer{tag: spec.Tag}
	w.line("(version 1)")
	w.line("(allow default)")

	secrets := homePaths(spec.Home, SecretPaths)
	w.secretReads(secrets)

	w.comment("Writes: reset to deny, then the writable sub-paths.")
	w.rule(false, "file-write*", nil, false)
	var allow []string
	for _, p := range writable {
		allow = append(allow, w.subpaths(hostSpellings(p))...)
	}
	allow = append(allow, w.literals(deviceWritePaths)...)
	w.rule(true, "file-write*", allow, true)

	w.comment("Write denies that hold inside a writable root: mandatory names at any\n; depth, protected working copies, secret paths.")
	var unlink unlinkSet
	var pats []string
	for _, m := range policy.MandatoryGlobs(false) {
		pats = append(pats, m)
		unlink.addGlob(m)
	}
	for _, g := range spec.DenyWriteNames {
		if !strings.Contains(g, "/") {
			g = "**/" + g
		}
		pats = append(pats, g)
		unlink.addGlob(g)
	}
	w.rule(false, "file-write*", w.globRegexes(pats, true), true)
	var deny []string
	for _, p := range append(append([]string{}, spec.ProtectedPaths...), secrets...) {
		sp := hostSpellings(p)
		deny = append(deny, w.subpaths(sp)...)
		unlink.addPath(sp)
	}
	w.rule(false, "file-write*", deny, true)
	w.rule(false, "file-write-unlink", w.unlinkFilters(&unlink), true)

	w.comment("Exec: never the dangerous binaries; nothing from a writable directory\n; unless under an exec grant root.")
	w.rule(false, "process-exec", w.literals(DangerousBinaries), true)
	var inWritable, granted []string
	for _, p := range writable {
		inWritable = append(inWritable, w.subpaths(hostSpellings(p))...)
	}
	for _, p := range spec.ExecGrantRoots {
		granted = append(granted, w.subpaths(hostSpellings(p))...)
	}
	if len(inWritable) > 0 {
		f := anyOf(inWritable)
		if len(granted) > 0 {
			f = "(require-all " + f + " (require-not " + anyOf(granted) + "))"
		}
		w.rule(false, "process-exec", []string{f}, true)
	}

	w.comment("Network: the session's proxies and DNS only.")
	w.rule(false, "network*", nil, false)
	net := proxyFilters(spec.Egress.HTTPProxyPort, spec.Egress.SOCKSProxyPort)
	net = append(net, "(remote unix-socket "+w.f("path-literal", dnsSocket)+")")
	w.rule(true, "network-outbound", net, true)
	return w.done()
}

// Terminal is what the terminal profile is generated from.
type Terminal struct {
	// Home is $HOME, writable, with the secret paths denied. Required.
	Home string
	// Workdir is the session's working directory, writable.
	Workdir string
	// TmpDir is the session's temporary directory, writable. Empty: none.
	TmpDir string
	// Tag is the log tag (NewTag). Required.
	Tag string
}

// TerminalProfile returns seed 000's fixed terminal profile ("Terminal
// hébergé par le serveur"): $HOME and the working directory writable,
// the network open, reads of TerminalSecretPaths denied. The secret paths
// are also unwritable and cannot be renamed (a writable $HOME would
// otherwise let `mv ~/.ssh ~/x` expose them); nothing else is denied.
func TerminalProfile(t Terminal) (string, error) {
	if t.Home == "" || !filepath.IsAbs(t.Home) {
		return "", errors.New("darwin: terminal profile: Home must be an absolute path")
	}
	if !tagPattern.MatchString(t.Tag) {
		return "", fmt.Errorf("darwin: bad log tag %q", t.Tag)
	}
	w := &writer{tag: t.Tag}
	w.line("(version 1)")
	w.line("(allow default)")
	secrets := homePaths(t.Home, TerminalSecretPaths)
	w.secretReads(secrets)

	w.comment("Writes: $HOME, the working directory, the session's TMPDIR.")
	w.rule(false, "file-write*", nil, false)
	var allow []string
	for _, p := range []string{t.Home, t.Workdir, t.TmpDir} {
		if p != "" {
			allow = append(allow, w.subpaths(hostSpellings(p))...)
		}
	}
	allow = append(allow, w.literals(deviceWritePaths)...)
	w.rule(true, "file-write*", allow, true)
	var deny []string
	var unlink unlinkSet
	for _, p := range secrets {
		sp := hostSpellings(p)
		deny = append(deny, w.subpaths(sp)...)
		unlink.addPath(sp)
	}
	w.rule(false, "file-write*", deny, true)
	w.rule(false, "file-write-unlink", w.unlinkFilters(&unlink), true)
	return w.done()
}

// secretReads writes the read denies of the secret paths.
func (w *writer) secretReads(secrets []string) {
	w.comment("Reads: the secret paths are unreadable.")
	var deny []string
	for _, p := range secrets {
		deny = append(deny, w.subpaths(hostSpellings(p))...)
	}
	w.rule(false, "file-read*", deny, true)
}

func homePaths(home string, rel []string) []string {
	var out []string
	for _, r := range rel {
		p := filepath.Join(home, r)
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}
