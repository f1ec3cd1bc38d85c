package settings

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/srt-go/srt/netrule"
)

// errCase is one input that Parse must reject, with the exact location.
type errCase struct {
	name      string
	in        string
	path      string
	line, col int
	msg       string // exact Error.Msg
}

var errCases = []errCase{
	// File-level.
	{"empty", "", "", 0, 0, "is empty; delete it, or put settings in it"},
	{"whitespace-only", " \n\t\r\n", "", 0, 0, "is empty; delete it, or put settings in it"},
	{"comments-only", "// nothing yet\n/* really */\n", "", 0, 0, "is empty; delete it, or put settings in it"},
	{"bom-only", "\xEF\xBB\xBF\n", "", 0, 0, "is empty; delete it, or put settings in it"},

	// Syntax.
	{"missing-comma", "{\n  \"network\": {\n    \"allowedDomains\": [\"a.com\" \"b.com\"]\n  }\n}",
		"network.allowedDomains", 3, 32, `invalid JSON: invalid character '"' after array element (expecting ',' or ']')`},
	{"missing-value", "{\"bwrapPath\": }", "bwrapPath", 1, 15, "invalid JSON: missing value after object name"},
	{"truncated", "{\n  \"network\": {", "network", 2, 15, "invalid JSON: unexpected end of input"},
	{"trailing-garbage", "{}\nx", "", 2, 1, "invalid JSON: invalid character 'x' at start of value"},
	{"two-values", "{} {}", "", 1, 4, "invalid JSON: more than one top-level value"},
	{"double-comma", "{\"allowPty\": true,,}", "", 1, 19, "invalid JSON: invalid character ',' at start of value"},
	{"lone-comma-array", "{\"git\": {\"safeDirectories\": [,]}}", "git.safeDirectories", 1, 30, "invalid JSON: invalid character ',' at start of value"},
	{"unterminated-comment", "{\n  /* todo\n}", "", 2, 3, "invalid JSON: unterminated /* comment"},
	{"invalid-utf8-key", "{\"\xff\": 1}", "", 1, 3, "invalid JSON: invalid UTF-8"},
	{"single-quotes", "{'network': {}}", "", 1, 2, "invalid JSON: invalid character '\\'' at start of value"},

	// Shape.
	{"top-level-array", "\n  [1]", "", 2, 3, "the settings must be a JSON object, got an array"},
	{"top-level-null", "null", "", 1, 1, "the settings must be a JSON object, got null"},
	{"allowWrite-string", "{\"filesystem\": {\"allowWrite\": \"/tmp\"}}", "filesystem.allowWrite", 1, 31, "expected an array of paths, got a string"},
	{"network-array", "{\"network\": []}", "network", 1, 13, "expected an object, got an array"},
	{"domains-string", "{\"network\": {\"allowedDomains\": \"a.com\"}}", "network.allowedDomains", 1, 32, "expected an array of domain patterns, got a string"},
	{"domain-number", "{\"network\": {\"deniedDomains\": [\"a.com\", 5]}}", "network.deniedDomains[1]", 1, 41, "expected a string, got a number"},
	{"domain-null", "{\"network\": {\"allowedDomains\": [null]}}", "network.allowedDomains[0]", 1, 33, "expected a string, got null"},
	{"bool-as-string", "{\"allowPty\": \"true\"}", "allowPty", 1, 14, "expected a boolean (true or false), got a string"},
	{"bool-as-number", "{\"filesystem\": {\"disabled\": 1}}", "filesystem.disabled", 1, 29, "expected a boolean (true or false), got a number"},
	{"strict-as-string", "{\"network\": {\"strictAllowlist\": \"yes\"}}", "network.strictAllowlist", 1, 33, "expected a boolean (true or false), got a string"},
	{"reason-number", "{\"network\": {\"allowlistDenyReason\": 1}}", "network.allowlistDenyReason", 1, 37, "expected a string, got a number"},
	{"ignoreViolations-array", "{\"ignoreViolations\": []}", "ignoreViolations", 1, 22, "expected an object, got an array"},
	{"ignoreViolations-value", "{\"ignoreViolations\": {\"git push\": \"/usr/bin/nc\"}}", `ignoreViolations["git push"]`, 1, 35, "expected an array of strings, got a string"},
	{"ignoreViolations-elem", "{\"ignoreViolations\": {\"*\": [\"a\", true]}}", `ignoreViolations["*"][1]`, 1, 34, "expected a string, got a boolean"},
	{"safeDirectories-string", "{\"git\": {\"safeDirectories\": \"/repo\"}}", "git.safeDirectories", 1, 29, "expected an array of strings, got a string"},
	{"git-array", "{\"git\": [\"/repo\"]}", "git", 1, 9, "expected an object, got an array"},

	// Path entries.
	{"empty-path", "{\n  \"filesystem\": {\n    \"allowWrite\": [\".\", \"src/\", \"\"]\n  }\n}", "filesystem.allowWrite[2]", 3, 33, "path cannot be empty"},
	{"empty-path-object", "{\"filesystem\": {\"denyRead\": [{\"path\": \"\"}]}}", "filesystem.denyRead[0].path", 1, 39, "path cannot be empty"},
	{"nul-in-path", "{\"filesystem\": {\"denyWrite\": [\"a\\u0000b\"]}}", "filesystem.denyWrite[0]", 1, 31, "path contains a NUL byte"},
	{"deny-glob-trailing-slash", "{\"filesystem\": {\"denyRead\": [\"/data/*/\"]}}", "filesystem.denyRead[0]", 1, 30, `a deny glob ending in "/" can never match; remove the trailing "/"`},
	{"denyWrite-glob-trailing-slash", "{\"filesystem\": {\"denyWrite\": [{\"path\": \"a/{b,c}/\"}]}}", "filesystem.denyWrite[0].path", 1, 40, `a deny glob ending in "/" can never match; remove the trailing "/"`},
	{"path-entry-number", "{\"filesystem\": {\"denyRead\": [7]}}", "filesystem.denyRead[0]", 1, 30, `expected a path (a string or {"path": ..., "literal": true}), got a number`},
	{"path-entry-missing-path", "{\"filesystem\": {\"denyRead\": [{\"literal\": true}]}}", "filesystem.denyRead[0]", 1, 30, `missing key "path"`},
	{"path-entry-typo", "{\"filesystem\": {\"denyRead\": [{\"path\": \"/a\", \"litteral\": true}]}}", "filesystem.denyRead[0]", 1, 45, `unknown key "litteral"; did you mean "literal"?`},
	{"path-entry-literal-string", "{\"filesystem\": {\"denyRead\": [{\"path\": \"/a\", \"literal\": \"yes\"}]}}", "filesystem.denyRead[0].literal", 1, 56, "expected a boolean (true or false), got a string"},
	{"path-entry-path-null", "{\"filesystem\": {\"denyRead\": [{\"path\": null}]}}", "filesystem.denyRead[0].path", 1, 39, "expected a string, got null"},

	// Unknown and duplicate keys.
	{"typo-denyWrite", "{\n  \"filesystem\": {\n    \"denyWrit\": [\".env\"]\n  }\n}", "filesystem", 3, 5, `unknown key "denyWrit"; did you mean "denyWrite"?`},
	{"typo-case", "{\"filesystem\": {\"allowwrite\": []}}", "filesystem", 1, 17, `unknown key "allowwrite"; did you mean "allowWrite"?`},
	{"typo-top", "{\"netwrok\": {}}", "", 1, 2, `unknown key "netwrok" at the top level; did you mean "network"?`},
	{"typo-network", "{\"network\": {\"allowedDomain\": []}}", "network", 1, 14, `unknown key "allowedDomain"; did you mean "allowedDomains"?`},
	{"typo-git", "{\"git\": {\"safeDirectory\": []}}", "git", 1, 10, `unknown key "safeDirectory"; did you mean "safeDirectories"?`},
	{"unknown-long-key", "{\"" + strings.Repeat("k", 100) + "\": 1}", "", 1, 2, `unknown key "` + strings.Repeat("k", 64) + `"... at the top level; known keys: ` + strings.Join(topKeys, ", ")},
	{"too-deep", "{\"ignoreViolations\": {\"x\": " + strings.Repeat("[", 100), `ignoreViolations.x` + strings.Repeat("[0]", 62), 1, 90, "nested more than 64 levels deep"},
	{"unknown-no-suggestion", "{\"git\": {\"zzzzzzzz\": 1}}", "git", 1, 10, `unknown key "zzzzzzzz"; known keys: safeDirectories`},
	{"duplicate-key", "{\n  \"filesystem\": {\"denyRead\": [\"~/.ssh\"]},\n  \"filesystem\": {}\n}", "", 3, 3, `duplicate key "filesystem" (first at line 2, column 3)`},
	{"duplicate-nested", "{\"network\": {\"allowedDomains\": [], \"allowedDomains\": [\"a.com\"]}}", "network", 1, 36, `duplicate key "allowedDomains" (first at line 1, column 14)`},

	// Numbers.
	{"depth-zero", "{\"mandatoryDenySearchDepth\": 0}", "mandatoryDenySearchDepth", 1, 30, "must be between 1 and 10, got 0"},
	{"depth-eleven", "{\"mandatoryDenySearchDepth\": 11}", "mandatoryDenySearchDepth", 1, 30, "must be between 1 and 10, got 11"},
	{"depth-fraction", "{\"mandatoryDenySearchDepth\": 2.5}", "mandatoryDenySearchDepth", 1, 30, "must be an integer, got 2.5"},
	{"depth-huge", "{\"mandatoryDenySearchDepth\": 1e400}", "mandatoryDenySearchDepth", 1, 30, "must be between 1 and 10, got 1e400"},
	{"depth-string", "{\"mandatoryDenySearchDepth\": \"3\"}", "mandatoryDenySearchDepth", 1, 30, "expected an integer, got a string"},
	{"port-zero", "{\"network\": {\"httpProxyPort\": 0}}", "network.httpProxyPort", 1, 31, "must be between 1 and 65535, got 0"},
	{"port-too-big", "{\"network\": {\"socksProxyPort\": 65536}}", "network.socksProxyPort", 1, 32, "must be between 1 and 65535, got 65536"},
	{"port-negative", "{\"network\": {\"socksProxyPort\": -1}}", "network.socksProxyPort", 1, 32, "must be between 1 and 65535, got -1"},

	// Other values.
	{"bwrap-relative", "{\"bwrapPath\": \"bin/bwrap\"}", "bwrapPath", 1, 15, `must be an absolute path, got "bin/bwrap"`},
	{"bwrap-empty", "{\"bwrapPath\": \"\"}", "bwrapPath", 1, 15, `must be an absolute path, got ""`},
	{"reason-unknown-entry", "{\"network\": {\"deniedDomainReasons\": {\"evil.com\": \"no\"}, \"deniedDomains\": [\"bad.com\"]}}",
		`network.deniedDomainReasons["evil.com"]`, 1, 38, `"evil.com" is not an entry of network.deniedDomains`},
	{"reason-not-string", "{\"network\": {\"deniedDomains\": [\"bad.com\"], \"deniedDomainReasons\": {\"bad.com\": 1}}}",
		`network.deniedDomainReasons["bad.com"]`, 1, 79, "expected a string, got a number"},
	{"resolved-address", "{\"network\": {\"deniedResolvedAddresses\": [\"10.0.0.0/8\", \"[::1]\"]}}",
		"network.deniedResolvedAddresses[1]", 1, 56, `"[::1]" is not an IP address or CIDR prefix`},

	{"schema-reference-number", "{\"$schema\": 1}", `["$schema"]`, 1, 13, "expected a string, got a number"},

	// Security keys srt-go does not implement.
	{"filter-request", "{\"network\": {\"filterRequest\": {}}}", "network.filterRequest", 1, 14, unsupportedMsg},

	// Positions after a BOM, comments and multi-byte characters.
	{"bom-column", "\xEF\xBB\xBF{\"allowPty\": 1}", "allowPty", 1, 14, "expected a boolean (true or false), got a number"},
	{"after-comment", "{ /* ü */ \"allowPty\": 1 // x\n}", "allowPty", 1, 23, "expected a boolean (true or false), got a number"},
	{"multibyte-column", "{\"filesystem\": {\"allowWrite\": [\"é\", \"日本\", \"\"]}}", "filesystem.allowWrite[2]", 1, 43, "path cannot be empty"},
	{"crlf", "{\r\n  \"allowPty\": 1\r\n}", "allowPty", 2, 15, "expected a boolean (true or false), got a number"},
}

const unsupportedMsg = "not supported by srt-go; remove it (srt-go refuses to run rather than ignore a security setting)"

func init() {
	for _, k := range []string{"filterRequest", "allowPlaintextHeaderSet"} {
		errCases = append(errCases, errCase{"unsupported-" + k, "{\"network\": {\n  \"" + k + "\": true}}", "network." + k, 2, 3, unsupportedMsg})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.in), "f.json")
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want an error", tc.in, s)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v is not an *Error", err, err)
			}
			if e.File != "f.json" || e.Path != tc.path || e.Line != tc.line || e.Column != tc.col || e.Msg != tc.msg {
				t.Errorf("Parse(%q):\n got  %q %d:%d %q\n want %q %d:%d %q",
					tc.in, e.Path, e.Line, e.Column, e.Msg, tc.path, tc.line, tc.col, tc.msg)
			}
		})
	}
}

// TestErrorText checks the whole text of a few errors.
func TestErrorText(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"located", "{\"filesystem\": {\"allowWrite\": [\"a\", \"b\", \"\"]}}", "f.json:1:42: filesystem.allowWrite[2]: path cannot be empty"},
		{"top-level", "{\"netwrk\": {}}", `f.json:1:2: unknown key "netwrk" at the top level; did you mean "network"?`},
		{"file-level", "", "f.json: is empty; delete it, or put settings in it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in), "f.json")
			if err == nil || err.Error() != tc.want {
				t.Errorf("got %v, want %s", err, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{File: "f", Line: 3, Column: 7, Path: "a.b", Msg: "bad"}, "f:3:7: a.b: bad"},
		{Error{File: "f", Line: 3, Msg: "bad"}, "f:3: bad"},
		{Error{Path: "a", Msg: "bad"}, "a: bad"},
		{Error{File: "f", Err: fs.ErrNotExist}, "f: file does not exist"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%#v.Error() = %q, want %q", tc.e, got, tc.want)
		}
	}
}

// TestDomainErrors wraps whatever netrule rejects, with path and position.
func TestDomainErrors(t *testing.T) {
	for _, tc := range []struct {
		name, entry string
		deny        bool
	}{
		{"scheme", "https://example.com", false},
		{"tld-wildcard", "*.com", false},
		{"bare-star-allow", "*", false},
		{"path", "example.com/x", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, want := netrule.ParsePattern(tc.entry, tc.deny)
			if want == nil {
				t.Skipf("netrule accepts %q", tc.entry)
			}
			key := "allowedDomains"
			if tc.deny {
				key = "deniedDomains"
			}
			in := "{\"network\": {\n\"" + key + "\": [\"ok.example.com\", \"" + tc.entry + "\"]}}"
			_, err := Parse([]byte(in), "f.json")
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse(%q) = %v, want an *Error", in, err)
			}
			col := len(key) + 24
			if e.Path != "network."+key+"[1]" || e.Line != 2 || e.Column != col || e.Msg != want.Error() || e.Err == nil {
				t.Errorf("got %q %d:%d %q (Err %v), want %q 2:%d %q", e.Path, e.Line, e.Column, e.Msg, e.Err, "network."+key+"[1]", col, want)
			}
		})
	}
}

func TestParseValid(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want func(*Settings)
	}{
		{"empty-object", "{}", func(*Settings) {}},
		{"bom", "\xEF\xBB\xBF{}", func(*Settings) {}},
		{"nulls-mean-absent", `{"network": null, "filesystem": {"denyRead": null, "allowWrite": null, "enforceNamesAtCreation": null},
			"bwrapPath": null, "mandatoryDenySearchDepth": null, "git": null, "allowPty": null,
			"credentials": null, "ignoreViolations": {"*": null}}`,
			func(s *Settings) { s.IgnoreViolations = map[string][]string{"*": nil} }},
		// An editor's schema reference (README "Editor support") is ignored.
		{"schema-reference", `{"$schema": "file:///usr/share/srt-go/srt-settings.schema.json"}`, func(*Settings) {}},
		{"schema-reference-null", `{"$schema": null}`, func(*Settings) {}},
		{"jsonc", "// srt settings\n{\n  /* no network */\n  \"network\": {\"allowedDomains\": [\"a.example.com\",],},\n}\n",
			func(s *Settings) { s.Network.AllowedDomains = []string{"a.example.com"} }},
		{"comment-chars-in-string", `{"filesystem": {"allowWrite": ["/a//b", "/c/*d*/", "/*", "\"//"]}}`,
			func(s *Settings) {
				s.Filesystem.AllowWrite = []PathEntry{{Path: "/a//b"}, {Path: "/c/*d*/"}, {Path: "/*"}, {Path: `"//`}}
			}},
		{"literal-deny-trailing-slash", `{"filesystem": {"denyRead": [{"path": "/data/*/", "literal": true}], "allowWrite": ["/x/*/"]}}`,
			func(s *Settings) {
				s.Filesystem.DenyRead = []PathEntry{{Path: "/data/*/", Literal: true}}
				s.Filesystem.AllowWrite = []PathEntry{{Path: "/x/*/"}}
			}},
		{"depth-and-ports", `{"mandatoryDenySearchDepth": 1e1, "network": {"httpProxyPort": 3128, "socksProxyPort": 1080.0}}`,
			func(s *Settings) {
				s.MandatoryDenySearchDepth = 10
				s.Network.HTTPProxyPort = 3128
				s.Network.SOCKSProxyPort = 1080
			}},
		{"ignored-helpers", `{"ripgrep": {"command": "rg"}, "socatPath": "/usr/bin/socat", "seccomp": {}, "javaAgentJarPath": 1, "windows": {}}`,
			func(s *Settings) {
				s.Ignored = []string{"ripgrep", "socatPath", "seccomp", "javaAgentJarPath", "windows"}
			}},
		{"all-keys", `{
			"network": {"allowedDomains": ["example.com"], "deniedDomains": ["bad.example.com"],
				"deniedDomainReasons": {"bad.example.com": "phishing"}, "allowlistDenyReason": "ask IT",
				"strictAllowlist": true, "deniedResolvedAddresses": ["10.0.0.0/8", "fe80::1"],
				"allowUnixSockets": ["/run/docker.sock"], "allowAllUnixSockets": true,
				"allowLocalBinding": true, "allowMachLookup": ["com.apple.x"]},
			"filesystem": {"denyRead": ["~/.ssh"], "allowRead": ["~/.ssh/known_hosts"],
				"allowWrite": ["."], "denyWrite": [{"path": ".env", "literal": true}],
				"allowGitConfig": true, "disabled": false},
			"enableWeakerNestedSandbox": true, "allowNestedUserNamespaces": true,
			"enableWeakerNetworkIsolation": true, "allowAppleEvents": true, "allowPty": true,
			"mandatoryDenySearchDepth": 5, "bwrapPath": "/usr/bin/bwrap",
			"git": {"safeDirectories": ["/repo"]}}`,
			func(s *Settings) {
				s.Network = Network{AllowedDomains: []string{"example.com"}, DeniedDomains: []string{"bad.example.com"},
					DeniedDomainReasons: map[string]string{"bad.example.com": "phishing"}, AllowlistDenyReason: "ask IT",
					StrictAllowlist: true, DeniedResolvedAddresses: []string{"10.0.0.0/8", "fe80::1"},
					AllowUnixSockets: []string{"/run/docker.sock"}, AllowAllUnixSockets: true,
					AllowLocalBinding: true, AllowMachLookup: []string{"com.apple.x"}}
				s.Filesystem = Filesystem{DenyRead: []PathEntry{{Path: "~/.ssh"}}, AllowRead: []PathEntry{{Path: "~/.ssh/known_hosts"}},
					AllowWrite: []PathEntry{{Path: "."}}, DenyWrite: []PathEntry{{Path: ".env", Literal: true}}, AllowGitConfig: true}
				s.EnableWeakerNestedSandbox, s.AllowNestedUserNamespaces = true, true
				s.EnableWeakerNetworkIsolation, s.AllowAppleEvents, s.AllowPty = true, true, true
				s.MandatoryDenySearchDepth, s.BwrapPath = 5, "/usr/bin/bwrap"
				s.Git.SafeDirectories = []string{"/repo"}
			}},
		// The reference README example (srt-notes.md §1.5).
		{"readme-example", `{
  "network": { "allowedDomains": ["github.com", "*.github.com", "npmjs.org", "*.npmjs.org"],
               "deniedDomains": ["malicious.com"], "allowUnixSockets": ["/var/run/docker.sock"],
               "allowLocalBinding": false },
  "filesystem": { "denyRead": ["~/.ssh"], "allowRead": [], "allowWrite": [".", "src/", "test/", "/tmp"],
                  "denyWrite": [".env", "config/production.json"] },
  "ignoreViolations": { "*": ["/usr/bin", "/System"], "git push": ["/usr/bin/nc"], "npm": ["/private/tmp"] },
  "enableWeakerNestedSandbox": false, "allowNestedUserNamespaces": false,
  "enableWeakerNetworkIsolation": false, "allowAppleEvents": false
}`, func(s *Settings) {
			s.Network.AllowedDomains = []string{"github.com", "*.github.com", "npmjs.org", "*.npmjs.org"}
			s.Network.DeniedDomains = []string{"malicious.com"}
			s.Network.AllowUnixSockets = []string{"/var/run/docker.sock"}
			s.Filesystem.DenyRead = []PathEntry{{Path: "~/.ssh"}}
			s.Filesystem.AllowWrite = []PathEntry{{Path: "."}, {Path: "src/"}, {Path: "test/"}, {Path: "/tmp"}}
			s.Filesystem.DenyWrite = []PathEntry{{Path: ".env"}, {Path: "config/production.json"}}
			s.IgnoreViolations = map[string][]string{"*": {"/usr/bin", "/System"}, "git push": {"/usr/bin/nc"}, "npm": {"/private/tmp"}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.in), "f.json")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := Default()
			tc.want(want)
			got.pos = nil // ErrorAt's positions; TestErrorAt checks them
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Parse:\n got  %+v\n want %+v", got, want)
			}
		})
	}
}

// TestKnownKeysHandled keeps the suggestion lists and the switches in step:
// every key offered as a suggestion must be accepted (or refused as
// unsupported), never reported as unknown.
func TestKnownKeysHandled(t *testing.T) {
	wrap := map[string]func(string) string{
		"top":        func(k string) string { return `{"` + k + `": null}` },
		"network":    func(k string) string { return `{"network": {"` + k + `": null}}` },
		"filesystem": func(k string) string { return `{"filesystem": {"` + k + `": null}}` },
		"git":        func(k string) string { return `{"git": {"` + k + `": null}}` },
		"path-entry": func(k string) string {
			return `{"filesystem": {"denyRead": [{"path": "/a", "` + k + `": null}]}}`
		},
	}
	lists := map[string][]string{"top": topKeys, "network": networkKeys, "filesystem": filesystemKeys, "git": gitKeys, "path-entry": pathEntryKeys}
	for level, keys := range lists {
		for _, k := range keys {
			in := wrap[level](k)
			if _, err := Parse([]byte(in), "f.json"); err != nil && strings.Contains(err.Error(), "unknown key") {
				t.Errorf("%s key %q: %v", level, k, err)
			}
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}

	t.Run("ok", func(t *testing.T) {
		s, err := Load(write("ok.json", `{"network": {"allowedDomains": ["example.com"]}}`, 0o644))
		if err != nil || len(s.Network.AllowedDomains) != 1 {
			t.Fatalf("Load = %+v, %v", s, err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		p := filepath.Join(dir, "nope.json")
		_, err := Load(p)
		var e *Error
		if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &e) || err.Error() != p+": does not exist" {
			t.Fatalf("Load(missing) = %v", err)
		}
	})
	t.Run("empty", func(t *testing.T) {
		p := write("empty.json", "\n", 0o644)
		if _, err := Load(p); err == nil || err.Error() != p+": is empty; delete it, or put settings in it" {
			t.Fatalf("Load(empty) = %v", err)
		}
	})
	t.Run("located", func(t *testing.T) {
		p := write("bad.json", "{\n  \"filesystem\": {\"denyWrit\": []}\n}", 0o644)
		_, err := Load(p)
		if want := p + `:2:18: filesystem: unknown key "denyWrit"; did you mean "denyWrite"?`; err == nil || err.Error() != want {
			t.Fatalf("Load = %v, want %s", err, want)
		}
	})
	t.Run("directory", func(t *testing.T) {
		_, err := Load(dir)
		if err == nil || err.Error() != dir+": could not be read: is a directory" {
			t.Fatalf("Load(dir) = %v", err)
		}
	})
	t.Run("too-large", func(t *testing.T) {
		p := write("big.json", "", 0o644)
		if err := os.Truncate(p, MaxFileSize+1); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p); err == nil || !strings.HasSuffix(err.Error(), "is larger than 16 MiB; not a settings file") {
			t.Fatalf("Load(big) = %v", err)
		}
	})
	t.Run("unreadable", func(t *testing.T) {
		p := write("secret.json", "{}", 0o000)
		if f, err := os.Open(p); err == nil {
			f.Close()
			t.Skip("mode 000 file is readable here (CAP_DAC_OVERRIDE); see TestFileErrorPermission")
		}
		_, err := Load(p)
		if !errors.Is(err, fs.ErrPermission) || err.Error() != p+": could not be read: permission denied" {
			t.Fatalf("Load(unreadable) = %v", err)
		}
	})
}

// TestFileErrorPermission covers EACCES where the test runs with
// CAP_DAC_OVERRIDE and cannot make a real unreadable file.
func TestFileErrorPermission(t *testing.T) {
	err := error(fileError("/x.json", &fs.PathError{Op: "open", Path: "/x.json", Err: syscall.EACCES}))
	if !errors.Is(err, fs.ErrPermission) || err.Error() != "/x.json: could not be read: permission denied" {
		t.Fatalf("fileError(EACCES) = %v", err)
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("HOME", "/home/someone")
	if p, err := DefaultPath(); err != nil || p != "/home/someone/.srt-settings.json" {
		t.Fatalf("DefaultPath() = %q, %v", p, err)
	}
}

func TestSuggest(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"denyWrit", "denyWrite"},
		{"DENYREAD", "denyRead"},
		{"allowWrites", "allowWrite"},
		{"x", ""},
		{"somethingElse", ""},
	} {
		if got := suggest(tc.name, filesystemKeys); got != tc.want {
			t.Errorf("suggest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestPathEntryRefusals: path entries that would silently protect nothing
// are errors (found by an adversarial review: a malformed glob in denyRead
// used to drop the entry).
func TestPathEntryRefusals(t *testing.T) {
	for _, c := range []struct{ name, json, want string }{
		{"unclosed-brace", `{"filesystem":{"denyRead":["~/.ssh/{id_rsa,id_ed25519"]}}`, "not a valid glob"},
		{"unclosed-bracket", `{"filesystem":{"denyRead":["~/.ssh/id_rsa["]}}`, "not a valid glob"},
		{"trailing-newline", `{"filesystem":{"denyRead":["~/.ssh\n"]}}`, "control character"},
		{"tilde-user", `{"filesystem":{"denyRead":["~root/.ssh"]}}`, "not ~user"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.json), "s.json")
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "filesystem.denyRead[0]") {
				t.Fatalf("Parse: %v; want an error at filesystem.denyRead[0] containing %q", err, c.want)
			}
		})
	}
	if _, err := Parse([]byte(`{"filesystem":{"denyRead":[{"path":"~/a[b","literal":true}]}}`), "s.json"); err != nil {
		t.Fatalf("a literal entry with glob characters must be accepted: %v", err)
	}
}
