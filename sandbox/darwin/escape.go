package darwin

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnsafePath is wrapped by errors for a path that cannot be written
// into a profile: one holding a NUL, a newline or another control
// character. Such a name cannot be escaped with certainty for Seatbelt's
// reader, so the profile is refused rather than written with a rule that
// might mean something else (fail closed).
var ErrUnsafePath = errors.New("path cannot be written into a Seatbelt profile")

// checkText refuses control characters (C0 and DEL), NUL and newline
// among them.
func checkText(s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return fmt.Errorf("%q: control character 0x%02x: %w", s, c, ErrUnsafePath)
		}
	}
	return nil
}

// quote returns s as an SBPL string literal. Only '\' and '"' are
// special inside one; both are backslash-escaped, and control characters
// are refused, so no file name can end the string early or add a form.
// Parentheses, ';' and '#' inside a string are ordinary characters.
func quote(s string) (string, error) {
	if err := checkText(s); err != nil {
		return "", err
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' || s[i] == '"' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String(), nil
}

// regexMeta are the characters special in a POSIX extended regular
// expression outside brackets. A backslash before each is a literal in
// both POSIX ERE and Go's RE2 (a lone ']' or '}' is already literal in
// both), which is why escaping by backslash, not by bracket, is used.
const regexMeta = `.[\()*+?{|^$`

// regexLiteral appends s to b as a regex matching exactly s. With fold,
// each ASCII letter becomes a two-case bracket ("[bB]"), so the rule also
// covers the other spellings a case-insensitive volume (APFS's default)
// maps to the same file.
func regexLiteral(b *strings.Builder, s string, fold bool) {
	for i := 0; i < len(s); i++ {
		regexByte(b, s[i], fold)
	}
}

func regexByte(b *strings.Builder, c byte, fold bool) {
	switch {
	case strings.IndexByte(regexMeta, c) >= 0:
		b.WriteByte('\\')
		b.WriteByte(c)
	case fold && isLetter(c):
		b.WriteByte('[')
		b.WriteByte(lower(c))
		b.WriteByte(upper(c))
		b.WriteByte(']')
	default:
		b.WriteByte(c)
	}
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

// LiteralRegex returns an anchored regex that matches exactly path, or,
// with subtree, path and everything below it.
func LiteralRegex(path string, subtree, fold bool) string {
	var b strings.Builder
	b.WriteByte('^')
	regexLiteral(&b, path, fold)
	if subtree {
		b.WriteString("(/.*)?")
	}
	b.WriteByte('$')
	return b.String()
}

// GlobToRegex converts a doublestar glob (the settings' pattern syntax)
// to an anchored regex in the portable subset package sbpl checks, which
// POSIX extended regexes (Seatbelt's matcher) and Go's RE2 read alike:
//
//   - "**/" at the start of a component matches zero or more whole
//     directories: "(.*/)?";
//   - a final "/**" matches the directory itself and everything below
//     it: "(/.*)?" (the reference writes "/.*", which leaves the
//     directory itself to be replaced by a renamed one);
//   - any other "**", and "*", match within one component: "[^/]*";
//     "?" matches one character other than '/': "[^/]";
//   - "[abc]", "[a-z]", "[!x]" / "[^x]" are classes that never match
//     '/'; a '[' that does not open a valid class is a literal '[';
//     a class whose members include '\', '[' or ']' is a literal '[' too
//     unless it can be written as an alternation (non-negated);
//   - "{a,b}" is an alternation of converted alternatives; an unmatched
//     '{' is literal;
//   - '\' escapes the next character;
//   - every other character is literal, regex metacharacters escaped.
//
// With fold, letters match either case (see regexLiteral). It returns an
// error for control characters (ErrUnsafePath) and for a negated class
// that cannot be written portably.
func GlobToRegex(glob string, fold bool) (string, error) {
	if err := checkText(glob); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteByte('^')
	if err := globBody(&b, glob, fold); err != nil {
		return "", err
	}
	b.WriteByte('$')
	return b.String(), nil
}

func globBody(b *strings.Builder, g string, fold bool) error {
	for i := 0; i < len(g); i++ {
		c := g[i]
		compStart := i == 0 || g[i-1] == '/'
		switch {
		case c == '\\' && i+1 < len(g):
			i++
			regexByte(b, g[i], fold)
		case c == '/' && g[i+1:] == "**":
			b.WriteString("(/.*)?")
			return nil
		case c == '*' && compStart && strings.HasPrefix(g[i:], "**/"):
			b.WriteString("(.*/)?")
			i += 2
		case c == '*' && compStart && g[i:] == "**":
			b.WriteString(".*")
			return nil
		case c == '*':
			for i+1 < len(g) && g[i+1] == '*' {
				i++
			}
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			n, err := globClass(b, g[i:], fold)
			if err != nil {
				return err
			}
			if n == 0 {
				regexByte(b, '[', fold)
			} else {
				i += n - 1
			}
		case c == '{':
			n, err := globBraces(b, g[i:], fold)
			if err != nil {
				return err
			}
			if n == 0 {
				regexByte(b, '{', fold)
			} else {
				i += n - 1
			}
		default:
			regexByte(b, c, fold)
		}
	}
	return nil
}

// globClass converts the class at the start of g ("[...]") and returns
// how many bytes it used, or 0 when g does not start a valid class (no
// closing ']' before a '/', empty, or a bad range).
func globClass(b *strings.Builder, g string, fold bool) (int, error) {
	j := 1
	neg := false
	if j < len(g) && (g[j] == '!' || g[j] == '^') {
		neg = true
		j++
	}
	start := j
	if j < len(g) && g[j] == ']' { // a leading ']' is a member
		j++
	}
	for j < len(g) && g[j] != ']' {
		if g[j] == '/' {
			return 0, nil
		}
		j++
	}
	if j >= len(g) || j == start {
		return 0, nil
	}
	members := g[start:j]
	type item struct{ lo, hi byte }
	var items []item
	special := false
	for k := 0; k < len(members); k++ {
		lo := members[k]
		if lo == '\\' && k+1 < len(members) {
			k++
			lo = members[k]
		}
		hi := lo
		if k+2 < len(members) && members[k+1] == '-' {
			hi = members[k+2]
			if hi == '\\' && k+3 < len(members) {
				hi = members[k+3]
				k++
			}
			k += 2
			if hi < lo {
				return 0, nil
			}
		}
		if strings.IndexByte(`\[]^-`, lo) >= 0 || strings.IndexByte(`\[]^-`, hi) >= 0 {
			special = true
		}
		items = append(items, item{lo, hi})
		if fold {
			// Add the other case of a letter range that is all letters.
			if 'a' <= lo && hi <= 'z' || 'A' <= lo && hi <= 'Z' {
				if l, h := upper(lo), upper(hi); l != lo {
					items = append(items, item{l, h})
				} else {
					items = append(items, item{lower(lo), lower(hi)})
				}
			}
		}
	}
	if special {
		if neg {
			return 0, fmt.Errorf("glob class %q: a negated class holding \\ [ ] ^ or - cannot be written portably", g[:j+1])
		}
		// An alternation of single characters and plain ranges.
		b.WriteByte('(')
		for k, it := range items {
			if k > 0 {
				b.WriteByte('|')
			}
			if it.lo == it.hi || strings.IndexByte(`\[]^-`, it.lo) >= 0 || strings.IndexByte(`\[]^-`, it.hi) >= 0 {
				if it.lo != it.hi {
					return 0, fmt.Errorf("glob class %q: a range ending in \\ [ ] ^ or - cannot be written portably", g[:j+1])
				}
				regexByte(b, it.lo, false)
				continue
			}
			fmt.Fprintf(b, "[%c-%c]", it.lo, it.hi)
		}
		b.WriteByte(')')
		return j + 1, nil
	}
	b.WriteByte('[')
	if neg {
		b.WriteString("^/")
	}
	for _, it := range items {
		if it.lo == '/' || it.hi == '/' || it.lo < '/' && it.hi > '/' {
			if !neg {
				continue // a class never matches '/'
			}
		}
		b.WriteByte(it.lo)
		if it.hi != it.lo {
			b.WriteByte('-')
			b.WriteByte(it.hi)
		}
	}
	b.WriteByte(']')
	return j + 1, nil
}

// globBraces converts "{a,b,...}" at the start of g and returns the bytes
// used, or 0 when the brace is not closed.
func globBraces(b *strings.Builder, g string, fold bool) (int, error) {
	depth := 0
	var alts []string
	last := 1
	for j := 0; j < len(g); j++ {
		switch g[j] {
		case '\\':
			j++
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				alts = append(alts, g[last:j])
				b.WriteByte('(')
				for k, a := range alts {
					if k > 0 {
						b.WriteByte('|')
					}
					if err := globBody(b, a, fold); err != nil {
						return 0, err
					}
				}
				b.WriteByte(')')
				return j + 1, nil
			}
		case ',':
			if depth == 1 {
				alts = append(alts, g[last:j])
				last = j + 1
			}
		}
	}
	return 0, nil
}
