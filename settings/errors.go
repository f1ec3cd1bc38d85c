package settings

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error is every error Load and Parse return: a problem with one settings
// file, located as precisely as the problem allows.
//
// Its text is "FILE:LINE:COLUMN: PATH: MSG", with the parts that are unknown
// left out, for example
//
//	/home/u/.srt-settings.json:4:19: filesystem.allowWrite[2]: path cannot be empty
//	/home/u/.srt-settings.json: does not exist
type Error struct {
	// File is the file name given to Load, or the name given to Parse.
	File string
	// Line and Column locate the offending token in the user's original
	// bytes, both 1-based; 0 means unknown (file-level errors). Column
	// counts characters (UTF-8 sequences), not bytes, from the start of the
	// line; a leading byte order mark takes no column.
	Line, Column int
	// Path is the dotted JSON path of the offending value, such as
	// "filesystem.allowWrite[2]" or `ignoreViolations["git push"]`. For an
	// unknown or duplicate key it is the object holding the key. Empty means
	// the whole file (or the top-level object).
	Path string
	// Msg says what is wrong, without the location.
	Msg string
	// Err is the underlying cause, or nil: an *fs.PathError when the file
	// cannot be read (so errors.Is(err, fs.ErrNotExist) and
	// errors.Is(err, fs.ErrPermission) work), a *jsontext.SyntacticError for
	// invalid JSON, or the error of netrule.ParsePattern.
	Err error
}

// Error formats e as "FILE:LINE:COLUMN: PATH: MSG", omitting empty parts.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
		if e.Column > 0 {
			b.WriteString(":" + strconv.Itoa(e.Column))
		}
	}
	sep := func() {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
	}
	if e.Path != "" {
		sep()
		b.WriteString(e.Path)
	}
	msg := e.Msg
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if msg != "" {
		sep()
		b.WriteString(msg)
	}
	return b.String()
}

// Unwrap returns the underlying cause, or nil.
func (e *Error) Unwrap() error { return e.Err }

// errorAt builds an *Error for the token starting at byte offset off of the
// original input.
func (c *checker) errorAt(off int64, path string, err error, format string, args ...any) *Error {
	line, col := lineColumn(c.src, c.bom, off)
	return &Error{File: c.name, Line: line, Column: col, Path: path, Msg: fmt.Sprintf(format, args...), Err: err}
}

// positions are where the values of one parsed file start, for
// Settings.ErrorAt.
type positions struct {
	src  []byte           // the user's original bytes
	bom  bool             // src starts with a UTF-8 byte order mark
	offs map[string]int64 // value offsets by dotted path
}

// find returns the line and column of the value at path, or of its
// nearest recorded ancestor (cutting one ".key", "[i]" or `["key"]` at a
// time); 0, 0 when there is none (the top level).
func (p *positions) find(path string) (line, col int) {
	for path != "" {
		if off, ok := p.offs[path]; ok {
			return lineColumn(p.src, p.bom, off)
		}
		path = path[:max(strings.LastIndexAny(path, ".["), 0)]
	}
	return 0, 0
}

// lineColumn converts a byte offset into 1-based line and column numbers.
// Columns count UTF-8 sequences (an invalid byte counts as one); the byte
// order mark, when bom is set, is not counted.
func lineColumn(src []byte, bom bool, off int64) (line, col int) {
	if off < 0 {
		off = 0
	}
	if off > int64(len(src)) {
		off = int64(len(src))
	}
	before := src[:off]
	line = 1 + bytes.Count(before, []byte("\n"))
	start := bytes.LastIndexByte(before, '\n') + 1
	if start == 0 && bom {
		start = min(len(bomBytes), len(before))
	}
	return line, 1 + utf8.RuneCount(before[start:])
}

// joinKey appends an object key to a dotted path. Keys that are not plain
// identifiers are written in brackets and quoted: a.b, a["git push"].
func joinKey(path, key string) string {
	if !isIdent(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// joinIndex appends an array index to a dotted path: a.b[2].
func joinIndex(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
		case '0' <= r && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// quoteKey quotes a key for a message, cutting keys longer than any real
// one so that a message stays one readable line.
func quoteKey(name string) string {
	const max = 64
	if len(name) <= max {
		return strconv.Quote(name)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return strconv.Quote(name[:cut]) + "..."
}

// suggest returns the known key closest to name by edit distance (ignoring
// case), or "" when none is close enough to be a plausible typo.
func suggest(name string, known []string) string {
	if len(name) > 64 {
		return "" // no known key is this long; skip the quadratic work
	}
	best, bestDist := "", -1
	for _, k := range known {
		d := editDistance(strings.ToLower(name), strings.ToLower(k))
		if bestDist < 0 || d < bestDist {
			best, bestDist = k, d
		}
	}
	// Allow about one edit per three characters, and at least two.
	if bestDist < 0 || bestDist > max(2, len(name)/3) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
