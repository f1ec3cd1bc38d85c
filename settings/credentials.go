package settings

import (
	"regexp"
	"strings"
	"unicode"
)

// Credentials is the top-level "credentials" object (reference 0.0.83
// "credentials"; issue 18): environment variables and files whose real
// values the sandboxed command must never read. mode "deny" withholds a
// value; mode "mask" shows a sentinel of the same shape inside the
// sandbox, and srt's proxy puts the real value back only in requests to
// the entry's injectHosts, over TLS srt terminated and verified upstream
// (unless AllowPlaintextInject).
type Credentials struct {
	// Files are credential files (credentials.files).
	Files []CredentialFile `json:"files,omitempty"`
	// EnvVars are credential environment variables (credentials.envVars).
	EnvVars []CredentialEnvVar `json:"envVars,omitempty"`
	// AllowPlaintextInject lets the proxy put a masked value back into a
	// request that travels in cleartext (plain HTTP).
	AllowPlaintextInject bool `json:"allowPlaintextInject,omitempty"`
	// AWSPairs link masked variables into AWS access-key pairs the proxy
	// re-signs SigV4 requests for (credentials.awsPairs). The
	// conventional AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
	// AWS_SESSION_TOKEN trio is paired without an entry.
	AWSPairs []AWSPair `json:"awsPairs,omitempty"`
	// SigV4 says what becomes of the SigV4 request shapes the proxy cannot
	// re-sign (credentials.sigv4).
	SigV4 SigV4 `json:"sigv4,omitempty"`
}

// Credential modes (credentials.files[].mode, credentials.envVars[].mode).
const (
	CredentialDeny = "deny"
	CredentialMask = "mask"
)

// What becomes of a masked entry whose extract (or decode) finds nothing
// (onExtractNoMatch). srt-go's default is "deny" (the reference's is
// "warn", which leaves the real value readable).
const (
	NoMatchDeny  = "deny"
	NoMatchWarn  = "warn"
	NoMatchError = "error"
)

// CredentialMasking is what a file entry and an environment entry share.
type CredentialMasking struct {
	// Mode is CredentialDeny or CredentialMask.
	Mode string `json:"mode"`
	// Extract, when set, is a regular expression (Go's RE2 syntax) whose
	// capture group 1 of each match is a secret: only those spans are
	// masked, the rest is shown as is.
	Extract string `json:"extract,omitempty"`
	// OnExtractNoMatch is NoMatchDeny (""), NoMatchWarn or NoMatchError.
	OnExtractNoMatch string `json:"onExtractNoMatch,omitempty"`
	// Decode is "" or "jwt": the value holds JSON Web Tokens, each masked
	// by a structurally valid fake.
	Decode string `json:"decode,omitempty"`
	// MaskClaims are the top-level payload claims masked in each token
	// (with Decode "jwt"); empty means the whole token.
	MaskClaims []string `json:"maskClaims,omitempty"`
	// InjectHosts are the domain patterns (allowedDomains grammar) the
	// real value may be sent to; nil means network.allowedDomains.
	InjectHosts []string `json:"injectHosts,omitempty"`
}

// CredentialFile is one credentials.files entry.
type CredentialFile struct {
	// Path is the file, absolute or "~/…".
	Path string `json:"path"`
	CredentialMasking
	// MaskDuplicates also masks every verbatim copy of an extracted value
	// outside the matched spans.
	MaskDuplicates bool `json:"maskDuplicates,omitempty"`
}

// CredentialEnvVar is one credentials.envVars entry.
type CredentialEnvVar struct {
	// Name is the variable's name.
	Name string `json:"name"`
	CredentialMasking
}

// AWSPair is one credentials.awsPairs entry: the names of the masked
// variables holding one AWS credential.
type AWSPair struct {
	AccessKeyIDVar     string `json:"accessKeyIdVar"`
	SecretAccessKeyVar string `json:"secretAccessKeyVar"`
	SessionTokenVar    string `json:"sessionTokenVar,omitempty"`
}

// SigV4 policies: "deny" ("", the default) answers 403; "passthrough"
// forwards the request without re-signing.
type SigV4 struct {
	Streaming string `json:"streaming,omitempty"`
	Presigned string `json:"presigned,omitempty"`
	SigV4A    string `json:"sigv4a,omitempty"`
}

var (
	credModes    = []string{CredentialDeny, CredentialMask}
	noMatchModes = []string{NoMatchDeny, NoMatchWarn, NoMatchError}
	sigv4Values  = []string{"deny", "passthrough"}
)

// credentials checks the top-level "credentials" object (reference
// 0.0.83 CredentialsConfigSchema, with srt-go's stricter defaults: an
// extract needs a capture group, onExtractNoMatch defaults to deny).
// null means absent (nil).
func (c *checker) credentials(n *node, path string) (*Credentials, error) {
	if n.kind == 'n' {
		return nil, nil
	}
	members, err := c.object(n, path)
	if err != nil {
		return nil, err
	}
	cr := &Credentials{}
	var pairs *member
	for i, m := range members {
		p := joinKey(path, m.name)
		switch m.name {
		case "files":
			cr.Files, err = c.credFiles(m.val, p)
		case "envVars":
			cr.EnvVars, err = c.credEnvVars(m.val, p)
		case "allowPlaintextInject":
			cr.AllowPlaintextInject, err = c.boolean(m.val, p)
		case "awsPairs":
			pairs = &members[i] // checked once envVars is known
		case "sigv4":
			cr.SigV4, err = c.sigv4(m.val, p)
		default:
			err = c.unknown(m, path, credentialsKeys)
		}
		if err != nil {
			return nil, err
		}
	}
	if pairs != nil {
		if cr.AWSPairs, err = c.awsPairs(pairs.val, joinKey(path, pairs.name), cr.EnvVars); err != nil {
			return nil, err
		}
	}
	return cr, nil
}

// entries returns the object elements of a credentials list; what names
// one element's shape for the message.
func (c *checker) entries(n *node, path, what string) ([]*node, error) {
	elems, err := c.array(n, path, "objects")
	if err != nil {
		return nil, err
	}
	for i, e := range elems {
		if e.kind != '{' {
			return nil, c.errorAt(e.off, joinIndex(path, i), nil, "expected an object %s, got %s", what, kindName(e.kind))
		}
	}
	return elems, nil
}

func (c *checker) credFiles(n *node, path string) ([]CredentialFile, error) {
	elems, err := c.entries(n, path, `{"path": ..., "mode": "deny" or "mask"}`)
	if err != nil || elems == nil {
		return nil, err
	}
	out := make([]CredentialFile, 0, len(elems))
	seen := map[string]int{}
	for i, e := range elems {
		p := joinIndex(path, i)
		var f CredentialFile
		var pathNode *node
		for _, m := range e.members {
			mp := joinKey(p, m.name)
			switch m.name {
			case "path":
				pathNode = m.val
				f.Path, err = c.str(m.val, mp, false)
			case "maskDuplicates":
				f.MaskDuplicates, err = c.boolean(m.val, mp)
			default:
				var ok bool
				if ok, err = c.maskingMember(m, mp, &f.CredentialMasking); !ok && err == nil {
					err = c.unknown(m, p, credFileKeys)
				}
			}
			if err != nil {
				return nil, err
			}
		}
		if pathNode == nil || pathNode.kind == 'n' {
			return nil, c.errorAt(e.off, p, nil, `missing key "path"`)
		}
		pp := joinKey(p, "path")
		switch {
		case !hostPath(f.Path):
			return nil, c.errorAt(pathNode.off, pp, nil, "%q must be an absolute path or start with ~/", f.Path)
		case strings.IndexByte(f.Path, 0) >= 0 || strings.ContainsFunc(f.Path, unicode.IsControl):
			return nil, c.errorAt(pathNode.off, pp, nil, "path contains a NUL byte or a control character")
		case strings.ContainsAny(f.Path, "*?[{"):
			// Not a glob here: a mask names one file, and a deny that
			// expanded a glob at start would miss a file made later.
			return nil, c.errorAt(pathNode.off, pp, nil, "%q: a credential file is one path, not a glob; list each file", f.Path)
		}
		if first, dup := seen[f.Path]; dup {
			return nil, c.errorAt(pathNode.off, pp, nil, "%q is also credentials.files[%d]", f.Path, first)
		}
		seen[f.Path] = i
		if err := c.checkMasking(e, p, f.CredentialMasking); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

func (c *checker) credEnvVars(n *node, path string) ([]CredentialEnvVar, error) {
	elems, err := c.entries(n, path, `{"name": ..., "mode": "deny" or "mask"}`)
	if err != nil || elems == nil {
		return nil, err
	}
	out := make([]CredentialEnvVar, 0, len(elems))
	seen := map[string]int{}
	for i, e := range elems {
		p := joinIndex(path, i)
		var v CredentialEnvVar
		var nameNode *node
		for _, m := range e.members {
			mp := joinKey(p, m.name)
			if m.name == "name" {
				nameNode = m.val
				v.Name, err = c.str(m.val, mp, false)
			} else {
				var ok bool
				if ok, err = c.maskingMember(m, mp, &v.CredentialMasking); !ok && err == nil {
					err = c.unknown(m, p, credEnvKeys)
				}
			}
			if err != nil {
				return nil, err
			}
		}
		if nameNode == nil || nameNode.kind == 'n' {
			return nil, c.errorAt(e.off, p, nil, `missing key "name"`)
		}
		np := joinKey(p, "name")
		if !envName(v.Name) {
			return nil, c.errorAt(nameNode.off, np, nil, "%s is not an environment variable name (letters, digits and _, not starting with a digit)", quoteKey(v.Name))
		}
		if first, dup := seen[v.Name]; dup {
			return nil, c.errorAt(nameNode.off, np, nil, "%q is also credentials.envVars[%d]", v.Name, first)
		}
		seen[v.Name] = i
		if err := c.checkMasking(e, p, v.CredentialMasking); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// envName reports whether s is a portable environment variable name
// (POSIX.1-2017 §8.1: letters, digits and '_', not starting with a digit).
func envName(s string) bool {
	for i, r := range s {
		if !(r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return s != ""
}

// maskingMember reads one key CredentialMasking holds into cm; ok is
// false for any other key.
func (c *checker) maskingMember(m member, path string, cm *CredentialMasking) (ok bool, err error) {
	switch m.name {
	case "mode":
		cm.Mode, err = c.oneOf(m.val, path, credModes)
	case "extract":
		cm.Extract, err = c.str(m.val, path, true)
	case "onExtractNoMatch":
		cm.OnExtractNoMatch, err = c.oneOf(m.val, path, noMatchModes)
	case "decode":
		cm.Decode, err = c.oneOf(m.val, path, []string{"jwt"})
	case "maskClaims":
		if m.val.kind != 'n' {
			cm.MaskClaims, err = c.strList(m.val, path, "claim names")
			if err == nil && cm.MaskClaims == nil {
				cm.MaskClaims = []string{}
			}
		}
	case "injectHosts":
		if m.val.kind != 'n' {
			cm.InjectHosts, err = c.domains(m.val, path, false)
			if err == nil && cm.InjectHosts == nil {
				cm.InjectHosts = []string{}
			}
		}
	default:
		return false, nil
	}
	return true, err
}

// checkMasking checks what an entry's keys say together: a mode, an
// extract that compiles and has a capture group, maskClaims only with
// decode and never empty.
func (c *checker) checkMasking(e *node, path string, cm CredentialMasking) error {
	at := func(key string) (int64, string) {
		for _, m := range e.members {
			if m.name == key {
				return m.val.off, joinKey(path, key)
			}
		}
		return e.off, path
	}
	if cm.Mode == "" {
		return c.errorAt(e.off, path, nil, `missing key "mode" ("deny" or "mask")`)
	}
	if cm.Mode == CredentialDeny {
		// A deny entry withholds the whole value: a masking key there
		// means the entry was meant to be "mask" (the reference ignores
		// them, which would hide that mistake).
		for _, m := range e.members {
			switch m.name {
			case "extract", "onExtractNoMatch", "decode", "maskClaims", "injectHosts", "maskDuplicates":
				if m.val.kind != 'n' {
					return c.errorAt(m.val.off, joinKey(path, m.name), nil, `only with "mode": "mask" (a deny entry withholds the whole value)`)
				}
			}
		}
	}
	if cm.Extract != "" {
		off, p := at("extract")
		re, err := regexp.Compile(cm.Extract)
		if err != nil {
			return c.errorAt(off, p, err, "not a regular expression (Go RE2 syntax): %v", err)
		}
		if re.NumSubexp() < 1 {
			return c.errorAt(off, p, nil, "needs a capture group: group 1 of each match is the secret")
		}
	}
	if cm.MaskClaims != nil {
		off, p := at("maskClaims")
		switch {
		case cm.Decode == "":
			return c.errorAt(off, p, nil, `needs "decode": "jwt" (claims are inside a decoded token)`)
		case len(cm.MaskClaims) == 0:
			return c.errorAt(off, p, nil, "empty; leave the key out to mask the whole token")
		}
		for i, cl := range cm.MaskClaims {
			if cl == "" {
				return c.errorAt(off, joinIndex(p, i), nil, "a claim name cannot be empty")
			}
		}
	}
	return nil
}

// awsPairs checks credentials.awsPairs against envVars: every name must
// be a masked whole-value entry (no extract, no decode), since the proxy
// re-signs with the whole real value.
func (c *checker) awsPairs(n *node, path string, vars []CredentialEnvVar) ([]AWSPair, error) {
	elems, err := c.entries(n, path, `{"accessKeyIdVar": ..., "secretAccessKeyVar": ...}`)
	if err != nil || elems == nil {
		return nil, err
	}
	whole := map[string]bool{}
	for _, v := range vars {
		whole[v.Name] = v.Mode == CredentialMask && v.Extract == "" && v.Decode == ""
	}
	out := make([]AWSPair, 0, len(elems))
	for i, e := range elems {
		p := joinIndex(path, i)
		var a AWSPair
		for _, m := range e.members {
			mp := joinKey(p, m.name)
			var dst *string
			switch m.name {
			case "accessKeyIdVar":
				dst = &a.AccessKeyIDVar
			case "secretAccessKeyVar":
				dst = &a.SecretAccessKeyVar
			case "sessionTokenVar":
				dst = &a.SessionTokenVar
			default:
				return nil, c.unknown(m, p, awsPairKeys)
			}
			if *dst, err = c.str(m.val, mp, true); err != nil {
				return nil, err
			}
			if m.val.kind == 'n' {
				continue
			}
			ok, declared := whole[*dst]
			switch {
			case !declared:
				return nil, c.errorAt(m.val.off, mp, nil, "%s is not a credentials.envVars entry", quoteKey(*dst))
			case !ok:
				return nil, c.errorAt(m.val.off, mp, nil, `%s must be a "mask" entry without extract or decode (the proxy signs with the whole value)`, quoteKey(*dst))
			}
		}
		for _, k := range []struct{ key, v string }{{"accessKeyIdVar", a.AccessKeyIDVar}, {"secretAccessKeyVar", a.SecretAccessKeyVar}} {
			if k.v == "" {
				return nil, c.errorAt(e.off, p, nil, "missing key %q", k.key)
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// sigv4 checks credentials.sigv4: each key "deny" or "passthrough".
func (c *checker) sigv4(n *node, path string) (SigV4, error) {
	var s SigV4
	members, err := c.object(n, path)
	if err != nil {
		return s, err
	}
	for _, m := range members {
		p := joinKey(path, m.name)
		switch m.name {
		case "streaming":
			s.Streaming, err = c.oneOf(m.val, p, sigv4Values)
		case "presigned":
			s.Presigned, err = c.oneOf(m.val, p, sigv4Values)
		case "sigv4a":
			s.SigV4A, err = c.oneOf(m.val, p, sigv4Values)
		default:
			err = c.unknown(m, path, sigv4Keys)
		}
		if err != nil {
			return s, err
		}
	}
	return s, nil
}
