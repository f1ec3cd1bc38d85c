package policy

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/srt-go/srt/credential"
	"github.com/srt-go/srt/netrule"
	"github.com/srt-go/srt/settings"
)

// SessionCredentials is a srtd session's "credentials" (issue 18): the
// settings' credentials.envVars with each real value carried in the spec
// (an agent server passes a per-launch token's value; srtd has no host
// environment to read it from). Files are not offered: a session's files
// are its binds.
type SessionCredentials struct {
	// EnvVars are the variables, each shown to every exec of the session
	// as its sentinel (mode "mask") or never set (mode "deny").
	EnvVars []SessionEnvVar `json:"envVars,omitempty"`
	// AllowPlaintextInject lets the proxy put a masked value back into a
	// cleartext request (settings.Credentials.AllowPlaintextInject).
	AllowPlaintextInject bool `json:"allowPlaintextInject,omitempty"`
}

// SessionEnvVar is one SessionCredentials.EnvVars entry: the settings'
// entry plus its real value.
type SessionEnvVar struct {
	settings.CredentialEnvVar
	// Value is the real value: required for mode "mask", ignored for
	// "deny". Never echoed: Redacted replaces it with RedactedValue.
	Value string `json:"value,omitempty"`
}

// RedactedValue is what a session's echo shows in place of a value.
const RedactedValue = "<redacted>"

// MaxSessionEnvVars bounds SessionCredentials.EnvVars; MaxSecretLen one
// value, bytes.
const (
	MaxSessionEnvVars = 64
	MaxSecretLen      = 64 << 10
)

// Redacted returns c with every value replaced by RedactedValue (nil for
// nil): what a session keeps and shows of its credentials.
func (c *SessionCredentials) Redacted() *SessionCredentials {
	if c == nil {
		return nil
	}
	out := &SessionCredentials{AllowPlaintextInject: c.AllowPlaintextInject, EnvVars: make([]SessionEnvVar, len(c.EnvVars))}
	for i, e := range c.EnvVars {
		if e.Value != "" {
			e.Value = RedactedValue
		}
		e.MaskClaims = append([]string(nil), e.MaskClaims...)
		e.InjectHosts = append([]string(nil), e.InjectHosts...)
		out.EnvVars[i] = e
	}
	return out
}

// FieldError is a credentials entry at fault: Field names it as in the
// spec ("credentials.envVars[0].injectHosts[1]"), Reason says why and
// never holds a value. It wraps ErrUnenforceable when the entry is well
// formed but cannot be honoured (an injectHosts entry the session's
// egress rules do not reach).
type FieldError struct {
	Field, Reason string
	Err           error
}

func (e *FieldError) Error() string { return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason) }
func (e *FieldError) Unwrap() error { return e.Err }

// CheckSessionCredentials checks c's form (nil is fine): at most
// MaxSessionEnvVars entries with unique names, each a name exec could
// carry (non-empty, no '=' or NUL), mode "mask" or "deny"; a mask entry
// has a value of 1..MaxSecretLen bytes without NUL, an extract that
// compiles (RE2) with a capture group, decode "" or "jwt", maskClaims
// only with "jwt", onExtractNoMatch one of the three, and injectHosts in
// the allowedDomains grammar. Errors are *FieldError (not unenforceable).
func CheckSessionCredentials(c *SessionCredentials) error {
	if c == nil {
		return nil
	}
	if len(c.EnvVars) > MaxSessionEnvVars {
		return &FieldError{Field: "credentials.envVars", Reason: fmt.Sprintf("%d entries, at most %d", len(c.EnvVars), MaxSessionEnvVars)}
	}
	seen := map[string]int{}
	for i, e := range c.EnvVars {
		f := fmt.Sprintf("credentials.envVars[%d]", i)
		if e.Name == "" || strings.ContainsAny(e.Name, "=\x00") {
			return &FieldError{Field: f + ".name", Reason: "must be non-empty without '=' or NUL"}
		}
		if j, ok := seen[e.Name]; ok {
			return &FieldError{Field: f + ".name", Reason: fmt.Sprintf("%s is also credentials.envVars[%d]", e.Name, j)}
		}
		seen[e.Name] = i
		switch e.Mode {
		case settings.CredentialDeny:
			continue
		case settings.CredentialMask:
		default:
			return &FieldError{Field: f + ".mode", Reason: fmt.Sprintf("unknown mode %q; one of mask, deny", e.Mode)}
		}
		switch {
		case e.Value == "":
			return &FieldError{Field: f + ".value", Reason: "must not be empty for mode mask"}
		case len(e.Value) > MaxSecretLen:
			return &FieldError{Field: f + ".value", Reason: fmt.Sprintf("%d bytes, at most %d", len(e.Value), MaxSecretLen)}
		case strings.ContainsRune(e.Value, 0):
			return &FieldError{Field: f + ".value", Reason: "contains a NUL byte"}
		case len(e.InjectHosts) == 0:
			// A session's egress is the broad baseline (LLM providers,
			// registries, forges): a value for one of them must not go to
			// all of them by default.
			return &FieldError{Field: f + ".injectHosts", Reason: "required for mode mask: name the hosts the value is for (a session's egress allows many)"}
		}
		if e.Extract != "" {
			re, err := regexp.Compile(e.Extract)
			if err != nil {
				return &FieldError{Field: f + ".extract", Reason: err.Error()}
			}
			if re.NumSubexp() < 1 {
				return &FieldError{Field: f + ".extract", Reason: "needs a capture group: group 1 of each match is the secret"}
			}
		}
		switch e.Decode {
		case "", "jwt":
		default:
			return &FieldError{Field: f + ".decode", Reason: fmt.Sprintf("unknown decode %q; \"jwt\" or absent", e.Decode)}
		}
		if len(e.MaskClaims) > 0 && e.Decode != "jwt" {
			return &FieldError{Field: f + ".maskClaims", Reason: `only with decode "jwt"`}
		}
		switch e.OnExtractNoMatch {
		case "", settings.NoMatchDeny, settings.NoMatchWarn, settings.NoMatchError:
		default:
			return &FieldError{Field: f + ".onExtractNoMatch", Reason: fmt.Sprintf("unknown value %q; one of deny, warn, error", e.OnExtractNoMatch)}
		}
		for j, h := range e.InjectHosts {
			if _, err := netrule.ParsePattern(h, false); err != nil {
				return &FieldError{Field: fmt.Sprintf("%s.injectHosts[%d]", f, j), Reason: err.Error()}
			}
		}
	}
	return nil
}

// CompileSessionCredentials makes the credential.Set of a session whose
// egress is decided by egress (CheckSessionCredentials already passed),
// and the environment every exec starts from: name → shown value (the
// sentinel) for each mask entry. Each injectHosts entry must be reachable
// through egress (a host of its form on port 443 allowed: for a wildcard
// pattern, one of its subdomains); one that is not is a *FieldError
// wrapping ErrUnenforceable, since the value could never be sent there.
// An entry of mode mask must name its injectHosts (CheckSessionCredentials):
// a session's egress is broad. An extract or decode
// that finds nothing in the value follows onExtractNoMatch: "deny" (the
// default) and "warn" withhold the variable (srtd has no log line a
// caller reads; showing the real value is never an option here), "error"
// fails the launch.
func CompileSessionCredentials(c *SessionCredentials, egress *netrule.Policy) (*credential.Set, map[string]string, error) {
	if c == nil || len(c.EnvVars) == 0 {
		return nil, nil, nil
	}
	var secrets []credential.Secret
	var rules []credential.EnvRule
	shown := map[string]string{}
	for i, e := range c.EnvVars {
		f := fmt.Sprintf("credentials.envVars[%d]", i)
		if e.Mode == settings.CredentialDeny {
			rules = append(rules, credential.EnvRule{Name: e.Name, Deny: true})
			continue
		}
		hosts, err := injectMatcher(f, e.InjectHosts, egress)
		if err != nil {
			return nil, nil, err
		}
		m := credential.Mask{JWT: e.Decode == "jwt", MaskClaims: e.MaskClaims}
		if e.Extract != "" {
			m.Extract = regexp.MustCompile(e.Extract) // checked by CheckSessionCredentials
		}
		masked, err := credential.MaskValue([]byte(e.Value), m)
		if err != nil {
			return nil, nil, &FieldError{Field: f + ".extract", Reason: err.Error()}
		}
		if len(masked.Values) == 0 {
			if e.OnExtractNoMatch == settings.NoMatchError {
				return nil, nil, &FieldError{Field: f + ".extract", Reason: "found nothing to mask in the value (onExtractNoMatch error)", Err: ErrUnenforceable}
			}
			rules = append(rules, credential.EnvRule{Name: e.Name, Deny: true})
			continue
		}
		for _, v := range masked.Values {
			secrets = append(secrets, credential.Secret{Name: "env " + e.Name, Real: v.Real, Sentinel: v.Sentinel, Hosts: hosts})
		}
		rules = append(rules, credential.EnvRule{Name: e.Name, Shown: string(masked.Shown)})
		shown[e.Name] = string(masked.Shown)
	}
	return credential.NewSet(secrets, credential.Options{AllowPlaintext: c.AllowPlaintextInject, Env: rules}), shown, nil
}

// injectMatcher is the HostMatcher of one entry's injectHosts (field f),
// each checked against egress; an empty list is refused.
func injectMatcher(f string, list []string, egress *netrule.Policy) (credential.HostMatcher, error) {
	if len(list) == 0 { // CheckSessionCredentials refuses it; never inject everywhere
		return nil, &FieldError{Field: f + ".injectHosts", Reason: "required for mode mask"}
	}
	pats := make([]netrule.Pattern, len(list))
	for j, h := range list {
		p, err := netrule.ParsePattern(h, false)
		if err != nil {
			return nil, &FieldError{Field: fmt.Sprintf("%s.injectHosts[%d]", f, j), Reason: err.Error()}
		}
		sample := p.Host
		switch p.Kind {
		case netrule.KindSubdomains:
			sample = "srt-sample." + p.Host
		case netrule.KindLabel:
			sample = strings.Replace(p.Host, "*", "srt-sample", 1)
		case netrule.KindIP:
			sample = p.IP.String()
		}
		port := 443
		if p.Port != 0 {
			port = p.Port
		}
		if d := egress.Decide(sample, port); !d.Allowed {
			return nil, &FieldError{Field: fmt.Sprintf("%s.injectHosts[%d]", f, j), Err: ErrUnenforceable,
				Reason: fmt.Sprintf("%s is not reachable by this session's egress rules (%s): the value could never be sent there", h, d.Reason)}
		}
		pats[j] = p
	}
	return matchAny(pats), nil
}
