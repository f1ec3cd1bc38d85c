package sbpl

import (
	"strings"
	"testing"
)

func TestParseRejectsOutsideSubset(t *testing.T) {
	for name, src := range map[string]string{
		"no-version":       `(allow default)`,
		"unclosed-string":  "(version 1)\n(deny file-read* (literal \"/a))",
		"raw-newline":      "(version 1)\n(deny file-read* (literal \"/a\nb\"))",
		"other-escape":     `(version 1) (deny file-read* (literal "/a\nb"))`,
		"regex-literal":    `(version 1) (deny file-read* (regex #"^/a"))`,
		"unknown-filter":   `(version 1) (deny file-read* (vnode-type REGULAR-FILE))`,
		"unknown-op":       `(version 1) (allow file-read-everything)`,
		"posix-class":      `(version 1) (deny file-read* (regex "^/a[[:alpha:]]$"))`,
		"interval":         `(version 1) (deny file-read* (regex "^/a{2}$"))`,
		"perl-escape":      `(version 1) (deny file-read* (regex "^/a\\d$"))`,
		"anchor-in-middle": `(version 1) (deny file-read* (regex "^/a^b$"))`,
		"unbalanced":       `(version 1) (deny file-read* (literal "/a")`,
		"extra-close":      `(version 1) (deny file-read*))`,
		"bad-ip-host":      `(version 1) (allow network-outbound (remote ip "10.0.0.1:80"))`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Load(src); err == nil {
				t.Errorf("Load accepted %q", src)
			}
		})
	}
}

func TestLastMatchWins(t *testing.T) {
	p, err := Load(`(version 1)
(deny default (with message "T"))
(allow file-read*)
(deny file-read* (subpath "/secret") (with message "T"))
(allow file-write* (subpath "/w") (literal "/dev/null"))
(deny file-write* (require-all (subpath "/w") (require-not (subpath "/w/ok"))) (regex "^(.*/)?\\.bashrc$"))
(allow network-outbound (remote ip "localhost:3128"))
(allow mach-lookup (global-name "a.b") (global-name-prefix "c."))`)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		req  Request
		want bool
	}{
		{Request{Op: "file-read-data", Path: "/etc/passwd"}, true},
		{Request{Op: "file-read-data", Path: "/secret/x"}, false},
		{Request{Op: "file-read-data", Path: "/secretx"}, true},
		{Request{Op: "file-write-create", Path: "/w/ok/a"}, true},
		{Request{Op: "file-write-create", Path: "/w/a"}, false},
		{Request{Op: "file-write-create", Path: "/w/ok/.bashrc"}, false},
		{Request{Op: "file-write-data", Path: "/dev/null"}, true},
		{Request{Op: "file-write-data", Path: "/x"}, false},
		{Request{Op: "network-outbound", Remote: "localhost:3128"}, true},
		{Request{Op: "network-outbound", Remote: "127.0.0.1:3128"}, true},
		{Request{Op: "network-outbound", Remote: "localhost:22"}, false},
		{Request{Op: "network-outbound", Remote: "1.2.3.4:3128"}, false},
		{Request{Op: "network-outbound", Path: "/var/run/x.sock", Unix: true}, false},
		{Request{Op: "mach-lookup", Name: "a.b"}, true},
		{Request{Op: "mach-lookup", Name: "c.d"}, true},
		{Request{Op: "mach-lookup", Name: "a.bc"}, false},
		{Request{Op: "sysctl-read", Name: "kern.x"}, false},
	} {
		if got := p.Decide(c.req).Allow; got != c.want {
			t.Errorf("%+v: allow=%v, want %v", c.req, got, c.want)
		}
	}
	if d := p.Decide(Request{Op: "file-read-data", Path: "/secret/x"}); d.Rule == nil || d.Rule.Message != "T" {
		t.Errorf("deny rule message: %+v", d.Rule)
	}
}

func TestStringEscapes(t *testing.T) {
	nodes, err := Parse(`(literal "/a\"b\\c)(d")`)
	if err != nil {
		t.Fatal(err)
	}
	if got := nodes[0].List[1].Text; got != `/a"b\c)(d` {
		t.Errorf("got %q", got)
	}
	if s := nodes[0].String(); !strings.Contains(s, "literal") {
		t.Errorf("String: %s", s)
	}
}
