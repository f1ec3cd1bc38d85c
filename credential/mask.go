package credential

import (
	"bytes"
	"errors"
	"regexp"
	"sort"
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

// Errors of MaskValue, about the Mask (wrapped by the caller with the
// setting's key).
var (
	// ErrNoGroup: Extract has no capture group 1 to mask.
	ErrNoGroup = errors.New("extract pattern has no capture group")
	// ErrClaimsWithoutJWT: MaskClaims is set but JWT is not.
	ErrClaimsWithoutJWT = errors.New("maskClaims needs decode jwt")
)

// MaskValue masks real as m says (reference 0.0.83 credentials "mask",
// "extract", "decode", "maskClaims", "maskDuplicates"):
//
//   - zero Mask: the whole of real is one Value, Shown its Mint sentinel;
//   - Extract: group 1 of each match is masked; each distinct captured
//     value gets one sentinel (the same value, the same sentinel); a match
//     in which group 1 did not take part or is empty is skipped;
//   - JWT: each candidate (group 1 of Extract, else of jwtPattern) that
//     verifies as a JWT is replaced by fakeJWT, or with MaskClaims by
//     maskClaims' rebuilt token (then Values hold the whole token and each
//     claim); a candidate that does not verify, or has none of the claims,
//     is left as it is;
//   - MaskDuplicates: every verbatim copy of a masked value elsewhere in
//     real is replaced too (longest value first; matched spans win).
//
// An error is about m (ErrNoGroup, ErrClaimsWithoutJWT); finding nothing
// is not one: Values is empty and Shown is real.
func MaskValue(real []byte, m Mask) (Masked, error) {
	if len(m.MaskClaims) > 0 && !m.JWT {
		return Masked{}, ErrClaimsWithoutJWT
	}
	re := m.Extract
	if re == nil && !m.JWT {
		// The secret is the value without the white space around it: a
		// token file ends with a newline that `$(cat file)` and most
		// readers drop, and the sentinel must still match what they send.
		secret := bytes.TrimSpace(real)
		if len(secret) == 0 {
			return Masked{Shown: real}, nil
		}
		lead := bytes.Index(real, secret)
		s := Mint(secret)
		shown := append(append(append([]byte{}, real[:lead]...), s...), real[lead+len(secret):]...)
		return Masked{Shown: shown, Values: []Value{{Real: secret, Sentinel: s}}}, nil
	}
	if re == nil {
		re = jwtPattern
	}
	if re.NumSubexp() < 1 {
		return Masked{}, ErrNoGroup
	}
	var (
		spans  []span
		values []Value
		seen   = map[string][]byte{} // captured value → its sentinel; nil: left as it is
	)
	for _, loc := range re.FindAllSubmatchIndex(real, -1) {
		start, end := loc[2], loc[3]
		if start < 0 || start == end {
			continue
		}
		capt := real[start:end]
		s, ok := seen[string(capt)]
		if !ok {
			var vs []Value
			s, vs = maskCapture(capt, m)
			seen[string(capt)] = s
			values = append(values, vs...)
		}
		if s != nil {
			spans = append(spans, span{start, end, s})
		}
	}
	if len(values) == 0 {
		return Masked{Shown: real}, nil
	}
	if m.MaskDuplicates {
		spans = addDuplicates(real, spans, seen)
	}
	return Masked{Shown: splice(real, spans), Values: values}, nil
}

// maskCapture masks one captured value: its sentinel (nil when it is a
// JWT candidate left as it is) and the Values it adds.
func maskCapture(capt []byte, m Mask) ([]byte, []Value) {
	if !m.JWT {
		s := Mint(capt)
		return s, []Value{{Real: bytes.Clone(capt), Sentinel: s}}
	}
	payload, ok := verifyJWT(capt)
	if !ok {
		return nil, nil
	}
	if len(m.MaskClaims) == 0 {
		s := fakeJWT(payload)
		return s, []Value{{Real: bytes.Clone(capt), Sentinel: s}}
	}
	fake, claims, ok := maskClaims(capt, payload, m.MaskClaims)
	if !ok {
		return nil, nil
	}
	return fake, append([]Value{{Real: bytes.Clone(capt), Sentinel: fake}}, claims...)
}

// span is real[start:end] to be replaced by sentinel.
type span struct {
	start, end int
	sentinel   []byte
}

// addDuplicates adds a span for every verbatim copy of a masked captured
// value that overlaps no span already taken: longest value first, so a
// shorter value inside a longer one cannot take part of the longer one's
// copy and leave the rest in clear. All offsets are into real, never into
// a partly substituted text, so no sentinel is ever matched again.
func addDuplicates(real []byte, spans []span, seen map[string][]byte) []span {
	caps := make([]string, 0, len(seen))
	for c, s := range seen {
		if s != nil {
			caps = append(caps, c)
		}
	}
	sort.Slice(caps, func(i, j int) bool {
		if len(caps[i]) != len(caps[j]) {
			return len(caps[i]) > len(caps[j])
		}
		return caps[i] < caps[j]
	})
	for _, c := range caps {
		for from := 0; ; {
			i := bytes.Index(real[from:], []byte(c))
			if i < 0 {
				break
			}
			start, end := from+i, from+i+len(c)
			from = start + 1
			free := true
			for _, sp := range spans {
				if start < sp.end && sp.start < end {
					free = false
					break
				}
			}
			if free {
				spans = append(spans, span{start, end, seen[c]})
			}
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	return spans
}

// splice is real with each span (sorted, not overlapping) replaced.
func splice(real []byte, spans []span) []byte {
	var out []byte
	pos := 0
	for _, sp := range spans {
		out = append(append(out, real[pos:sp.start]...), sp.sentinel...)
		pos = sp.end
	}
	return append(out, real[pos:]...)
}
