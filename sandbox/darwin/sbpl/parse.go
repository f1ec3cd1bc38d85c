// Package sbpl parses and evaluates the subset of Apple's Sandbox Profile
// Language (SBPL, the Scheme dialect sandbox-exec reads) that package
// darwin generates. It exists so that the generated Seatbelt profiles can
// be checked on Linux: a test parses a profile and asks "would
// (file-write-create /x/y) be allowed?", rule by rule of the policy.
//
// The subset is deliberately strict: every construct it does not know is a
// parse error rather than "no match", so a generator change that leaves
// the subset fails the tests instead of passing silently. What it accepts:
//
//   - (version 1)
//   - (allow|deny OPERATION... FILTER... [(with message "text")])
//   - filters: literal, subpath, regex, require-any, require-all,
//     require-not, remote/local ip, remote/local unix-socket with
//     path-literal/subpath/path-regex, global-name, global-name-prefix,
//     sysctl-name, sysctl-name-prefix, iokit-user-client-class, target,
//     socket-domain, socket-protocol
//   - strings with the escapes \\ and \" only, no control characters
//   - regexes from the portable subset (see checkRegex)
//
// Precedence is SBPL's: the last rule that matches an operation decides
// (the reference srt's profiles rely on it: "(allow file-read*)" followed by
// "(deny file-read* ...)"). That is an assumption about Seatbelt that
// these tests cannot check; see the README's macOS section.
package sbpl

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind is the type of a Node.
type Kind int

const (
	// List is a parenthesised list.
	List Kind = iota
	// Symbol is a bare word (allow, file-read*, AF_UNIX).
	Symbol
	// String is a double-quoted string, unescaped.
	String
	// Int is a decimal integer.
	Int
)

// Node is one S-expression.
type Node struct {
	Kind Kind
	// Text is the symbol's name or the string's unescaped value.
	Text string
	// Int is the value of an Int.
	Int int
	// List holds a list's elements.
	List []Node
	// Line is the 1-based line the node starts on.
	Line int
}

func (n Node) String() string {
	switch n.Kind {
	case Symbol:
		return n.Text
	case String:
		return strconv.Quote(n.Text)
	case Int:
		return strconv.Itoa(n.Int)
	}
	parts := make([]string, len(n.List))
	for i, c := range n.List {
		parts[i] = c.String()
	}
	return "(" + strings.Join(parts, " ") + ")"
}

// SyntaxError is a parse error at a line.
type SyntaxError struct {
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("sbpl: line %d: %s", e.Line, e.Msg) }

// Parse reads every top-level S-expression of src. Comments run from ';'
// to the end of the line.
func Parse(src string) ([]Node, error) {
	p := &parser{src: src, line: 1}
	var out []Node
	for {
		p.skip()
		if p.pos >= len(p.src) {
			return out, nil
		}
		n, err := p.node()
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
}

type parser struct {
	src  string
	pos  int
	line int
}

func (p *parser) errf(format string, a ...any) error {
	return &SyntaxError{Line: p.line, Msg: fmt.Sprintf(format, a...)}
}

// skip passes white space and comments.
func (p *parser) skip() {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == '\n':
			p.line++
			p.pos++
		case c == ' ' || c == '\t' || c == '\r':
			p.pos++
		case c == ';':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

func (p *parser) node() (Node, error) {
	line := p.line
	switch c := p.src[p.pos]; {
	case c == '(':
		p.pos++
		n := Node{Kind: List, Line: line}
		for {
			p.skip()
			if p.pos >= len(p.src) {
				return Node{}, &SyntaxError{Line: line, Msg: "unclosed list"}
			}
			if p.src[p.pos] == ')' {
				p.pos++
				return n, nil
			}
			c, err := p.node()
			if err != nil {
				return Node{}, err
			}
			n.List = append(n.List, c)
		}
	case c == ')':
		return Node{}, p.errf("unexpected )")
	case c == '"':
		return p.str()
	case c == '#':
		// Regex literals (#"...") and booleans are valid SBPL, but the
		// generator never writes them: regexes go in ordinary strings.
		return Node{}, p.errf("# syntax is outside the generated subset")
	default:
		start := p.pos
		for p.pos < len(p.src) && !strings.ContainsRune(" \t\r\n();\"", rune(p.src[p.pos])) {
			p.pos++
		}
		tok := p.src[start:p.pos]
		if i, err := strconv.Atoi(tok); err == nil {
			return Node{Kind: Int, Int: i, Line: line}, nil
		}
		for _, r := range tok {
			if r < 0x21 || r > 0x7e {
				return Node{}, p.errf("bad character %q in symbol", r)
			}
		}
		return Node{Kind: Symbol, Text: tok, Line: line}, nil
	}
}

// str reads a string. Only \\ and \" are escapes; a raw control character
// (newline included) is an error, because the generator refuses them.
func (p *parser) str() (Node, error) {
	line := p.line
	p.pos++ // opening quote
	var b strings.Builder
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '"':
			p.pos++
			return Node{Kind: String, Text: b.String(), Line: line}, nil
		case c == '\\':
			if p.pos+1 >= len(p.src) {
				return Node{}, p.errf("unterminated escape")
			}
			e := p.src[p.pos+1]
			if e != '\\' && e != '"' {
				return Node{}, p.errf("escape \\%c is outside the generated subset", e)
			}
			b.WriteByte(e)
			p.pos += 2
		case c < 0x20 || c == 0x7f:
			return Node{}, p.errf("control character %q in string", c)
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
	return Node{}, &SyntaxError{Line: line, Msg: "unterminated string"}
}
