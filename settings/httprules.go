package settings

import (
	"net/http"
	"strings"
)

// HTTPRule is one entry of "network.httpRules" (srt-go, beyond the
// reference): which requests the hosts it names accept. A request to a
// host some rule names must match at least one such rule, its method and
// its path; hosts no rule names are not restricted. srt refuses the
// tunnels it cannot see into for those hosts (a CONNECT that is not
// TLS-terminated, every SOCKS5 CONNECT). policy.NetworkOf compiles the
// list into proxy.HTTPRules.
type HTTPRule struct {
	// Domains are the hosts, allowedDomains syntax (a ":port" restricts
	// an entry to that port). Required, non-empty.
	Domains []string `json:"domains"`
	// Methods are the allowed methods, upper-case HTTP tokens ("GET").
	// Absent allows every method; an empty list is an error.
	Methods []string `json:"methods,omitempty"`
	// Paths are the allowed path prefixes, decoded, each starting with
	// '/', matched at a segment boundary ("/api" covers "/api/x", not
	// "/apix"). Absent allows every path; an empty list is an error.
	Paths []string `json:"paths,omitempty"`
}

// ambiguousTargetValues are network.ambiguousRequestTarget's values.
var ambiguousTargetValues = []string{"refuse", "asSpelled", "normalize"}

// httpRules checks network.httpRules.
func (c *checker) httpRules(n *node, path string) ([]HTTPRule, error) {
	elems, err := c.array(n, path, "rules")
	if err != nil || elems == nil {
		return nil, err
	}
	out := make([]HTTPRule, 0, len(elems))
	for i, e := range elems {
		r, err := c.httpRule(e, joinIndex(path, i))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (c *checker) httpRule(n *node, path string) (HTTPRule, error) {
	var r HTTPRule
	if n.kind != '{' {
		return r, c.errorAt(n.off, path, nil, `expected an object {"domains": [...], "methods": [...], "paths": [...]}, got %s`, kindName(n.kind))
	}
	seen := false
	for _, m := range n.members {
		p := joinKey(path, m.name)
		var err error
		switch m.name {
		case "domains":
			seen = true
			if r.Domains, err = c.domains(m.val, p, false); err == nil && len(r.Domains) == 0 {
				err = c.errorAt(m.val.off, p, nil, "a rule needs at least one domain")
			}
		case "methods":
			r.Methods, err = c.nonEmptyList(m.val, p, "methods", checkMethod)
		case "paths":
			r.Paths, err = c.nonEmptyList(m.val, p, "path prefixes", checkRulePath)
		default:
			err = c.unknown(m, path, httpRuleKeys)
		}
		if err != nil {
			return r, err
		}
	}
	if !seen {
		return r, c.errorAt(n.off, path, nil, `missing key "domains"`)
	}
	return r, nil
}

// nonEmptyList reads a list of strings each passing check (which returns
// a message, "" for none); null means absent, [] is an error: leaving the
// key out allows everything, an empty list would allow nothing.
func (c *checker) nonEmptyList(n *node, path, what string, check func(string) string) ([]string, error) {
	if n.kind == 'n' {
		return nil, nil
	}
	list, err := c.strList(n, path, what)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, c.errorAt(n.off, path, nil, "empty; leave the key out to allow every one of the %s", what)
	}
	for i, s := range list {
		if msg := check(s); msg != "" {
			return nil, c.errorAt(n.elems[i].off, joinIndex(path, i), nil, "%s", msg)
		}
	}
	return list, nil
}

// checkMethod accepts an upper-case HTTP method token (RFC 9110 §9.1).
func checkMethod(m string) string {
	if m == "" || strings.IndexFunc(m, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
		return "not an HTTP method: " + quoteKey(m)
	}
	if up := strings.ToUpper(m); up != m {
		return "methods are case-sensitive; write " + quoteKey(up)
	}
	if m == http.MethodConnect {
		return "CONNECT is a tunnel, not a request a rule can allow"
	}
	return ""
}

// isTokenChar reports whether r is a tchar (RFC 9110 §5.6.2).
func isTokenChar(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}

// checkRulePath accepts a decoded absolute path without query, fragment,
// backslash, control characters or dot segments.
func checkRulePath(p string) string {
	switch {
	case !strings.HasPrefix(p, "/"):
		return "a path prefix must start with \"/\", got " + quoteKey(p)
	case strings.ContainsAny(p, "?#\\"):
		return "a path prefix has no query, fragment or backslash: " + quoteKey(p)
	case strings.IndexFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return "a path prefix contains a control character"
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return "a path prefix has no \".\" or \"..\" segment: " + quoteKey(p)
		}
	}
	return ""
}

// headerNames reads a list of HTTP header names (stripResponseHeaders).
func (c *checker) headerNames(n *node, path string) ([]string, error) {
	list, err := c.strList(n, path, "header names")
	if err != nil {
		return nil, err
	}
	for i, h := range list {
		if h == "" || strings.IndexFunc(h, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
			return nil, c.errorAt(n.elems[i].off, joinIndex(path, i), nil, "not a header name: %s", quoteKey(h))
		}
	}
	return list, nil
}

// oneOf reads a string that must be one of values; null is "".
func (c *checker) oneOf(n *node, path string, values []string) (string, error) {
	s, err := c.str(n, path, true)
	if err != nil || n.kind == 'n' {
		return "", err
	}
	for _, v := range values {
		if s == v {
			return s, nil
		}
	}
	return "", c.errorAt(n.off, path, nil, "%s: want one of %s", quoteKey(s), strings.Join(values, ", "))
}

// checkFilterPorts refuses httpRules and refuseOpaqueTunnels together
// with a user-run proxy (httpProxyPort, socksProxyPort): traffic through
// it never passes srt's proxies, which enforce them.
func (c *checker) checkFilterPorts(n *node, path string, nw *Network) error {
	if len(nw.HTTPRules) == 0 && !nw.RefuseOpaqueTunnels {
		return nil
	}
	if nw.HTTPProxyPort == 0 && nw.SOCKSProxyPort == 0 {
		return nil
	}
	key := "httpRules"
	if len(nw.HTTPRules) == 0 {
		key = "refuseOpaqueTunnels"
	}
	return c.errorAt(n.off, joinKey(path, key), nil, "cannot be enforced with httpProxyPort or socksProxyPort: traffic through your own proxy does not pass srt's")
}
