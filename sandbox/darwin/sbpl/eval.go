package sbpl

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Profile is a parsed profile: its rules in order.
type Profile struct {
	Version int
	Rules   []Rule
}

// Rule is one (allow ...) or (deny ...) form.
type Rule struct {
	Allow bool
	// Ops are the operation names as written ("file-write*", "default").
	Ops []string
	// Filters are the rule's filters; the rule applies when any of them
	// matches (SBPL's implicit require-any), or always when there are none.
	Filters []Node
	// Message is the (with message "...") text, or "".
	Message string
	Line    int

	compiled []filter
}

// Request is one operation to decide. Only the fields the operation's
// filters look at need to be set.
type Request struct {
	// Op is a concrete operation: "file-read-data", "file-write-create",
	// "file-write-unlink", "network-outbound", "mach-lookup", "sysctl-read"…
	Op string
	// Path is the file path, or the socket path when Unix is set.
	Path string
	// Unix says a network operation is on a unix socket at Path.
	Unix bool
	// Remote and Local are "host:port" for IP network operations, host
	// "localhost" or an address.
	Remote, Local string
	// Name is the mach service, sysctl or IOKit user-client class name.
	Name string
	// Target is "same-sandbox" or "other" for process-info*, signal and
	// mach-priv-task-port.
	Target string
	// SocketDomain ("AF_UNIX", "AF_SYSTEM") and SocketProtocol are for
	// system-socket.
	SocketDomain   string
	SocketProtocol int
}

// Decision is the outcome of a Request.
type Decision struct {
	Allow bool
	// Rule is the rule that decided; nil when no rule matched (which
	// SBPL treats as deny; a valid profile always has a default rule).
	Rule *Rule
}

// Load parses src and checks that it is a profile in the subset.
func Load(src string) (*Profile, error) {
	nodes, err := Parse(src)
	if err != nil {
		return nil, err
	}
	p := &Profile{}
	for _, n := range nodes {
		if n.Kind != List || len(n.List) == 0 || n.List[0].Kind != Symbol {
			return nil, &SyntaxError{n.Line, "top-level form is not (symbol ...)"}
		}
		switch head := n.List[0].Text; head {
		case "version":
			if len(n.List) != 2 || n.List[1].Kind != Int || n.List[1].Int != 1 {
				return nil, &SyntaxError{n.Line, "want (version 1)"}
			}
			if p.Version != 0 || len(p.Rules) > 0 {
				return nil, &SyntaxError{n.Line, "(version 1) must come first, once"}
			}
			p.Version = 1
		case "allow", "deny":
			r, err := rule(n)
			if err != nil {
				return nil, err
			}
			p.Rules = append(p.Rules, r)
		default:
			return nil, &SyntaxError{n.Line, fmt.Sprintf("unknown form %q", head)}
		}
	}
	if p.Version != 1 {
		return nil, &SyntaxError{1, "no (version 1)"}
	}
	return p, nil
}

func rule(n Node) (Rule, error) {
	r := Rule{Allow: n.List[0].Text == "allow", Line: n.Line}
	for _, a := range n.List[1:] {
		switch {
		case a.Kind == Symbol:
			if len(r.Filters) > 0 {
				return r, &SyntaxError{a.Line, "operation after a filter"}
			}
			if !validOp(a.Text) {
				return r, &SyntaxError{a.Line, fmt.Sprintf("unknown operation %q", a.Text)}
			}
			r.Ops = append(r.Ops, a.Text)
		case a.Kind == List && len(a.List) > 0 && a.List[0].Kind == Symbol && a.List[0].Text == "with":
			if len(a.List) != 3 || a.List[1].Kind != Symbol || a.List[1].Text != "message" || a.List[2].Kind != String {
				return r, &SyntaxError{a.Line, "want (with message \"...\")"}
			}
			r.Message = a.List[2].Text
		default:
			f, err := compileFilter(a)
			if err != nil {
				return r, err
			}
			r.Filters = append(r.Filters, a)
			r.compiled = append(r.compiled, f)
		}
	}
	if len(r.Ops) == 0 {
		return r, &SyntaxError{n.Line, "rule without an operation"}
	}
	return r, nil
}

// ops are the operation names the generator may use. A trailing '*' is a
// wildcard over the names that start with what precedes it.
var ops = map[string]bool{
	"default": true, "file*": true, "file-read*": true, "file-read-data": true,
	"file-read-metadata": true, "file-read-xattr": true, "file-write*": true,
	"file-write-create": true, "file-write-data": true, "file-write-unlink": true,
	"file-write-mode": true, "file-write-owner": true, "file-write-times": true,
	"file-write-xattr": true, "file-write-flags": true, "file-write-setugid": true,
	"file-ioctl": true, "file-link": true,
	"process-exec": true, "process-exec*": true, "process-fork": true, "process-info*": true,
	"signal": true, "mach-priv-task-port": true, "mach-lookup": true,
	"user-preference-read": true, "ipc-posix-shm": true, "ipc-posix-sem": true,
	"iokit-open": true, "iokit-get-properties": true, "system-socket": true,
	"sysctl-read": true, "sysctl-write": true, "distributed-notification-post": true,
	"network*": true, "network-bind": true, "network-inbound": true, "network-outbound": true,
	"pseudo-tty": true, "appleevent-send": true, "lsopen": true,
}

func validOp(s string) bool { return ops[s] }

// opMatches reports whether a rule's operation covers a concrete one.
func opMatches(ruleOp, op string) bool {
	if ruleOp == "default" {
		return true
	}
	if prefix, ok := strings.CutSuffix(ruleOp, "*"); ok {
		return strings.HasPrefix(op, prefix)
	}
	return ruleOp == op
}

// Decide returns the decision of the last rule whose operation covers
// req.Op and whose filters match req.
func (p *Profile) Decide(req Request) Decision {
	for i := len(p.Rules) - 1; i >= 0; i-- {
		r := &p.Rules[i]
		if r.matches(req) {
			return Decision{Allow: r.Allow, Rule: r}
		}
	}
	return Decision{}
}

// Allowed is Decide(Request{Op: op, Path: path}).Allow.
func (p *Profile) Allowed(op, path string) bool {
	return p.Decide(Request{Op: op, Path: path}).Allow
}

func (r *Rule) matches(req Request) bool {
	opOK := false
	for _, o := range r.Ops {
		if opMatches(o, req.Op) {
			opOK = true
			break
		}
	}
	if !opOK {
		return false
	}
	if len(r.compiled) == 0 {
		return true
	}
	for _, f := range r.compiled {
		if f(req) {
			return true
		}
	}
	return false
}

type filter func(Request) bool

func str1(n Node) (string, error) {
	if len(n.List) != 2 || n.List[1].Kind != String {
		return "", &SyntaxError{n.Line, fmt.Sprintf("want (%s \"...\")", n.List[0].Text)}
	}
	return n.List[1].Text, nil
}

// compileFilter turns a filter form into a predicate.
func compileFilter(n Node) (filter, error) {
	if n.Kind != List || len(n.List) == 0 || n.List[0].Kind != Symbol {
		return nil, &SyntaxError{n.Line, fmt.Sprintf("not a filter: %s", n)}
	}
	head := n.List[0].Text
	switch head {
	case "literal", "path-literal", "subpath", "regex", "path-regex":
		s, err := str1(n)
		if err != nil {
			return nil, err
		}
		return pathFilter(head, s, n.Line)
	case "global-name", "sysctl-name", "iokit-user-client-class":
		s, err := str1(n)
		if err != nil {
			return nil, err
		}
		return func(r Request) bool { return r.Name == s }, nil
	case "global-name-prefix", "sysctl-name-prefix":
		s, err := str1(n)
		if err != nil {
			return nil, err
		}
		return func(r Request) bool { return r.Name != "" && strings.HasPrefix(r.Name, s) }, nil
	case "require-any", "require-all":
		var fs []filter
		for _, c := range n.List[1:] {
			f, err := compileFilter(c)
			if err != nil {
				return nil, err
			}
			fs = append(fs, f)
		}
		if len(fs) == 0 {
			return nil, &SyntaxError{n.Line, head + " with no filters"}
		}
		all := head == "require-all"
		return func(r Request) bool {
			for _, f := range fs {
				if f(r) != all {
					return !all
				}
			}
			return all
		}, nil
	case "require-not":
		if len(n.List) != 2 {
			return nil, &SyntaxError{n.Line, "require-not takes one filter"}
		}
		f, err := compileFilter(n.List[1])
		if err != nil {
			return nil, err
		}
		return func(r Request) bool { return !f(r) }, nil
	case "remote", "local":
		if len(n.List) != 3 || n.List[1].Kind != Symbol {
			return nil, &SyntaxError{n.Line, "want (remote|local ip|unix-socket ...)"}
		}
		switch n.List[1].Text {
		case "ip":
			if n.List[2].Kind != String {
				return nil, &SyntaxError{n.Line, "want (remote ip \"host:port\")"}
			}
			return ipFilter(head, n.List[2].Text, n.Line)
		case "unix-socket":
			f, err := compileFilter(n.List[2])
			if err != nil {
				return nil, err
			}
			return func(r Request) bool { return r.Unix && f(r) }, nil
		}
		return nil, &SyntaxError{n.Line, "unknown address kind " + n.List[1].Text}
	case "target":
		if len(n.List) != 2 || n.List[1].Kind != Symbol || n.List[1].Text != "same-sandbox" {
			return nil, &SyntaxError{n.Line, "want (target same-sandbox)"}
		}
		return func(r Request) bool { return r.Target == "same-sandbox" }, nil
	case "socket-domain":
		if len(n.List) != 2 || n.List[1].Kind != Symbol {
			return nil, &SyntaxError{n.Line, "want (socket-domain AF_...)"}
		}
		d := n.List[1].Text
		return func(r Request) bool { return r.SocketDomain == d }, nil
	case "socket-protocol":
		if len(n.List) != 2 || n.List[1].Kind != Int {
			return nil, &SyntaxError{n.Line, "want (socket-protocol N)"}
		}
		pr := n.List[1].Int
		return func(r Request) bool { return r.SocketDomain != "" && r.SocketProtocol == pr }, nil
	}
	return nil, &SyntaxError{n.Line, fmt.Sprintf("unknown filter %q", head)}
}

func pathFilter(kind, s string, line int) (filter, error) {
	switch kind {
	case "literal", "path-literal":
		return func(r Request) bool { return r.Path != "" && r.Path == s }, nil
	case "subpath":
		if s == "" || s[0] != '/' {
			return nil, &SyntaxError{line, "subpath must be absolute"}
		}
		root := strings.TrimSuffix(s, "/")
		return func(r Request) bool {
			return r.Path != "" && (root == "" || r.Path == root || strings.HasPrefix(r.Path, root+"/"))
		}, nil
	}
	if err := checkRegex(s); err != nil {
		return nil, &SyntaxError{line, err.Error()}
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, &SyntaxError{line, fmt.Sprintf("regex %q: %v", s, err)}
	}
	return func(r Request) bool { return r.Path != "" && re.MatchString(r.Path) }, nil
}

// ipFilter matches "host:port" where host is "localhost" or "*" and port
// a number or "*" (the only forms SBPL accepts).
func ipFilter(side, spec string, line int) (filter, error) {
	host, port, ok := strings.Cut(spec, ":")
	if !ok || host != "localhost" && host != "*" {
		return nil, &SyntaxError{line, fmt.Sprintf("ip %q: host must be localhost or *", spec)}
	}
	if port != "*" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, &SyntaxError{line, fmt.Sprintf("ip %q: bad port", spec)}
		}
	}
	return func(r Request) bool {
		addr := r.Remote
		if side == "local" {
			addr = r.Local
		}
		if r.Unix || addr == "" {
			return false
		}
		i := strings.LastIndexByte(addr, ':')
		if i < 0 {
			return false
		}
		h, p := addr[:i], addr[i+1:]
		loop := h == "localhost" || h == "127.0.0.1" || h == "[::1]"
		return (host == "*" || loop) && (port == "*" || port == p)
	}, nil
}

// checkRegex accepts only the portable subset the generator writes, in
// which POSIX extended regular expressions (what Seatbelt's matcher reads)
// and Go's RE2 agree: literal characters (a lone ] or } included); a backslash before one of
// .[\()*+?{|^$ ; '.'; the postfix operators * + ?; groups and '|';
// '^' only first and '$' only last; bracket expressions whose members are
// literal characters and ranges, optionally negated with a leading '^',
// holding no '\', '[' or ']'.
func checkRegex(s string) error {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) || !strings.ContainsRune(`.[\()*+?{|^$`, rune(s[i+1])) {
				return fmt.Errorf("regex %q: escape at %d outside the portable subset", s, i)
			}
			i++
		case c == '^' && i != 0, c == '$' && i != len(s)-1:
			return fmt.Errorf("regex %q: anchor at %d", s, i)
		case c == '{':
			// An interval; a lone '}' or ']' is an ordinary character
			// in both dialects.
			return fmt.Errorf("regex %q: unescaped { at %d", s, i)
		case c == '[':
			j := i + 1
			if j < len(s) && s[j] == '^' {
				j++
			}
			start := j
			for j < len(s) && s[j] != ']' {
				if s[j] == '\\' || s[j] == '[' {
					return fmt.Errorf("regex %q: %c inside brackets at %d", s, s[j], j)
				}
				j++
			}
			if j >= len(s) || j == start {
				return fmt.Errorf("regex %q: bad bracket expression at %d", s, i)
			}
			i = j
		case c < 0x20 || c == 0x7f:
			return fmt.Errorf("regex %q: control character", s)
		}
	}
	return nil
}
