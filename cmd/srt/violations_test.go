package main

import "testing"

// TestTerminalSafe: what a sandboxed program names (a file, a host) is
// printed on the user's terminal; escape sequences must arrive as text.
func TestTerminalSafe(t *testing.T) {
	for in, want := range map[string]string{
		"deny file-write-create /w/.env (filesystem.denyWrite[0])": "deny file-write-create /w/.env (filesystem.denyWrite[0])",
		"/w/\x1b]0;pwned\x07x": `/w/\x1b]0;pwned\ax`,
		"/w/a\nsrt: fake line": `/w/a\nsrt: fake line`,
		"/w/\x7f\xff":          `/w/\x7f\xff`,
		"/w/naïve ünïcode":     "/w/naïve ünïcode",
		"/w/\u202eevil\u202c":  `/w/\u202eevil\u202c`,
	} {
		if got := terminalSafe(in); got != want {
			t.Errorf("terminalSafe(%q) = %q, want %q", in, got, want)
		}
	}
}
