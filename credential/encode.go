package credential

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"unicode/utf8"
)

// The forms a secret takes on the wire besides its raw bytes. Each
// transform is applied to both sides of a pair (real and sentinel), so a
// sentinel written in a form comes back as the real value in the same
// form; a form equal to the raw bytes adds nothing.

// textForms are the transforms for both directions: percent-encoding as
// url.QueryEscape and url.PathEscape write it (and with lower-case hex,
// RFC 3986 section 2.1 makes them equal), and JSON string escaping as
// encoding/json writes it (HTML characters escaped or not, "/" as "\/"
// or not, non-ASCII as \u escapes or not).
var textForms = []func([]byte) []byte{
	func(b []byte) []byte { return []byte(url.QueryEscape(string(b))) },
	func(b []byte) []byte { return []byte(url.PathEscape(string(b))) },
	func(b []byte) []byte { return lowerHex([]byte(url.QueryEscape(string(b)))) },
	func(b []byte) []byte { return lowerHex([]byte(url.PathEscape(string(b)))) },
	func(b []byte) []byte { return jsonEscape(b, true) },
	func(b []byte) []byte { return jsonEscape(b, false) },
	func(b []byte) []byte { return escapeSlash(jsonEscape(b, true)) },
	func(b []byte) []byte { return escapeSlash(jsonEscape(b, false)) },
	func(b []byte) []byte { return asciiJSON(jsonEscape(b, false)) },
	func(b []byte) []byte { return escapeSlash(asciiJSON(jsonEscape(b, false))) },
}

// textPairs are from→to and its textForms.
func textPairs(from, to []byte) []pair {
	ps := []pair{{from: from, to: to}}
	for _, f := range textForms {
		if ff := f(from); !bytes.Equal(ff, from) {
			ps = append(ps, pair{from: ff, to: f(to)})
		}
	}
	return ps
}

// minBase64 is the shortest base64 form of a real value the Ingress
// replacer looks for (8 characters: 48 bits of the secret), so that a
// short secret does not make it rewrite unrelated base64.
const minBase64 = 8

// base64Pairs are the base64 forms of real (std and URL alphabets),
// each mapped to the same form of sentinel: the whole value, padded and
// not, and for each of the 3 alignments real may have inside a longer
// base64 text (a Basic credential "user:REAL", a JSON document, a JWT)
// the stable middle — the 4-character groups that encode bytes of real
// only. The middle of the sentinel at the same alignment replaces it; a
// sentinel of another length garbles the bytes around it once decoded,
// which shows nothing of real.
func base64Pairs(real, sentinel []byte) []pair {
	var ps []pair
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		ps = append(ps, pair{from: []byte(enc.EncodeToString(real)), to: []byte(enc.EncodeToString(sentinel))})
	}
	for skip := range 3 {
		if skip >= len(real) || skip >= len(sentinel) {
			break
		}
		r, s := real[skip:], sentinel[skip:]
		r, s = r[:len(r)/3*3], s[:len(s)/3*3]
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			if enc.EncodedLen(len(r)) >= minBase64 {
				ps = append(ps, pair{from: []byte(enc.EncodeToString(r)), to: []byte(enc.EncodeToString(s))})
			}
		}
	}
	out := ps[:0]
	for _, p := range ps {
		if len(p.from) >= minBase64 {
			out = append(out, p)
		}
	}
	return out
}

// jsonEscape is b as the inside of a JSON string as encoding/json writes
// it, with or without its HTML escaping of <, > and &.
func jsonEscape(b []byte, html bool) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(string(b)) // a string always encodes
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return out[1 : len(out)-1]
}

// escapeSlash writes "/" as "\/" (JSON allows it; PHP's json_encode does).
func escapeSlash(b []byte) []byte { return bytes.ReplaceAll(b, []byte("/"), []byte(`\/`)) }

// asciiJSON writes every non-ASCII character of an escaped JSON string as
// \uXXXX (lower-case hex; a UTF-16 surrogate pair above U+FFFF), as
// Python's json.dumps does by default.
func asciiJSON(b []byte) []byte {
	var out []byte
	const hex = "0123456789abcdef"
	u := func(r rune) {
		out = append(out, '\\', 'u', hex[r>>12&15], hex[r>>8&15], hex[r>>4&15], hex[r&15])
	}
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		switch {
		case r < utf8.RuneSelf:
			out = append(out, b[0])
		case r > 0xFFFF:
			r -= 0x10000
			u(0xD800 + r>>10)
			u(0xDC00 + r&0x3FF)
		default:
			u(r) // utf8.RuneError for invalid bytes, as encoding/json writes it
		}
		b = b[n:]
	}
	return out
}

// lowerHex writes the hex digits of each %XX escape in lower case.
func lowerHex(b []byte) []byte {
	out := bytes.Clone(b)
	for i := 0; i+2 < len(out); i++ {
		if out[i] == '%' {
			for j := i + 1; j <= i+2; j++ {
				if 'A' <= out[j] && out[j] <= 'F' {
					out[j] += 'a' - 'A'
				}
			}
			i += 2
		}
	}
	return out
}

// hexPairs are the hexadecimal forms of real (lower and upper case) mapped
// to the same form of sentinel, for the Ingress replacer: a reflection
// as a digest-looking string. Other transformations (wrapped base64,
// base32, reversal, compression without Content-Encoding) are not
// looked for: SECURITY.md, "Known limits".
func hexPairs(real, sentinel []byte) []pair {
	lo, slo := hex.EncodeToString(real), hex.EncodeToString(sentinel)
	return []pair{{from: []byte(lo), to: []byte(slo)}, {from: []byte(strings.ToUpper(lo)), to: []byte(strings.ToUpper(slo))}}
}
