package credential

import (
	"bytes"
	"io"
	"net/http"
)

// pair is one substitution: from is replaced by to.
type pair struct{ from, to []byte }

// Replacer substitutes a fixed set of byte strings, at the earliest
// position first (then the longest). A nil *Replacer replaces nothing.
type Replacer struct {
	pairs   []pair
	maxLen  int
	sameLen bool
}

func newReplacer(pairs []pair) *Replacer {
	r := &Replacer{pairs: pairs, sameLen: true}
	for _, p := range pairs {
		r.maxLen = max(r.maxLen, len(p.from))
		if len(p.from) != len(p.to) {
			r.sameLen = false
		}
	}
	return r
}

// LengthPreserving reports whether every substitution keeps the length,
// so that a Content-Length stays right.
func (r *Replacer) LengthPreserving() bool { return r == nil || r.sameLen }

// next finds the earliest (then longest) match in b at or after i.
func (r *Replacer) next(b []byte) (at int, p *pair) {
	at = -1
	for k := range r.pairs {
		q := &r.pairs[k]
		if j := bytes.Index(b, q.from); j >= 0 && (at < 0 || j < at || (j == at && len(q.from) > len(p.from))) {
			at, p = j, q
		}
	}
	return at, p
}

// Bytes returns b with every substitution made (b itself when none).
func (r *Replacer) Bytes(b []byte) []byte {
	if r == nil || len(r.pairs) == 0 {
		return b
	}
	var out []byte
	rest := b
	for {
		at, p := r.next(rest)
		if at < 0 {
			break
		}
		out = append(append(out, rest[:at]...), p.to...)
		rest = rest[at+len(p.from):]
	}
	if out == nil {
		return b
	}
	return append(out, rest...)
}

// String is Bytes for a string.
func (r *Replacer) String(s string) string {
	if r == nil {
		return s
	}
	return string(r.Bytes([]byte(s)))
}

// Header rewrites every value of h in place.
func (r *Replacer) Header(h http.Header) {
	if r == nil {
		return
	}
	for k, vv := range h {
		for i, v := range vv {
			vv[i] = r.String(v)
		}
		h[k] = vv
	}
}

// Reader returns src with every substitution made as it is read; a
// match split across reads is still found.
func (r *Replacer) Reader(src io.Reader) io.Reader {
	if r == nil || len(r.pairs) == 0 {
		return src
	}
	return &replaceReader{r: r, src: src}
}

type replaceReader struct {
	r       *Replacer
	src     io.Reader
	in, out []byte
	err     error
	buf     [32 << 10]byte
}

func (rr *replaceReader) Read(p []byte) (int, error) {
	for len(rr.out) == 0 {
		if rr.err != nil {
			if len(rr.in) > 0 {
				rr.out, rr.in = rr.r.Bytes(rr.in), nil
				continue
			}
			return 0, rr.err
		}
		n, err := rr.src.Read(rr.buf[:])
		rr.in = append(rr.in, rr.buf[:n]...)
		rr.err = err
		if err != nil {
			continue
		}
		// Everything but the last maxLen-1 bytes, which may begin a match,
		// can go out; a match that ends beyond the cut is kept whole.
		cut := len(rr.in) - (rr.r.maxLen - 1)
		if cut <= 0 {
			continue
		}
		var out []byte
		rest := rr.in
		done := 0
		for {
			at, pp := rr.r.next(rest)
			if at < 0 || done+at >= cut {
				break
			}
			out = append(append(out, rest[:at]...), pp.to...)
			rest = rest[at+len(pp.from):]
			done += at + len(pp.from)
		}
		if done < cut {
			out = append(out, rest[:cut-done]...)
			rest = rest[cut-done:]
		}
		rr.out = out
		rr.in = append([]byte(nil), rest...)
	}
	n := copy(p, rr.out)
	rr.out = rr.out[n:]
	return n, nil
}
