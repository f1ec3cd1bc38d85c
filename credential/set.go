package credential

import (
	"encoding/binary"
	"strings"
	"sync"
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
	// egress are, per secret (same index), its sentinel→real pairs.
	egress [][]pair
	// egressCache holds the Egress replacers made, by the secrets they
	// inject (their indexes, uvarints): at most one per subset of secrets
	// a destination selects, in practice a few.
	egressCache sync.Map
}

// NewSet makes the Set of secrets. Sentinels must be unique and none a
// substring of another (Mint's are).
//
// The replacers look for each value in the forms it takes on the wire
// too: Ingress for the real value raw, percent-encoded, JSON-escaped and
// base64-encoded at any alignment inside a longer base64 text
// (base64Pairs); Egress for the sentinel raw, percent-encoded and
// JSON-escaped (textPairs), each replaced by the same form of the other
// value. A sentinel that needs no escaping where its real value does
// (a fallback sentinel for a short password) is replaced by the raw real
// value.
func NewSet(secrets []Secret, opts Options) *Set {
	s := &Set{secrets: secrets, opts: opts, egress: make([][]pair, len(secrets))}
	var raw, forms []pair
	for i, sec := range secrets {
		tp := textPairs(sec.Real, sec.Sentinel)
		raw = append(raw, tp[0])
		forms = append(append(append(forms, tp[1:]...), base64Pairs(sec.Real, sec.Sentinel)...), hexPairs(sec.Real, sec.Sentinel)...)
		s.egress[i] = textPairs(sec.Sentinel, sec.Real)
	}
	// Raw values first: of two equal patterns the first wins.
	s.ingress = newReplacer(append(raw, forms...))
	return s
}

// Names are the secrets' names (Secret.Name), for logs and messages.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	names := make([]string, len(s.secrets))
	for i, sec := range s.secrets {
		names[i] = sec.Name
	}
	return names
}

// Scrub is str with every real value (in any form Ingress knows)
// replaced by its sentinel: for error pages, messages and records that
// go back to the sandbox.
func (s *Set) Scrub(str string) string { return s.Ingress().String(str) }

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
	var which []byte // the indexes of the secrets injected here
	for i, sec := range s.secrets {
		// A secret without Hosts is injected nowhere.
		if sec.Hosts != nil && sec.Hosts(host, port) {
			which = binary.AppendUvarint(which, uint64(i))
		}
	}
	if len(which) == 0 {
		return nil
	}
	if r, ok := s.egressCache.Load(string(which)); ok {
		return r.(*Replacer)
	}
	var pairs []pair
	for b := which; len(b) > 0; {
		i, n := binary.Uvarint(b)
		pairs = append(pairs, s.egress[i]...)
		b = b[n:]
	}
	r, _ := s.egressCache.LoadOrStore(string(which), newReplacer(pairs))
	return r.(*Replacer)
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
