package settings

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// bomBytes is the UTF-8 byte order mark.
var bomBytes = []byte("\xEF\xBB\xBF")

// node is one JSON value with the byte offset where it starts in the
// user's original input, so that every error can point at it.
type node struct {
	kind    jsontext.Kind // '{', '[', '"', '0', 't', 'f' or 'n'
	off     int64
	str     string // the decoded string, or a number's text
	members []member
	elems   []*node
}

// member is one object member; keyOff is where its key starts.
type member struct {
	name   string
	keyOff int64
	val    *node
}

// kindName names a JSON kind for messages: "got a string".
func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "an invalid value"
}

// standardize turns JSONC (JSON with // and /* */ comments and trailing
// commas, the JWCC dialect hujson accepts) into standard JSON, in place,
// by overwriting comments and trailing commas with spaces. Offsets and
// line numbers do not move, so positions still point into the user's
// file. It only fails on an unterminated block comment, returning its
// offset; every other problem is left for the JSON decoder to report.
func standardize(b []byte) (badComment int64, ok bool) {
	// last is the last significant byte seen outside strings and comments
	// ('"' for a string); comma is the offset of a comma that may be
	// trailing, or -1.
	var last byte
	comma := -1
	for i := 0; i < len(b); {
		switch c := b[i]; c {
		case ' ', '\t', '\r', '\n':
			i++
		case '"':
			for i++; i < len(b); i++ {
				if b[i] == '\\' {
					i++
				} else if b[i] == '"' {
					i++
					break
				}
			}
			last = '"'
		case '/':
			switch {
			case i+1 < len(b) && b[i+1] == '/':
				for ; i < len(b) && b[i] != '\n'; i++ {
					b[i] = ' '
				}
			case i+1 < len(b) && b[i+1] == '*':
				end := bytes.Index(b[i+2:], []byte("*/"))
				if end < 0 {
					return int64(i), false
				}
				blank(b[i : i+2+end+2])
				i += 2 + end + 2
			default:
				last = c
				i++
			}
		case ',':
			// A comma right after '[', '{', ':' or another comma is a
			// syntax error, not a trailing comma; leave it for the decoder.
			comma = -1
			if last != 0 && last != '[' && last != '{' && last != ':' && last != ',' {
				comma = i
			}
			last = c
			i++
		case '}', ']':
			if last == ',' && comma >= 0 {
				b[comma] = ' '
			}
			last = c
			i++
		default:
			last = c
			i++
		}
	}
	return 0, true
}

// blank overwrites b with spaces, keeping line breaks.
func blank(b []byte) {
	for i, c := range b {
		if c != '\n' && c != '\r' {
			b[i] = ' '
		}
	}
}

// treeBuilder reads a standardized document into nodes, rejecting
// duplicate keys with the position of the second one.
type treeBuilder struct {
	c   *checker
	buf []byte // the standardized input
	dec *jsontext.Decoder
	// offs maps the dotted path of every object member's value and array
	// element to the offset where the value starts (Settings.ErrorAt).
	offs map[string]int64
}

// parseTree decodes the whole standardized input buf into a tree.
func (c *checker) parseTree(buf []byte) (*node, error) {
	t := &treeBuilder{c: c, buf: buf, offs: map[string]int64{}}
	c.offs = t.offs
	// Duplicates are checked here, to report them with a dotted path.
	t.dec = jsontext.NewDecoder(bytes.NewReader(buf), jsontext.AllowDuplicateNames(true))
	tok, off, err := t.next("")
	if err != nil {
		return nil, err
	}
	root, err := t.value(tok, off, "", 0)
	if err != nil {
		return nil, err
	}
	// The decoder reads a stream of values; a settings file holds one.
	if _, off, err := t.next(""); err == nil {
		return nil, c.errorAt(off, "", nil, "invalid JSON: more than one top-level value")
	} else if err != io.EOF {
		return nil, err
	}
	return root, nil
}

// next reads one token and returns it with its start offset. Errors are
// *Error for syntax errors and io.EOF at the end of the input.
func (t *treeBuilder) next(path string) (jsontext.Token, int64, error) {
	off := t.dec.InputOffset()
	for off < int64(len(t.buf)) {
		if c := t.buf[off]; c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != ',' && c != ':' {
			break
		}
		off++
	}
	tok, err := t.dec.ReadToken()
	if err == nil {
		return tok, off, nil
	}
	if err == io.EOF {
		return tok, off, err
	}
	var serr *jsontext.SyntacticError
	msg := err.Error()
	if errors.As(err, &serr) {
		off = serr.ByteOffset
		if serr.Err != nil {
			msg = serr.Err.Error()
		}
		if errors.Is(serr.Err, io.ErrUnexpectedEOF) {
			msg = "unexpected end of input"
			off = int64(len(t.buf))
		}
	}
	return tok, off, t.c.errorAt(off, path, err, "invalid JSON: %s", msg)
}

// maxDepth bounds nesting. A valid settings file nests about five levels
// deep; the bound keeps paths in messages short and work linear.
const maxDepth = 64

// value builds the node for tok, which starts at off and is nested depth
// levels deep, reading the rest of an object or array from the decoder.
func (t *treeBuilder) value(tok jsontext.Token, off int64, path string, depth int) (*node, error) {
	n := &node{kind: tok.Kind(), off: off}
	if depth >= maxDepth && (n.kind == '{' || n.kind == '[') {
		return nil, t.c.errorAt(off, path, nil, "nested more than %d levels deep", maxDepth)
	}
	switch n.kind {
	case '"':
		n.str = tok.String()
	case '0':
		n.str = string(t.buf[off:t.dec.InputOffset()])
	case '{':
		seen := map[string]int64{}
		for {
			ktok, koff, err := t.next(path)
			if err != nil {
				return nil, eofIsError(t, err, path)
			}
			if ktok.Kind() == '}' {
				return n, nil
			}
			name := ktok.String()
			if first, dup := seen[name]; dup {
				line, col := lineColumn(t.c.src, t.c.bom, first)
				return nil, t.c.errorAt(koff, path, nil, "duplicate key %s (first at line %d, column %d)", quoteKey(name), line, col)
			}
			seen[name] = koff
			vtok, voff, err := t.next(joinKey(path, name))
			if err != nil {
				return nil, eofIsError(t, err, path)
			}
			t.offs[joinKey(path, name)] = voff
			v, err := t.value(vtok, voff, joinKey(path, name), depth+1)
			if err != nil {
				return nil, err
			}
			n.members = append(n.members, member{name: name, keyOff: koff, val: v})
		}
	case '[':
		for i := 0; ; i++ {
			etok, eoff, err := t.next(path)
			if err != nil {
				return nil, eofIsError(t, err, path)
			}
			if etok.Kind() == ']' {
				return n, nil
			}
			t.offs[joinIndex(path, i)] = eoff
			v, err := t.value(etok, eoff, joinIndex(path, i), depth+1)
			if err != nil {
				return nil, err
			}
			n.elems = append(n.elems, v)
		}
	}
	return n, nil
}

// eofIsError turns an io.EOF inside an object or array into a syntax
// error; the decoder normally reports io.ErrUnexpectedEOF itself.
func eofIsError(t *treeBuilder, err error, path string) error {
	if err == io.EOF {
		return t.c.errorAt(int64(len(t.buf)), path, io.ErrUnexpectedEOF, "invalid JSON: unexpected end of input")
	}
	return err
}

// integer converts a number node to an int in [lo, hi]. JSON has one
// number type, so 443.0 and 4.43e2 are accepted as 443; 1.5 is not.
func (c *checker) integer(n *node, path string, lo, hi int) (int, error) {
	if n.kind == 'n' {
		return 0, nil
	}
	if n.kind != '0' {
		return 0, c.errorAt(n.off, path, nil, "expected an integer, got %s", kindName(n.kind))
	}
	if i, err := strconv.ParseInt(n.str, 10, 64); err == nil {
		if i < int64(lo) || i > int64(hi) {
			return 0, c.errorAt(n.off, path, nil, "must be between %d and %d, got %s", lo, hi, n.str)
		}
		return int(i), nil
	}
	f, err := strconv.ParseFloat(n.str, 64)
	switch {
	case err == nil && f != math.Trunc(f):
		return 0, c.errorAt(n.off, path, nil, "must be an integer, got %s", n.str)
	case err != nil || f < float64(lo) || f > float64(hi):
		return 0, c.errorAt(n.off, path, nil, "must be between %d and %d, got %s", lo, hi, n.str)
	}
	return int(f), nil
}
