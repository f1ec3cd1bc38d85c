package settings

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzParse checks that Parse never panics, that it returns either
// settings or an *Error, and that error positions fall inside the input.
func FuzzParse(f *testing.F) {
	for _, tc := range errCases {
		f.Add([]byte(tc.in))
	}
	f.Add([]byte(`{"network": {"allowedDomains": ["*.example.com:443", "[::1]"], "deniedDomains": ["*"],
		"deniedDomainReasons": {"*": "no"}}, "filesystem": {"denyRead": [{"path": "~/.ssh", "literal": true}]},
		"ignoreViolations": {"*": ["/usr"]}, "ripgrep": {}} // done`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data, "fuzz.json")
		if err == nil {
			if s == nil {
				t.Fatal("Parse returned nil settings and nil error")
			}
			return
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("error %T %v is not an *Error", err, err)
		}
		lines := 1 + bytes.Count(data, []byte("\n"))
		if e.Line < 0 || e.Column < 0 || e.Line > lines || (e.Line > 0) != (e.Column > 0) {
			t.Fatalf("bad position %d:%d for %d lines: %v", e.Line, e.Column, lines, err)
		}
		_ = err.Error()
	})
}
