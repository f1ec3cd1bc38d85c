package credential

import (
	"bytes"
	"io"
)

// readChunk is how much replaceReader asks its source for at a time.
const readChunk = 64 << 10

// maxEmptyReads is how many reads of nothing in a row replaceReader
// takes from its source before it fails with io.ErrNoProgress.
const maxEmptyReads = 100

// replaceReader is Replacer.Reader's reader. in holds the input not yet
// substituted: at most maxLen-1 bytes between reads (the tail that may
// begin a match), then what the next read brings. out is substituted
// output not yet returned.
type replaceReader struct {
	r      *Replacer
	src    io.Reader
	in     []byte
	out    []byte
	outBuf []byte
	err    error
}

func (rr *replaceReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for empty := 0; len(rr.out) == 0; {
		if rr.err != nil {
			if len(rr.in) == 0 {
				return 0, rr.err
			}
			rr.substitute(len(rr.in))
			continue
		}
		if empty >= maxEmptyReads {
			rr.err = io.ErrNoProgress
			continue
		}
		n, err := rr.src.Read(rr.in[len(rr.in):cap(rr.in)])
		rr.in = rr.in[:len(rr.in)+n]
		rr.err = err
		if n == 0 {
			empty++
			continue
		}
		empty = 0
		if err == nil {
			// Every position before cut can be decided now: no pattern
			// starting there needs bytes not read yet. Only a tail that
			// could still begin a match is held back, so that a stream
			// (server-sent events, a websocket's last message) is never
			// delayed by bytes that cannot be a secret.
			if cut := rr.r.undecided(rr.in); cut > 0 {
				rr.substitute(cut)
			}
		}
	}
	n := copy(p, rr.out)
	rr.out = rr.out[n:]
	return n, nil
}

// substitute moves into out the substituted input up to cut (further
// when a match that starts before cut ends after it), keeping the rest
// at the start of in.
func (rr *replaceReader) substitute(cut int) {
	out := rr.outBuf[:0]
	pos := 0
	for {
		at, p := rr.r.find(rr.in[:min(len(rr.in), cut+rr.r.maxLen-1)], pos)
		if at < 0 || at >= cut {
			break
		}
		out = append(append(out, rr.in[pos:at]...), p.to...)
		pos = at + len(p.from)
	}
	if pos < cut {
		out = append(out, rr.in[pos:cut]...)
		pos = cut
	}
	rr.outBuf, rr.out = out, out
	rr.in = rr.in[:copy(rr.in, rr.in[pos:])]
}

// undecided returns the first position of b from which b's rest is a
// proper prefix of a pattern (a match there needs more input), or len(b)
// when there is none. Only the last maxLen-1 positions can be one.
func (r *Replacer) undecided(b []byte) int {
	for i := max(0, len(b)-(r.maxLen-1)); i < len(b); i++ {
		for _, k := range r.byFirst[b[i]] {
			if q := r.pairs[k].from; len(q) > len(b)-i && bytes.HasPrefix(q, b[i:]) {
				return i
			}
		}
	}
	return len(b)
}
