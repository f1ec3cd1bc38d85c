package proxy

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/srt-go/srt/netrule"
)

// HTTPRule is one entry of network.httpRules (srt-go, beyond the
// reference): the requests allowed to the hosts it names.
type HTTPRule struct {
	// Name identifies the rule in refusals ("network.httpRules[0]").
	Name string
	// Domains are the hosts the rule is about, allowedDomains syntax
	// (netrule.ParsePattern), a port restricting an entry to that port.
	Domains []netrule.Pattern
	// Methods are the methods allowed, compared exactly (methods are case
	// sensitive, RFC 9110 §9.1). Empty allows every method.
	Methods []string
	// Paths are the path prefixes allowed, decoded ("/api/graphql"), each
	// matched at a segment boundary: "/api" covers "/api" and "/api/x",
	// not "/apix"; one ending in '/' covers what starts with it. Empty
	// allows every path.
	Paths []string
}

// HTTPRules are compiled network.httpRules. A request to a host some
// rule names (Names) must match at least one of the rules naming that
// host, its method and its path; hosts no rule names are not restricted.
// The nil *HTTPRules names no host.
type HTTPRules struct{ rules []HTTPRule }

// NewHTTPRules returns rules as HTTPRules, nil for none. The slices are
// kept, not copied.
func NewHTTPRules(rules []HTTPRule) *HTTPRules {
	if len(rules) == 0 {
		return nil
	}
	return &HTTPRules{rules: rules}
}

// Names reports whether a rule names host (canonical, or any spelling
// netrule.CanonicalHost reads) on port. A host that does not parse is
// named (it would be refused anyway).
func (r *HTTPRules) Names(host string, port int) bool {
	if r == nil {
		return false
	}
	canon, ip, err := netrule.CanonicalHost(host)
	if err != nil {
		return true
	}
	for i := range r.rules {
		if r.rules[i].names(canon, ip, port) {
			return true
		}
	}
	return false
}

func (h *HTTPRule) names(canon string, ip netip.Addr, port int) bool {
	for _, p := range h.Domains {
		if p.Match(canon, ip, port) {
			return true
		}
	}
	return false
}

// judge refuses a request to a host r names (the caller checked) that no
// rule naming it allows. A path rule must hold for every reading of the
// path (requestTarget.decodedPaths; asSpelled adds the spelling's).
func (r *HTTPRules) judge(fr *FilterRequest, t requestTarget, asSpelled bool) *requestRefusal {
	canon, ip, _ := netrule.CanonicalHost(fr.Host)
	readings, decodable := t.decodedPaths(asSpelled)
	var names []string
	for i := range r.rules {
		h := &r.rules[i]
		if !h.names(canon, ip, fr.Port) {
			continue
		}
		names = append(names, h.Name)
		if len(h.Methods) > 0 && !slices.Contains(h.Methods, fr.Method) {
			continue
		}
		if len(h.Paths) == 0 {
			return nil
		}
		if decodable && allUnder(readings, h.Paths) {
			return nil
		}
	}
	return &requestRefusal{status: 403, xerr: errHdrFiltered, rule: names[0],
		reason: fmt.Sprintf("the method and path match no rule for %s (%s)", fr.Host, strings.Join(names, ", "))}
}

// allUnder reports whether every reading is under one of the prefixes.
func allUnder(readings, prefixes []string) bool {
	for _, p := range readings {
		if !slices.ContainsFunc(prefixes, func(pre string) bool { return underPrefix(p, pre) }) {
			return false
		}
	}
	return true
}

// underPrefix reports whether path is pre or below it at a segment
// boundary.
func underPrefix(path, pre string) bool {
	if !strings.HasPrefix(path, pre) {
		return false
	}
	return len(path) == len(pre) || strings.HasSuffix(pre, "/") || path[len(pre)] == '/'
}
