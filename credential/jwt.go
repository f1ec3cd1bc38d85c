package credential

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
)

// jwtPattern finds JSON Web Token candidates when Mask.Extract is nil: a
// token's header is base64url of a JSON object, which starts `{"`, so
// every token starts "eyJ" (RFC 7519 section 3; reference 0.0.83
// JWT_DEFAULT_EXTRACT_PATTERN). The signature may be empty (alg "none").
// Candidates are verified (verifyJWT) before they are masked.
var jwtPattern = regexp.MustCompile(`(eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)`)

// farExp is the exp claim (seconds since the epoch, 2286-11-20) of a fake
// token whose real one has none of exp, iat and nbf.
const farExp = "9999999999"

// fakeHeader is the header of a fake token: HS256, never "none", so that
// a verifier the fake reaches unsubstituted must check its (random)
// signature and rejects it.
var fakeHeader = b64url.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))

var b64url = base64.RawURLEncoding

// decodeSegment decodes one base64url token segment (RFC 7515 uses the
// unpadded form; a padded one is accepted too).
func decodeSegment(seg []byte) ([]byte, bool) {
	seg = bytes.TrimRight(seg, "=")
	out := make([]byte, b64url.DecodedLen(len(seg)))
	n, err := b64url.Decode(out, seg)
	return out[:n], err == nil
}

// verifyJWT reports whether tok is structurally a JWT: three segments,
// a header that is a JSON object with "alg", a payload that is a JSON
// object. It returns the decoded payload.
func verifyJWT(tok []byte) (payload []byte, ok bool) {
	parts := bytes.Split(tok, []byte("."))
	if len(parts) != 3 {
		return nil, false
	}
	h, ok := decodeSegment(parts[0])
	if !ok {
		return nil, false
	}
	var header map[string]json.RawMessage
	if json.Unmarshal(h, &header) != nil {
		return nil, false
	}
	if _, ok := header["alg"]; !ok {
		return nil, false
	}
	p, ok := decodeSegment(parts[1])
	if !ok {
		return nil, false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(p, &obj) != nil || obj == nil {
		return nil, false
	}
	return p, true
}

// randomSegment is n random bytes, base64url: a fake signature or jti.
func randomSegment(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand.Read never fails on supported systems
	}
	return b64url.EncodeToString(b)
}

// fakeJWT is a structurally valid stand-in for a token whose decoded
// payload is payload: fakeHeader; a payload with the real exp, iat and
// nbf (so that a client's expiry check behaves as with the real token;
// exp farExp when none is present) and a random 128-bit "jti"; a random
// 256-bit signature (what HS256 would carry). It holds nothing of the
// real token but those times.
func fakeJWT(payload []byte) []byte {
	var claims map[string]json.RawMessage
	_ = json.Unmarshal(payload, &claims) // verifyJWT checked it
	var p bytes.Buffer
	p.WriteByte('{')
	kept := false
	for _, k := range []string{"exp", "iat", "nbf"} {
		if v, ok := claims[k]; ok {
			fmt.Fprintf(&p, "%q:%s,", k, compactJSON(v))
			kept = true
		}
	}
	if !kept {
		fmt.Fprintf(&p, `"exp":%s,`, farExp)
	}
	fmt.Fprintf(&p, `"jti":%q}`, randomSegment(16))
	return []byte(fakeHeader + "." + b64url.EncodeToString(p.Bytes()) + "." + randomSegment(32))
}

// compactJSON is v without insignificant white space.
func compactJSON(v json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return v
	}
	return b.Bytes()
}

// maskClaims rebuilds tok (verified; payload decoded) with each named
// top-level claim that is a JSON string replaced by its own Mint
// sentinel: the original header segment, the payload with only those
// values changed (every other byte kept; a claim named twice is masked
// at every occurrence), a random signature — never the real one, which
// over a changed payload would let the sandbox test guesses of a masked
// claim against the issuer's public key. ok is false when no named claim
// is a string. claims are the masked values, each sentinel to its real.
func maskClaims(tok, payload []byte, names []string) (fake []byte, claims []Value, ok bool) {
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	type span struct {
		start, end int
		sentinel   []byte
	}
	var spans []span
	byValue := map[string][]byte{}
	dec := json.NewDecoder(bytes.NewReader(payload))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, false
		}
		key, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, false
		}
		end := int(dec.InputOffset())
		var val string
		if !want[key] || json.Unmarshal(raw, &val) != nil || val == "" {
			continue
		}
		s, seen := byValue[val]
		if !seen {
			s = Mint([]byte(val))
			byValue[val] = s
			claims = append(claims, Value{Real: []byte(val), Sentinel: s})
		}
		enc, _ := json.Marshal(string(s))
		spans = append(spans, span{start: end - len(raw), end: end, sentinel: enc})
	}
	if len(spans) == 0 {
		return nil, nil, false
	}
	var p []byte
	pos := 0
	for _, sp := range spans {
		p = append(append(p, payload[pos:sp.start]...), sp.sentinel...)
		pos = sp.end
	}
	p = append(p, payload[pos:]...)
	header, _, _ := bytes.Cut(tok, []byte("."))
	fake = []byte(string(header) + "." + b64url.EncodeToString(p) + "." + randomSegment(32))
	return fake, claims, true
}
