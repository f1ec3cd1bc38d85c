package settings

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestHTTPRulesParse(t *testing.T) {
	s, err := Parse([]byte(`{"network": {"allowedDomains": ["github.com"],
  "httpRules": [{"domains": ["github.com"], "methods": ["GET"]}, {"domains": ["api.github.com:443"], "methods": ["POST"], "paths": ["/graphql"]}],
  "refuseOpaqueTunnels": true, "ambiguousRequestTarget": "asSpelled", "stripResponseHeaders": ["set-cookie"]}}`), "f.json")
	if err != nil {
		t.Fatal(err)
	}
	want := []HTTPRule{{Domains: []string{"github.com"}, Methods: []string{"GET"}},
		{Domains: []string{"api.github.com:443"}, Methods: []string{"POST"}, Paths: []string{"/graphql"}}}
	n := s.Network
	if !reflect.DeepEqual(n.HTTPRules, want) || !n.RefuseOpaqueTunnels || n.AmbiguousRequestTarget != "asSpelled" || !reflect.DeepEqual(n.StripResponseHeaders, []string{"set-cookie"}) {
		t.Errorf("got %+v", n)
	}
}

// Every bad input is one error naming the key and position.
func TestHTTPRulesErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, path, msg string }{
		{"not-array", `{"network": {"httpRules": {}}}`, "network.httpRules", "expected an array of rules, got an object"},
		{"not-object", `{"network": {"httpRules": ["github.com"]}}`, "network.httpRules[0]", `expected an object {"domains": [...], "methods": [...], "paths": [...]}, got a string`},
		{"no-domains", `{"network": {"httpRules": [{"methods": ["GET"]}]}}`, "network.httpRules[0]", `missing key "domains"`},
		{"empty-domains", `{"network": {"httpRules": [{"domains": []}]}}`, "network.httpRules[0].domains", "a rule needs at least one domain"},
		{"bad-pattern", `{"network": {"httpRules": [{"domains": ["*.com"]}]}}`, "network.httpRules[0].domains[0]", ""},
		{"bad-method", `{"network": {"httpRules": [{"domains": ["a.com"], "methods": ["GET", "G T"]}]}}`, "network.httpRules[0].methods[1]", `not an HTTP method: "G T"`},
		{"lower-method", `{"network": {"httpRules": [{"domains": ["a.com"], "methods": ["get"]}]}}`, "network.httpRules[0].methods[0]", `methods are case-sensitive; write "GET"`},
		{"connect-method", `{"network": {"httpRules": [{"domains": ["a.com"], "methods": ["CONNECT"]}]}}`, "network.httpRules[0].methods[0]", "CONNECT is a tunnel, not a request a rule can allow"},
		{"empty-methods", `{"network": {"httpRules": [{"domains": ["a.com"], "methods": []}]}}`, "network.httpRules[0].methods", "empty; leave the key out to allow every one of the methods"},
		{"relative-path", `{"network": {"httpRules": [{"domains": ["a.com"], "paths": ["api"]}]}}`, "network.httpRules[0].paths[0]", `a path prefix must start with "/", got "api"`},
		{"query-path", `{"network": {"httpRules": [{"domains": ["a.com"], "paths": ["/a?b"]}]}}`, "network.httpRules[0].paths[0]", `a path prefix has no query, fragment or backslash: "/a?b"`},
		{"dot-path", `{"network": {"httpRules": [{"domains": ["a.com"], "paths": ["/a/../b"]}]}}`, "network.httpRules[0].paths[0]", `a path prefix has no "." or ".." segment: "/a/../b"`},
		{"typo-key", `{"network": {"httpRules": [{"domains": ["a.com"], "path": ["/a"]}]}}`, "network.httpRules[0]", `unknown key "path"; did you mean "paths"?`},
		{"ambiguous-value", `{"network": {"ambiguousRequestTarget": "normalise"}}`, "network.ambiguousRequestTarget", `"normalise": want one of refuse, asSpelled, normalize`},
		{"opaque-not-bool", `{"network": {"refuseOpaqueTunnels": "yes"}}`, "network.refuseOpaqueTunnels", "expected a boolean (true or false), got a string"},
		{"strip-bad-name", `{"network": {"stripResponseHeaders": ["set cookie"]}}`, "network.stripResponseHeaders[0]", `not a header name: "set cookie"`},
		{"own-proxy", `{"network": {"httpProxyPort": 3128, "httpRules": [{"domains": ["a.com"]}]}}`, "network.httpRules", "cannot be enforced with httpProxyPort or socksProxyPort: traffic through your own proxy does not pass srt's"},
		{"own-socks", `{"network": {"socksProxyPort": 1080, "refuseOpaqueTunnels": true}}`, "network.refuseOpaqueTunnels", "cannot be enforced with httpProxyPort or socksProxyPort: traffic through your own proxy does not pass srt's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in), "f.json")
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse: %v, want an *Error", err)
			}
			if e.Path != tc.path || (tc.msg != "" && e.Msg != tc.msg) || e.Line != 1 || e.Column == 0 || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %q (%d:%d %q), want path %q msg %q", err, e.Line, e.Column, e.Msg, tc.path, tc.msg)
			}
		})
	}
}
