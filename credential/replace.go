package credential

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"sort"
	"strings"
)

// pair is one substitution: from is replaced by to.
type pair struct{ from, to []byte }

// Replacer substitutes a fixed set of byte strings, at the earliest
// position first (then the longest). A nil *Replacer replaces nothing.
// Safe for concurrent use; immutable once made.
//
// Matching is a scan with a filter on the first two bytes of every
// pattern (a 64 Ki-bit set), then a comparison of the few patterns that
// start with that byte, longest first: one pass over the input whatever
// the number of patterns.
type Replacer struct {
	pairs   []pair
	maxLen  int
	sameLen bool
	// byFirst lists, per first byte, the indexes of the pairs starting
	// with it, longest first.
	byFirst [256][]int32
	// one marks the first bytes of one-byte patterns; two the first two
	// bytes (b0<<8|b1) of the longer ones.
	one [256]bool
	two *[1 << 10]uint64
}

// newReplacer makes the Replacer of pairs; an empty from is dropped, and
// of two pairs with the same from the first wins.
func newReplacer(pairs []pair) *Replacer {
	r := &Replacer{sameLen: true, two: new([1 << 10]uint64)}
	seen := make(map[string]bool, len(pairs))
	for _, p := range pairs {
		if len(p.from) == 0 || seen[string(p.from)] {
			continue
		}
		seen[string(p.from)] = true
		r.pairs = append(r.pairs, p)
		r.maxLen = max(r.maxLen, len(p.from))
		if len(p.from) != len(p.to) {
			r.sameLen = false
		}
	}
	for i, p := range r.pairs {
		c := p.from[0]
		r.byFirst[c] = append(r.byFirst[c], int32(i))
		if len(p.from) == 1 {
			r.one[c] = true
		} else {
			k := uint(c)<<8 | uint(p.from[1])
			r.two[k>>6] |= 1 << (k & 63)
		}
	}
	for c := range r.byFirst {
		b := r.byFirst[c]
		sort.SliceStable(b, func(i, j int) bool { return len(r.pairs[b[i]].from) > len(r.pairs[b[j]].from) })
	}
	return r
}

// LengthPreserving reports whether every substitution keeps the length,
// so that a Content-Length stays right.
func (r *Replacer) LengthPreserving() bool { return r == nil || r.sameLen }

// find returns the earliest (then longest) match in b at or after i, or
// -1 and nil.
func (r *Replacer) find(b []byte, i int) (at int, p *pair) {
	two := r.two
	for ; i < len(b); i++ {
		c := b[i]
		if !r.one[c] {
			if i+1 >= len(b) {
				break
			}
			k := uint(c)<<8 | uint(b[i+1])
			if two[k>>6]&(1<<(k&63)) == 0 {
				continue
			}
		}
		for _, k := range r.byFirst[c] {
			if q := &r.pairs[k]; bytes.HasPrefix(b[i:], q.from) {
				return i, q
			}
		}
	}
	return -1, nil
}

// Bytes returns b with every substitution made (b itself when none).
func (r *Replacer) Bytes(b []byte) []byte {
	if r == nil || len(r.pairs) == 0 {
		return b
	}
	var out []byte
	pos := 0
	for {
		at, p := r.find(b, pos)
		if at < 0 {
			break
		}
		out = append(append(out, b[pos:at]...), p.to...)
		pos = at + len(p.from)
	}
	if out == nil {
		return b
	}
	return append(out, b[pos:]...)
}

// String is Bytes for a string.
func (r *Replacer) String(s string) string {
	if r == nil || len(r.pairs) == 0 || s == "" {
		return s
	}
	b := []byte(s)
	if out := r.Bytes(b); &out[0] != &b[0] || len(out) != len(b) {
		return string(out)
	}
	return s
}

// Header rewrites h in place: every value, every name that changes (it
// is then moved, canonicalised), and inside the credentials of an
// Authorization or Proxy-Authorization "Basic" value (RFC 7617: base64
// of user ":" password), which is decoded, substituted and encoded again
// with the same alphabet and padding.
func (r *Replacer) Header(h http.Header) {
	if r == nil || len(r.pairs) == 0 {
		return
	}
	for k, vv := range h {
		for i, v := range vv {
			// Basic first: the base64 forms of a value the raw pass
			// knows leave up to 2 bytes at either end in clear.
			if k == "Authorization" || k == "Proxy-Authorization" {
				v = r.basic(v)
			}
			vv[i] = r.String(v)
		}
		// Header names: HTTP/2 lower-cases them and http.Header
		// canonicalises them, so a value in a name is matched whatever
		// its case.
		if nk := r.foldString(k); nk != k {
			delete(h, k)
			for _, v := range vv {
				h.Add(nk, v)
			}
		}
	}
}

// basicEncodings are the encodings a Basic credential is decoded with,
// in order; it is encoded again with the one that decoded it.
var basicEncodings = []*base64.Encoding{
	base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding,
}

// basic substitutes inside the credentials of v when it is
// "Basic <base64>"; v unchanged otherwise.
func (r *Replacer) basic(v string) string {
	scheme, cred, ok := strings.Cut(strings.TrimLeft(v, " \t"), " ")
	if !ok || !strings.EqualFold(scheme, "basic") {
		return v
	}
	lead := v[:len(v)-len(strings.TrimLeft(v, " \t"))]
	cred = strings.Trim(cred, " \t")
	for _, enc := range basicEncodings {
		dec, err := enc.DecodeString(cred)
		if err != nil {
			continue
		}
		if sub := r.Bytes(dec); !bytes.Equal(sub, dec) {
			return lead + scheme + " " + enc.EncodeToString(sub)
		}
		return v
	}
	return v
}

// Reader returns src with every substitution made as it is read; a
// match split across reads is still found, and the output is what Bytes
// would make of the whole of src.
func (r *Replacer) Reader(src io.Reader) io.Reader {
	if r == nil || len(r.pairs) == 0 {
		return src
	}
	return &replaceReader{r: r, src: src, in: make([]byte, 0, readChunk+r.maxLen)}
}

// foldString is String for text whose case the protocol may have changed
// (header names): each from is matched case-insensitively (ASCII), and
// the result is lower case where anything was replaced; s itself when
// nothing was.
func (r *Replacer) foldString(s string) string {
	if out := r.String(s); out != s {
		return out
	}
	lower := strings.ToLower(s)
	out := lower
	for _, p := range r.pairs {
		if len(p.from) <= len(out) {
			out = strings.ReplaceAll(out, strings.ToLower(string(p.from)), strings.ToLower(string(p.to)))
		}
	}
	if out == lower {
		return s
	}
	return out
}
