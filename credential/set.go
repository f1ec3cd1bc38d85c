package credential

import (
	"strings"
)

// HostMatcher reports whether a request to host (canonical,
// netrule.CanonicalHost) on port may carry a secret's real value.
type HostMatcher func(host string, port int) bool

// Secret is one real value and the sentinel the sandbox sees instead.
type Secret struct {
	// Name names the secret for messages ("env AWS_SECRET_ACCESS_KEY",
	// "file ~/.netrc"): never its value.
	Name string
	// Real is the real value; Sentinel what the sandbox sees in its
	// place. Both non-empty.
	Real, Sentinel []byte
	// Hosts are the destinations the real value may be sent to.
	Hosts HostMatcher
}

// EnvRule is what becomes of one environment variable inside the
// sandbox.
type EnvRule struct {
	// Name is the variable's name.
	Name string
	// Deny unsets it; otherwise it is set to Shown (the value with its
	// secrets replaced by sentinels).
	Deny  bool
	Shown string
}

// AWSPair names the Secrets (by Secret.Name) holding one AWS credential
// the proxy re-signs SigV4 requests for; SessionToken may be "".
type AWSPair struct {
	AccessKeyID, SecretAccessKey, SessionToken string
}

// SigV4 policies for request shapes the proxy cannot re-sign.
type SigV4Policy struct {
	// PassStreaming, PassPresigned and PassSigV4A forward such a request
	// unsigned-again instead of refusing it with 403.
	PassStreaming, PassPresigned, PassSigV4A bool
}

// Options configure a Set.
type Options struct {
	// AllowPlaintext lets Egress inject into cleartext requests
	// (credentials.allowPlaintextInject).
	AllowPlaintext bool
	// Env are the environment rules Environ applies.
	Env []EnvRule
	// AWSPairs and SigV4 configure SigV4 re-signing.
	AWSPairs []AWSPair
	SigV4    SigV4Policy
}

// Set is every secret of one sandbox (a run of srt, a srtd session). A
// nil *Set holds nothing: every method is safe on it. Safe for
// concurrent use; immutable once made.
type Set struct {
	secrets []Secret
	opts    Options
	ingress *Replacer
}

// NewSet makes the Set of secrets. Sentinels must be unique and none a
// substring of another (Mint's are).
func NewSet(secrets []Secret, opts Options) *Set {
	s := &Set{secrets: secrets, opts: opts}
	pairs := make([]pair, 0, len(secrets))
	for _, sec := range secrets {
		pairs = append(pairs, pair{from: sec.Real, to: sec.Sentinel})
	}
	s.ingress = newReplacer(pairs)
	return s
}

// Len is the number of secrets.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.secrets)
}

// Egress is the sentinel→real replacer for a request to host (canonical)
// on port: the secrets whose Hosts allow it, when the request travels
// over TLS srt verified upstream (verifiedTLS) or AllowPlaintext is set.
// Nil when there is nothing to inject there.
func (s *Set) Egress(host string, port int, verifiedTLS bool) *Replacer {
	if s.Len() == 0 || (!verifiedTLS && !s.opts.AllowPlaintext) {
		return nil
	}
	var pairs []pair
	for _, sec := range s.secrets {
		if sec.Hosts != nil && sec.Hosts(host, port) {
			pairs = append(pairs, pair{from: sec.Sentinel, to: sec.Real})
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	return newReplacer(pairs)
}

// Ingress is the real→sentinel replacer for everything that goes back to
// the sandbox (responses, error pages). Nil when the Set is empty.
func (s *Set) Ingress() *Replacer {
	if s.Len() == 0 {
		return nil
	}
	return s.ingress
}

// Environ returns env ("K=V" entries) as the sandbox must see it: each
// EnvRule applied (denied variables removed, masked ones set to their
// shown value), then every other value with any real value replaced by
// its sentinel.
func (s *Set) Environ(env []string) []string {
	if s == nil {
		return env
	}
	rules := make(map[string]EnvRule, len(s.opts.Env))
	for _, r := range s.opts.Env {
		rules[r.Name] = r
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if r, ok := rules[k]; ok {
			if !r.Deny {
				out = append(out, k+"="+r.Shown)
			}
			continue
		}
		out = append(out, k+"="+s.Ingress().String(v))
	}
	return out
}

// Refusal is a request the proxy must refuse rather than forward
// (ResignSigV4): Status (403) and Reason, which names no secret.
type Refusal struct {
	Status int
	Reason string
}

func (r *Refusal) Error() string { return r.Reason }
