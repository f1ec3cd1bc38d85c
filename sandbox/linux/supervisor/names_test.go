package supervisor

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/sandbox/linux/fsplan"
	"github.com/srt-go/srt/settings"
)

// TestDeniedNames: the rules the creator checks, on real paths.
func TestDeniedNames(t *testing.T) {
	c := &nameRules{tmpdir: "/tmp/srt-0/tmp"}
	for _, p := range []string{"**/.bashrc", "**/.git/hooks/**", "**/.git/config", "**/.env", "/w/secrets/**", "**/*.pem"} {
		c.add(p, p)
	}
	for _, tc := range []struct {
		path string
		kind int
		deny bool
	}{
		{"/w/a/b/c/d/e/f/.bashrc", kFile, true},
		{"/w/.bashrc.bak", kFile, false},
		{"/w/r/.git/hooks", kDir, false},
		{"/w/r/.git/hooks", kFile, true}, // only a directory may be made there
		{"/w/r/.git/hooks/pre-commit", kFile, true},
		{"/w/r/.git/hooks/pre-commit", kDir, true},
		{"/w/r/.git/hooks/pre-commit.sample", kFile, false},
		{"/w/r/.git/hooks/pre-commit.sample", kOther, true},
		{"/w/r/.git/hooks/pre-commit.sample", kExisted, true},
		{"/w/r/.git/hooks/sub/x.sample", kFile, true},
		{"/w/r/.git/config", kFile, true},
		{"/w/r/.git/config", kConfig, false},
		{"/w/r/.git/config", kSource, true},
		{"/w/r/not-git/config", kFile, false},
		{"/w/x/.env", kExisted, true},
		{"/w/x/.env", kSource, true},
		{"/.env", kFile, true},
		{"/w/x/.env.example", kFile, false},
		{"/w/x/my.env", kFile, false},
		{"/w/k/server.pem", kFile, true},
		{"/w/k/a/b/server.pem", kOther, true},
		{"/w/k/server.pem.txt", kFile, false},
		{"/w/k/pem", kFile, false},
		{"/w/secrets", kDir, true},
		{"/w/secrets/a/b", kFile, true},
		{"/w/secretsx", kDir, false},
		{"/x/w/secrets", kDir, false}, // an absolute pattern is anchored
		{"/w/sub/.git", kFile, true},  // a gitdir: file
		{"/w/sub/.git", kOther, true}, // a symlink or a rename
		{"/w/sub/.git", kDir, false},
		{"/w/sub/.git", kSource, false},
		{"/w/r/.git/commondir", kFile, true},
		{"/w/commondir", kOther, true},
		{"/w/commondir", kSource, false},
		{"/tmp/srt-0/tmp/.env", kFile, false}, // the private TMPDIR
		{"/tmp/srt-0/tmp/.git", kFile, false},
		{"/tmp/srt-0/tmpx/.env", kFile, true},
		{"/dev/shm/.bashrc", kFile, false},
		{"/proc/self/fd/.env", kFile, false},
	} {
		if got := c.denied(tc.path, tc.kind) != ""; got != tc.deny {
			t.Errorf("denied(%s, kind %d) = %v, want %v", tc.path, tc.kind, got, tc.deny)
		}
	}
}

// TestDeniedNamesReportRule: a refusal names the rule that matched, and
// the git-file and commondir refusals their own.
func TestDeniedNamesReportRule(t *testing.T) {
	c := &nameRules{tmpdir: "/tmp/t"}
	c.add("**/.env", "filesystem.denyWrite[0]")
	c.add("/w/**", "filesystem.denyWrite[1]")
	for _, tc := range []struct{ path, rule string }{
		{"/a/.env", "filesystem.denyWrite[0]"},
		{"/w/.env", "filesystem.denyWrite[0]"}, // the first rule that matches
		{"/w/x", "filesystem.denyWrite[1]"},
		{"/a/.git", gitFileRule},
		{"/a/commondir", commondirRule},
		{"/a/b", ""},
	} {
		if got := c.denied(tc.path, kFile); got != tc.rule {
			t.Errorf("denied(%s) = %q, want %q", tc.path, got, tc.rule)
		}
	}
}

// TestLiteralParts: the cheap first cut before doublestar.Match.
func TestLiteralParts(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		want    []string
	}{
		{"**/.git/hooks/**", []string{"/.git", "/hooks"}},
		{"**/*.key", []string{".key"}},
		{"**/*.pem", []string{".pem"}},
		{"/w/secrets/**", []string{"/w", "/secrets"}},
		{"**/.env", []string{"/.env"}},
		{"**/a*b", nil},
		{"**/*", nil},
		{"**/[ab].key", nil},
		{"**/{a,b}", nil},
		{`/w/\*x`, []string{"/w"}},
		{"**/*.k?y", nil},
	} {
		c := &nameRules{}
		c.add(tc.pattern, "r")
		if got := c.rules[0].need; !slices.Equal(got, tc.want) {
			t.Errorf("literalParts(%s) = %q, want %q", tc.pattern, got, tc.want)
		}
	}
}

// TestLiteralPartsNeverMiss: every path a pattern matches contains its
// literal parts, so the first cut never skips a match.
func TestLiteralPartsNeverMiss(t *testing.T) {
	c := &nameRules{tmpdir: "/tmp/t"}
	for _, p := range []string{"**/.git/hooks/**", "**/*.key", "/w/secrets/**", "**/.env", "**/.claude/settings.json"} {
		c.add(p, p)
	}
	for _, p := range []string{"/.git/hooks/x", "/a/.git/hooks/b/c", "/k.key", "/a/b/.key", "/w/secrets/x", "/.env", "/a/.claude/settings.json"} {
		if c.denied(p, kOther) == "" {
			t.Errorf("%s: not denied", p)
		}
	}
}

// TestSymlinkDenied: a symlink may not stand where a rule's directory
// part is (it would show another directory's names under it).
func TestSymlinkDenied(t *testing.T) {
	c := &nameRules{tmpdir: "/tmp/t"}
	for _, p := range []string{"**/.git/hooks/**", "/w/secrets/**", "**/.env", "**/*.pem"} {
		c.add(p, p)
	}
	for _, tc := range []struct {
		path string
		deny bool
	}{
		{"/w/r/.git", true},       // .git/hooks would be the target's hooks
		{"/w/r/.git/hooks", true}, // itself covered
		{"/w/r/.gitx", false},
		{"/w/secrets", true},
		{"/w", true}, // /w/secrets would be the target's secrets
		{"/x", false},
		{"/w/r/.env", true}, // the name itself
		{"/w/r/a.pem", true},
		{"/w/r/pem", false},
		{"/tmp/t/.git", false}, // the private TMPDIR
	} {
		if got := c.symlinkDenied(tc.path) != ""; got != tc.deny {
			t.Errorf("symlinkDenied(%s) = %v, want %v", tc.path, got, tc.deny)
		}
	}
}

// TestPrefixByLiteral: the pattern walk under symlinkDenied.
func TestPrefixByLiteral(t *testing.T) {
	for _, tc := range []struct {
		pat, path string
		want      bool
	}{
		{"**/.git/hooks/**", "w/.git", true},
		{"**/.git/hooks/**", "w/.git/hooks", false}, // only ** is left: denied() covers it
		{"**/.git/hooks/**", "w", false},            // consumed by ** alone
		{"**/.env", "w/.env", false},                // nothing of the pattern is left
		{"w/secrets/**", "w", true},
		{"w/secrets/**", "w/secrets", false},
		{"w/secrets/**", "v", false},
		{"w/*/x", "w/a", true},
	} {
		if got := prefixByLiteral(strings.Split(tc.pat, "/"), strings.Split(tc.path, "/"), false); got != tc.want {
			t.Errorf("prefixByLiteral(%s, %s) = %v, want %v", tc.pat, tc.path, got, tc.want)
		}
	}
}

// TestNameRulesFromPolicy: the rules newNameRules takes from a compiled
// policy — the mandatory names at any depth, denyWrite and denyRead globs
// anchored at the working directory, existing denyWrite paths with what
// is below them — and the missing mandatory names left to their patterns.
func TestNameRulesFromPolicy(t *testing.T) {
	cwd, home := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(cwd, "secrets"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		allowGitConfig bool
		path           string
		kind           int
		deny           bool
	}{
		{"mandatory file", false, "/x/y/.bashrc", kFile, true},
		{"mandatory dir", false, "/x/.ssh/authorized_keys", kFile, true},
		{"mandatory hooks", false, "/x/.git/hooks/post-checkout", kFile, true},
		{"hooks dir by mkdir", false, "/x/.git/hooks", kDir, false},
		{"config", false, "/x/.git/config", kFile, true},
		{"config checked", false, "/x/.git/config", kConfig, false},
		{"config allowed", true, "/x/.git/config", kFile, false},
		{"hooks with config allowed", true, "/x/.git/hooks/pre-push", kFile, true},
		{"redirect", false, "/x/.git/worktrees/w/gitdir", kFile, true},
		{"pem in cwd", false, "{cwd}/server.pem", kFile, true},
		{"pem below cwd", false, "{cwd}/a/server.pem", kFile, false}, // *.pem is anchored at the cwd
		{"pem elsewhere", false, "/x/server.pem", kFile, false},
		{"env below cwd", false, "{cwd}/a/b/.env", kFile, true},
		{"env elsewhere", false, "/x/.env", kFile, false},
		{"denyRead glob", false, "{cwd}/a/id.key", kFile, true},
		{"literal dir", false, "{cwd}/secrets", kDir, true},
		{"literal below", false, "{cwd}/secrets/a/b", kFile, true},
		{"literal sibling", false, "{cwd}/secretsx", kFile, false},
		{"ordinary", false, "{cwd}/src/main.go", kFile, false},
		{"missing hooks in cwd", false, "{cwd}/.git/hooks", kDir, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := settings.Default()
			s.Filesystem.AllowGitConfig = tc.allowGitConfig
			s.Filesystem.DenyWrite = []settings.PathEntry{{Path: "*.pem"}, {Path: "**/.env"}, {Path: "secrets"}}
			s.Filesystem.DenyRead = []settings.PathEntry{{Path: "**/*.key"}}
			p, err := policy.Compile(s, policy.Env{Cwd: cwd, Home: home})
			if err != nil {
				t.Fatal(err)
			}
			c := newNameRules(p, "/tmp/srt-test", fsplan.Mapping{})
			path := tc.path
			if after, ok := strings.CutPrefix(path, "{cwd}"); ok {
				path = policy.Resolve(cwd) + after
			}
			if got := c.denied(path, tc.kind); (got != "") != tc.deny {
				t.Errorf("denied(%s, kind %d) = %q, want denied %v", path, tc.kind, got, tc.deny)
			}
		})
	}
}

// TestNameRulesThroughMapping: in a confined view (srtd) the sandbox sees
// a host tree at another path, and its names are judged at the host path
// they create: a protected path and a denyWrite of the host tree apply at
// the guest spelling, the private /tmp is outside every rule, and a path
// with the host tree's spelling inside the sandbox is not protected by
// accident of its name.
func TestNameRulesThroughMapping(t *testing.T) {
	ws := policy.Resolve(t.TempDir())
	if err := os.MkdirAll(filepath.Join(ws, "vendor"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := policy.CompileView(policy.ViewRules{
		Binds:     []policy.ViewBind{{Host: ws, Guest: "/work", Writable: true}},
		Protected: []string{filepath.Join(ws, "vendor"), filepath.Join(ws, "release.key")},
		System:    []string{"/usr"},
		Home:      t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	c := newNameRules(p, "/tmp/srt-test", fsplan.ViewMapping(p.View))
	for _, tc := range []struct {
		path string
		kind int
		deny bool
	}{
		{"/work/vendor/x.go", kFile, true},
		{"/work/vendor", kDir, true},
		{"/work/release.key", kFile, true},
		{"/work/src/release.key", kFile, false},
		{"/work/.bashrc", kFile, true},
		{"/work/sub/.git/hooks/pre-commit", kFile, true},
		{"/work/src/main.go", kFile, false},
		{"/tmp/.bashrc", kFile, false},
		{ws + "/release.key", kFile, false}, // the host spelling is in the sandbox's private /tmp
	} {
		if got := c.denied(tc.path, tc.kind); (got != "") != tc.deny {
			t.Errorf("denied(%s) = %q, want denied %v", tc.path, got, tc.deny)
		}
	}
	// A bind inside /tmp is a host tree, not the private /tmp.
	p, err = policy.CompileView(policy.ViewRules{
		Binds:  []policy.ViewBind{{Host: ws, Guest: ws, Writable: true}},
		System: []string{"/usr"}, Home: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	c = newNameRules(p, "/tmp/srt-test", fsplan.ViewMapping(p.View))
	for _, tc := range []struct {
		path string
		kind int
		deny bool
	}{
		{ws + "/.bashrc", kFile, true},
		{"/tmp/.bashrc", kFile, false},
	} {
		if got := c.denied(tc.path, tc.kind); (got != "") != tc.deny {
			t.Errorf("denied(%s) = %q, want denied %v", tc.path, got, tc.deny)
		}
	}
}
