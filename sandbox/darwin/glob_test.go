package darwin

import (
	"errors"
	"regexp"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

func TestGlobToRegex(t *testing.T) {
	for _, c := range []struct {
		name, glob, want string
	}{
		{"plain", "/a/b.txt", `^/a/b\.txt$`},
		{"star", "/a/*.pem", `^/a/[^/]*\.pem$`},
		{"question", "/a/?.key", `^/a/[^/]\.key$`},
		{"leading-doublestar", "**/.bashrc", `^(.*/)?\.bashrc$`},
		{"middle-doublestar", "/p/**/.env", `^/p/(.*/)?\.env$`},
		{"trailing-doublestar", "/p/.vscode/**", `^/p/\.vscode(/.*)?$`},
		{"only-doublestar", "**", `^.*$`},
		{"doublestar-in-name", "/p/a**b", `^/p/a[^/]*b$`},
		{"class", "/p/[abc].txt", `^/p/[abc]\.txt$`},
		{"range", "/p/[a-c0-9]", `^/p/[a-c0-9]$`},
		{"negated-bang", "/p/[!x]", `^/p/[^/x]$`},
		{"negated-caret", "/p/[^x]", `^/p/[^/x]$`},
		{"class-with-bracket", "/p/[]x]", `^/p/(]|x)$`},
		{"unclosed-bracket", "/p/[abc", `^/p/\[abc$`},
		{"empty-brackets", "/p/[]", `^/p/\[]$`},
		{"bracket-across-slash", "/p/[a/b]", `^/p/\[a/b]$`},
		{"braces", "/p/*.{pem,key}", `^/p/[^/]*\.(pem|key)$`},
		{"unclosed-brace", "/p/{a", `^/p/\{a$`},
		{"escaped-star", `/p/\*`, `^/p/\*$`},
		{"metachars", "/p/a.b+c(d)e|f^g$h", `^/p/a\.b\+c\(d\)e\|f\^g\$h$`},
		{"lone-close", "/p/a]b}c", `^/p/a]b}c$`},
		{"backslash-in-name", `/p/a\\b`, `^/p/a\\b$`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := GlobToRegex(c.glob, false)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("GlobToRegex(%q) = %s, want %s", c.glob, got, c.want)
			}
			if _, err := regexp.Compile(got); err != nil {
				t.Errorf("not a valid regex: %v", err)
			}
		})
	}
}

// TestGlobAgreesWithDoublestar checks the regexes against doublestar, the
// matcher policy uses to expand the same globs on Linux, on a table of
// paths. The one intended difference: a final "/**" also matches the
// directory itself (doublestar agrees there too).
func TestGlobAgreesWithDoublestar(t *testing.T) {
	globs := []string{
		"**/.bashrc", "/p/**/.env", "/p/.vscode/**", "/p/*.pem", "/p/?.key",
		"/p/[abc].txt", "/p/[!a].txt", "/p/*.{pem,key}", "/p/**/*.key", "/p/*/x",
		"**/.git/hooks/**", "/p/a**b",
	}
	paths := []string{
		"/p/.bashrc", "/.bashrc", "/p/a/b/c/d/.bashrc", "/p/x.bashrc", "/p/.bashrc/x",
		"/p/.env", "/p/a/.env", "/p/a/b/.env", "/q/.env", "/p/.envx",
		"/p/.vscode", "/p/.vscode/settings.json", "/p/.vscode/a/b", "/p/.vscodex",
		"/p/a.pem", "/p/a/b.pem", "/p/.pem", "/p/a.key", "/p/ab.key", "/p/a/b/c.key",
		"/p/a.txt", "/p/b.txt", "/p/d.txt", "/p/ab.txt", "/p/a/x", "/p/x",
		"/r/.git/hooks", "/r/.git/hooks/pre-commit", "/r/.git/config", "/p/ab", "/p/axxb",
	}
	for _, g := range globs {
		re := regexp.MustCompile(mustRegex(t, g))
		for _, p := range paths {
			want, err := doublestar.Match(g, p)
			if err != nil {
				t.Fatal(err)
			}
			if got := re.MatchString(p); got != want {
				t.Errorf("glob %q, path %q: regex %v, doublestar %v", g, p, got, want)
			}
		}
	}
}

func TestGlobFoldCase(t *testing.T) {
	re := regexp.MustCompile(mustFold(t, "**/.bashrc"))
	for _, p := range []string{"/h/.bashrc", "/h/.BASHRC", "/h/.BashRC"} {
		if !re.MatchString(p) {
			t.Errorf("%q not matched", p)
		}
	}
	re = regexp.MustCompile(mustFold(t, "/p/[a-c].txt"))
	if !re.MatchString("/P/B.TXT") || re.MatchString("/p/d.txt") {
		t.Errorf("folded class: %s", re)
	}
}

func TestGlobRefusesControlCharacters(t *testing.T) {
	for _, g := range []string{"/p/a\nb", "/p/\x00", "/p/a\rb"} {
		if _, err := GlobToRegex(g, false); !errors.Is(err, ErrUnsafePath) {
			t.Errorf("GlobToRegex(%q): err = %v, want ErrUnsafePath", g, err)
		}
	}
}

func mustRegex(t *testing.T, g string) string {
	t.Helper()
	r, err := GlobToRegex(g, false)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustFold(t *testing.T, g string) string {
	t.Helper()
	r, err := GlobToRegex(g, true)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func regexpMatch(re, s string) (bool, error) { return regexp.MatchString(re, s) }
