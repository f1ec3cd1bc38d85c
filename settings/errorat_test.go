package settings

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestErrorAt checks that an error found after parsing points at the
// value it is about, or at the nearest enclosing value the file spells.
func TestErrorAt(t *testing.T) {
	f := filepath.Join(t.TempDir(), "s.json")
	src := "{\n  // a comment with é\n  \"network\": {\n    \"tlsTerminate\": {\"caCertPath\": \"/x/ca.pem\",\n                     \"caKeyPath\":  \"/x/ca.key\"},\n" +
		"    \"allowedDomains\": [\"a.test\", \"b.test\"]\n  },\n  \"ignoreViolations\": {\"git push\": [\"x\"]}\n}\n"
	if err := os.WriteFile(f, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	cause := &fs.PathError{Op: "open", Path: "/x/ca.key", Err: fs.ErrNotExist}
	for _, tc := range []struct {
		path      string
		line, col int
	}{
		{"network.tlsTerminate.caKeyPath", 5, 36},
		{"network.tlsTerminate.caCertPath", 4, 36},
		{"network.tlsTerminate", 4, 21},
		{"network.tlsTerminate.extraCaCertPaths[0]", 4, 21}, // absent: the enclosing object
		{"network.allowedDomains[1]", 6, 34},
		{"network.allowedDomains[7]", 6, 23},
		{`ignoreViolations["git push"]`, 8, 36},
		{`ignoreViolations["nope.x"]`, 8, 23},
		{"network", 3, 14},
		{"nothing.here", 0, 0},
	} {
		err := s.ErrorAt(tc.path, cause)
		var e *Error
		if !errors.As(err, &e) || e.File != s.Source || e.Line != tc.line || e.Column != tc.col || e.Path != tc.path {
			t.Errorf("ErrorAt(%q) = %#v; want %s:%d:%d", tc.path, err, s.Source, tc.line, tc.col)
			continue
		}
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ErrorAt(%q) hides its cause from errors.Is", tc.path)
		}
	}
	if got, want := s.ErrorAt("network.tlsTerminate.caKeyPath", cause).Error(), f+":5:36: network.tlsTerminate.caKeyPath: open /x/ca.key: file does not exist"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	// Settings from no file name the key only; nil is nil.
	var none *Settings
	for _, s := range []*Settings{none, Default()} {
		if got := s.ErrorAt("network.parentProxy.https", cause).Error(); got != "network.parentProxy.https: open /x/ca.key: file does not exist" {
			t.Errorf("no file: %q", got)
		}
	}
	if s.ErrorAt("network", nil) != nil {
		t.Errorf("ErrorAt of a nil error is not nil")
	}
}
