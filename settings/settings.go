// Package settings reads and validates srt's settings file
// (~/.srt-settings.json), the format of the reference srt (seed 003,
// "Configuration"). It only parses and checks: turning settings into
// mounts and proxy rules is the policy package's job.
package settings

// Settings is the whole settings file. The zero value is the built-in
// default: reads allowed everywhere, writes nowhere but the default write
// paths, no network.
//
// The reference requires "network", "filesystem" and their lists
// (allowedDomains, deniedDomains, denyRead, allowWrite, denyWrite). srt-go
// deliberately accepts them missing: a missing list is an empty list,
// which is the safe default (no network, no extra writes, no extra
// read denies beyond the mandatory ones).
type Settings struct {
	// Network holds the egress rules enforced by the per-session proxies.
	Network Network `json:"network"`
	// Filesystem holds the read and write rules enforced by the bind mounts.
	Filesystem Filesystem `json:"filesystem"`
	// IgnoreViolations maps a command pattern ("*" for every command, else a
	// substring of the command text) to substrings of violation lines that
	// are not reported. It filters reporting only, never enforcement.
	IgnoreViolations map[string][]string `json:"ignoreViolations,omitempty"`
	// EnableWeakerNestedSandbox lets srt run where a fresh /proc cannot be
	// mounted (unprivileged containers), with weaker isolation.
	EnableWeakerNestedSandbox bool `json:"enableWeakerNestedSandbox,omitempty"`
	// AllowNestedUserNamespaces lets the command create user namespaces
	// (browsers, rootless podman, nested bwrap).
	AllowNestedUserNamespaces bool `json:"allowNestedUserNamespaces,omitempty"`
	// EnableWeakerNetworkIsolation is macOS only (trustd.agent lookups).
	EnableWeakerNetworkIsolation bool `json:"enableWeakerNetworkIsolation,omitempty"`
	// AllowAppleEvents is macOS only.
	AllowAppleEvents bool `json:"allowAppleEvents,omitempty"`
	// MandatoryDenySearchDepth is how many directory levels below the
	// working directory the mandatory write-denies are searched for, 1..10.
	// Zero means the default, 3.
	MandatoryDenySearchDepth int `json:"mandatoryDenySearchDepth,omitempty"`
	// AllowPty is macOS only in the reference; on Linux the command always
	// gets a terminal of its own when srt runs in one.
	AllowPty bool `json:"allowPty,omitempty"`
	// BwrapPath is an absolute path to bubblewrap. Empty means "bwrap" on PATH.
	BwrapPath string `json:"bwrapPath,omitempty"`
	// Git holds git-specific settings.
	Git Git `json:"git,omitempty"`
	// Credentials are the secrets the sandboxed command must not read in
	// clear (reference 0.0.83 "credentials"; issue 18); nil for none.
	Credentials *Credentials `json:"credentials,omitempty"`

	// Ignored lists the dotted paths of keys that were accepted but have no
	// effect in this implementation (the reference's helper settings such as
	// "ripgrep" or "socatPath"), so a caller can log them at debug level.
	Ignored []string `json:"-"`
	// Source is the file Load read the settings from, made absolute; empty
	// for settings that came from elsewhere. The policy write-protects it
	// (policy.Compile): a sandbox that could rewrite it would choose the
	// next run's policy.
	Source string `json:"-"`

	// pos locates the values of the file Parse read, for ErrorAt; nil
	// for settings that did not come from Parse.
	pos *positions
}

// ErrorAt returns err as a problem with the value at the dotted path
// (as in Error.Path: "network.tlsTerminate.caKeyPath") of the file s was
// read from: an *Error with File s.Source, Path path and Err err, and
// the Line and Column where that value starts in the file, or where its
// nearest enclosing value starts when the file does not spell path
// (a key left out, an index past the end). Its text is the parser's:
// "FILE:LINE:COLUMN: PATH: ERR". It is for errors found after parsing,
// such as policy.Compile's (a CA file that does not load). errors.Is and
// errors.As see err through it.
//
// For settings that came from no file (s nil, Default, or Source
// empty) the *Error has no File, Line nor Column: "PATH: ERR". A nil
// err gives nil.
func (s *Settings) ErrorAt(path string, err error) error {
	if err == nil {
		return nil
	}
	e := &Error{Path: path, Err: err}
	if s == nil || s.Source == "" {
		return e
	}
	e.File = s.Source
	if s.pos != nil {
		e.Line, e.Column = s.pos.find(path)
	}
	return e
}

// Network is the "network" object.
type Network struct {
	// AllowedDomains is the egress allow-list. Empty means no network.
	AllowedDomains []string `json:"allowedDomains"`
	// DeniedDomains is checked before AllowedDomains and wins over it.
	DeniedDomains []string `json:"deniedDomains"`
	// DeniedDomainReasons maps an exact DeniedDomains entry to the reason
	// reported when that entry refuses a connection.
	DeniedDomainReasons map[string]string `json:"deniedDomainReasons,omitempty"`
	// AllowlistDenyReason is the reason reported for hosts that are not on
	// the allow-list. Empty means a generic reason.
	AllowlistDenyReason string `json:"allowlistDenyReason,omitempty"`
	// StrictAllowlist: hosts not on the allow-list are denied without asking.
	StrictAllowlist bool `json:"strictAllowlist,omitempty"`
	// DeniedResolvedAddresses are extra IPs/CIDRs that allowed host names
	// must not resolve to.
	DeniedResolvedAddresses []string `json:"deniedResolvedAddresses,omitempty"`
	// AllowUnixSockets is macOS only (a path allow-list).
	AllowUnixSockets []string `json:"allowUnixSockets,omitempty"`
	// AllowAllUnixSockets turns off the seccomp AF_UNIX rule on Linux.
	AllowAllUnixSockets bool `json:"allowAllUnixSockets,omitempty"`
	// AllowLocalBinding is macOS only; on Linux the sandbox's loopback is
	// private, so binding to it is always allowed.
	AllowLocalBinding bool `json:"allowLocalBinding,omitempty"`
	// AllowMachLookup is macOS only.
	AllowMachLookup []string `json:"allowMachLookup,omitempty"`
	// HTTPProxyPort, when non-zero, is a user-run HTTP proxy on the host's
	// loopback used instead of srt's own.
	HTTPProxyPort int `json:"httpProxyPort,omitempty"`
	// SOCKSProxyPort, when non-zero, is a user-run SOCKS5 proxy on the
	// host's loopback used instead of srt's own.
	SOCKSProxyPort int `json:"socksProxyPort,omitempty"`
	// ParentProxy is the upstream proxy srt's own proxies connect through
	// (reference 0.0.83 "parentProxy"), nil when the key is absent or
	// null. Each of its keys left out takes srt's own HTTP_PROXY /
	// HTTPS_PROXY / NO_PROXY instead (policy.NetworkOf).
	ParentProxy *ParentProxy `json:"parentProxy,omitempty"`
	// MITMProxy sends the connections to its domains through an HTTP
	// proxy on a unix socket (network.mitmProxy), nil when the key is
	// absent or null. It wins over ParentProxy for those domains.
	MITMProxy *MITMProxy `json:"mitmProxy,omitempty"`
	// TLSTerminate turns on TLS termination in the HTTP proxy's CONNECT
	// tunnels (network.tlsTerminate), nil when the key is absent or null.
	TLSTerminate *TLSTerminate `json:"tlsTerminate,omitempty"`
	// RequireHostMatch is network.requireHostMatch: inside a terminated
	// tunnel, the TLS server name, the CONNECT target and every request's
	// Host/:authority must name the same host. nil (absent or null) means
	// on whenever TLSTerminate is set (issue 17: on by default when
	// terminating; the reference defaults it off). Read it with
	// HostMatch.
	RequireHostMatch *bool `json:"requireHostMatch,omitempty"`
	// HTTPRules are the per-host method and path rules (srt-go; see
	// HTTPRule), nil when absent.
	HTTPRules []HTTPRule `json:"httpRules,omitempty"`
	// RefuseOpaqueTunnels refuses every tunnel srt cannot see into: each
	// SOCKS5 CONNECT, each HTTP CONNECT that is not TLS-terminated.
	RefuseOpaqueTunnels bool `json:"refuseOpaqueTunnels,omitempty"`
	// RefuseOpaqueTunnelsSet says the file gave refuseOpaqueTunnels: a
	// masked credential turns the refusal on unless the file says false
	// (policy.Compile).
	RefuseOpaqueTunnelsSet bool `json:"-"`
	// AmbiguousRequestTarget is "refuse" (also when empty), "asSpelled"
	// or "normalize": what becomes of a filtered request whose target
	// normalises to another path (proxy.AmbiguousTarget).
	AmbiguousRequestTarget string `json:"ambiguousRequestTarget,omitempty"`
	// StripResponseHeaders are response headers never passed back to the
	// sandbox, matched case-insensitively with '-', '_' and '.' folded.
	StripResponseHeaders []string `json:"stripResponseHeaders,omitempty"`
	// AllowAllDomains allows every host name, DeniedDomains and the rest
	// of the guards still winning (netrule.Rules.AllowAll). It has no
	// settings-file key, on purpose: only a library caller sets it
	// (srtd's terminal profile, "network open").
	AllowAllDomains bool `json:"-"`
}

// HostMatch reports whether network.requireHostMatch is on: its value
// when given, else true.
func (n Network) HostMatch() bool { return n.RequireHostMatch == nil || *n.RequireHostMatch }

// Filesystem is the "filesystem" object.
type Filesystem struct {
	// DenyRead lists paths (or globs) that cannot be read.
	DenyRead []PathEntry `json:"denyRead"`
	// AllowRead re-opens paths inside a DenyRead area; a more specific
	// DenyRead entry still wins.
	AllowRead []PathEntry `json:"allowRead,omitempty"`
	// AllowWrite lists the only paths that can be written (plus the default
	// write paths).
	AllowWrite []PathEntry `json:"allowWrite"`
	// DenyWrite carves read-only holes in AllowWrite; it always wins.
	DenyWrite []PathEntry `json:"denyWrite"`
	// AllowGitConfig makes .git/config writable. Hooks stay protected.
	AllowGitConfig bool `json:"allowGitConfig,omitempty"`
	// Disabled turns the filesystem policy off entirely (no mandatory
	// denies either).
	Disabled bool `json:"disabled,omitempty"`
	// EnforceNamesAtCreation (srt-go) enforces every write-deny glob and
	// mandatory name at any depth when a name comes into being (create,
	// mkdir, mknod, rename, link, symlink, write opens, truncate). On
	// Linux srt performs those calls for the command from outside the
	// sandbox and refuses the matching ones (sandbox/linux/supervisor);
	// macOS's Seatbelt profiles match names at creation by themselves.
	// nil (absent) means on where the host can enforce it; false turns
	// it off; true makes a host that cannot enforce it an error. Read it
	// with NamesAtCreation.
	EnforceNamesAtCreation *bool `json:"enforceNamesAtCreation,omitempty"`
}

// NamesAtCreation returns whether filesystem.enforceNamesAtCreation is on
// (absent counts as on) and whether the settings say so explicitly.
func (f Filesystem) NamesAtCreation() (on, explicit bool) {
	if f.EnforceNamesAtCreation == nil {
		return true, false
	}
	return *f.EnforceNamesAtCreation, true
}

// PathEntry is one path rule: in JSON either a string or
// {"path": "...", "literal": true}. A path may be absolute, "~", "~/x" or
// relative to the working directory. Unless Literal, glob characters
// (*, ?, [, {) make it a pattern.
type PathEntry struct {
	Path    string `json:"path"`
	Literal bool   `json:"literal,omitempty"`
}

// Git is the "git" object.
type Git struct {
	// SafeDirectories are passed to git as safe.directory values.
	SafeDirectories []string `json:"safeDirectories,omitempty"`
}

// DefaultMandatoryDenySearchDepth is used when MandatoryDenySearchDepth is 0.
const DefaultMandatoryDenySearchDepth = 3

// SearchDepth returns MandatoryDenySearchDepth, or the default when unset.
func (s *Settings) SearchDepth() int {
	if s.MandatoryDenySearchDepth == 0 {
		return DefaultMandatoryDenySearchDepth
	}
	return s.MandatoryDenySearchDepth
}
