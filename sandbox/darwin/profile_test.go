package darwin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/sandbox/darwin/sbpl"
	"github.com/srt-go/srt/settings"
)

// tree builds files (paths relative to root; a trailing "/" makes a
// directory) and returns root, symlink-resolved.
func tree(t *testing.T, files ...string) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		p := filepath.Join(root, f)
		if strings.HasSuffix(f, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func entries(paths ...string) []settings.PathEntry {
	var out []settings.PathEntry
	for _, p := range paths {
		out = append(out, settings.PathEntry{Path: p})
	}
	return out
}

// compiled compiles s in home/proj of a fresh tree and returns the
// policy and the evaluated profile.
func compiled(t *testing.T, s *settings.Settings, files ...string) (string, *policy.Policy, *sbpl.Profile) {
	t.Helper()
	root := tree(t, append(files, "home/proj/")...)
	home, proj := filepath.Join(root, "home"), filepath.Join(root, "home/proj")
	pol, err := policy.Compile(s, policy.Env{Cwd: proj, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	src, err := Profile(Options{Policy: pol, Tag: NewTag("test"), HTTPProxyPort: 40001, SOCKSProxyPort: 40002})
	if err != nil {
		t.Fatal(err)
	}
	prof, err := sbpl.Load(src)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	return root, pol, prof
}

func testSettings() *settings.Settings {
	s := settings.Default()
	s.Filesystem.DenyRead = entries("~/.ssh", "~/secrets", "~/**/*.pem")
	s.Filesystem.AllowRead = entries("~/.ssh/known_hosts", "~/secrets/public")
	s.Filesystem.AllowWrite = entries(".", "~/out")
	s.Filesystem.DenyWrite = entries("config/prod.json", "**/*.key", "vendor/**")
	return s
}

var testFiles = []string{
	"home/.ssh/id_ed25519", "home/.ssh/known_hosts", "home/.bashrc",
	"home/secrets/token", "home/secrets/public/key.txt", "home/secrets/public/deep/x.pem",
	"home/out/", "home/proj/.git/hooks/", "home/proj/.git/config", "home/proj/.git/HEAD",
	"home/proj/src/main.go", "home/proj/a/b/.bashrc", "home/proj/config/prod.json",
	"home/proj/cert.pem", "home/proj/vendor/lib.go", "home/proj/.vscode/settings.json",
	"home/elsewhere/file",
}

// TestProfileMatchesPolicy sweeps every path of the tree, and names that
// do not exist yet, and checks the profile against policy.Readable and
// policy.Writable, the functions the Linux backend's tests check too:
// the profile never allows what the policy denies, and allows what the
// policy allows except where a pattern (mandatory name, deny glob)
// covers a name the Linux walk could not see.
func TestProfileMatchesPolicy(t *testing.T) {
	root, pol, prof := compiled(t, testSettings(), testFiles...)
	var paths []string
	filepath.Walk(root, func(p string, _ os.FileInfo, _ error) error {
		paths = append(paths, p, filepath.Join(p, "new-file"))
		return nil
	})
	paths = append(paths, "/", "/etc/passwd", "/usr/bin/env")
	covered := func(p string) bool {
		for _, g := range pol.MandatoryPatterns {
			if re, _ := GlobToRegex(g, true); matches(re, p) {
				return true
			}
		}
		for _, g := range append(pol.DenyWriteGlobs, pol.DenyReadGlobs...) {
			if re, _ := GlobToRegex(g.Pattern, true); matches(re, p) {
				return true
			}
		}
		return false
	}
	for _, p := range paths {
		r, w := prof.Allowed("file-read-data", p), prof.Allowed("file-write-create", p)
		if r && !pol.Readable(p) {
			t.Errorf("%s: profile allows a read the policy denies", p)
		}
		if w && !pol.Writable(p) {
			t.Errorf("%s: profile allows a write the policy denies", p)
		}
		if !covered(p) {
			if r != pol.Readable(p) {
				t.Errorf("%s: read: profile %v, policy %v", p, r, pol.Readable(p))
			}
			if w != pol.Writable(p) {
				t.Errorf("%s: write: profile %v, policy %v", p, w, pol.Writable(p))
			}
		}
	}
}

func TestProfileRules(t *testing.T) {
	root, _, prof := compiled(t, testSettings(), testFiles...)
	h := filepath.Join(root, "home")
	pj := filepath.Join(h, "proj")
	deep := func(n int, name string) string {
		p := pj
		for i := range n {
			p = filepath.Join(p, "d"+string(rune('a'+i)))
		}
		return filepath.Join(p, name)
	}
	for _, c := range []struct {
		name, op, path string
		want           bool
	}{
		{"read-anywhere", "file-read-data", "/etc/hosts", true},
		{"read-ssh-key", "file-read-data", h + "/.ssh/id_ed25519", false},
		{"read-ssh-carve-out", "file-read-data", h + "/.ssh/known_hosts", true},
		{"read-secret", "file-read-data", h + "/secrets/token", false},
		{"read-secret-carve-out", "file-read-data", h + "/secrets/public/key.txt", true},
		{"read-pem-existing", "file-read-data", pj + "/cert.pem", false},
		{"read-pem-created-later", "file-read-data", pj + "/new/later.pem", false},
		{"read-pem-inside-carve-out", "file-read-data", h + "/secrets/public/deep/x.pem", false},
		{"write-cwd", "file-write-create", pj + "/src/new.go", true},
		{"write-second-root", "file-write-create", h + "/out/x", true},
		{"write-outside-roots", "file-write-create", h + "/elsewhere/file", false},
		{"write-home", "file-write-data", h + "/.bashrc", false},
		{"write-etc", "file-write-create", "/etc/x", false},
		{"write-dev-null", "file-write-data", "/dev/null", true},
		{"write-denywrite-literal", "file-write-data", pj + "/config/prod.json", false},
		{"write-denywrite-dir", "file-write-create", pj + "/vendor/new.go", false},
		{"write-key-later-depth-3", "file-write-create", pj + "/a/b/c/id.key", false},
		{"write-git-hooks", "file-write-create", pj + "/.git/hooks/pre-commit", false},
		{"write-git-config", "file-write-data", pj + "/.git/config", false},
		{"write-git-head", "file-write-data", pj + "/.git/HEAD", true},
		{"write-vscode", "file-write-data", pj + "/.vscode/settings.json", false},
		{"mkdir-vscode-later", "file-write-create", pj + "/sub/.vscode", false},
		{"bashrc-depth-0", "file-write-create", deep(0, ".bashrc"), false},
		{"bashrc-depth-1", "file-write-create", deep(1, ".bashrc"), false},
		{"bashrc-depth-5", "file-write-create", deep(5, ".bashrc"), false},
		{"bashrc-depth-12", "file-write-create", deep(12, ".bashrc"), false},
		{"bashrc-upper-case", "file-write-create", deep(2, ".BASHRC"), false},
		{"zprofile-depth-12", "file-write-create", deep(12, ".zprofile"), false},
		{"hooks-depth-12", "file-write-create", deep(12, ".git/hooks/post-checkout"), false},
		{"git-config-depth-5", "file-write-create", deep(5, ".git/config"), false},
		{"claude-commands-depth-5", "file-write-create", deep(5, ".claude/commands/x.md"), false},
		{"mcp-json-depth-12", "file-write-create", deep(12, ".mcp.json"), false},
		{"bashrc-lookalike", "file-write-create", deep(1, "x.bashrc"), true},
		{"write-in-unreadable", "file-write-create", h + "/.ssh/authorized_keys", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := prof.Allowed(c.op, c.path); got != c.want {
				t.Errorf("(%s %s): allowed=%v, want %v", c.op, c.path, got, c.want)
			}
		})
	}
}

// rename models rename(2) as Seatbelt checks it: file-write-unlink on
// the source, file-write-create on the destination.
func rename(p *sbpl.Profile, from, to string) bool {
	return p.Allowed("file-write-unlink", from) && p.Allowed("file-write-create", to)
}

func TestRenameAroundDeny(t *testing.T) {
	root, pol, prof := compiled(t, testSettings(), testFiles...)
	pj := filepath.Join(root, "home/proj")
	for _, c := range []struct{ name, from, to string }{
		{"move-git-away", pj + "/.git", pj + "/g2"},
		{"move-hooks-away", pj + "/.git/hooks", pj + "/h2"},
		{"move-parent-of-found-bashrc", pj + "/a", pj + "/z"},
		{"move-grandparent-of-found-bashrc", pj + "/a/b", pj + "/a/c"},
		{"move-file-onto-bashrc", pj + "/src/main.go", pj + "/.bashrc"},
		{"move-ssh-out", root + "/home/.ssh", pj + "/ssh"},
		{"move-cwd", pj, root + "/home/out/proj"},
		{"move-vendor", pj + "/vendor", pj + "/v2"},
		{"move-config-dir", pj + "/config", pj + "/c2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if rename(prof, c.from, c.to) {
				t.Errorf("rename(%s, %s) allowed", c.from, c.to)
			}
		})
	}
	// Every ancestor of every denied path, inside the write roots, cannot
	// be unlinked.
	for _, d := range append(append([]policy.Path{}, pol.DenyWrite...), pol.DenyRead...) {
		for _, a := range ancestors(d.Resolved) {
			if prof.Allowed("file-write-unlink", a) {
				t.Errorf("unlink of %s (above %s, %s) allowed", a, d.Resolved, d.Rule)
			}
		}
	}
	if !rename(prof, pj+"/src/main.go", pj+"/src/main2.go") {
		t.Error("an ordinary rename is refused")
	}
}

// TestInjectedNames puts profile syntax and regex metacharacters in file
// names that reach the profile (a directory holding a found .bashrc, and
// denyWrite entries) and checks the profile still parses, each rule hits
// exactly its own name, and nothing else opened up.
func TestInjectedNames(t *testing.T) {
	names := []string{
		`q"uote`, `pa)(ren`, `x") (allow file-write* (subpath "/`, `semi;colon`,
		`.+*?[](){}|^$\`, `back\slash`, `#"re"`, `spa ce`, `uni·code`,
	}
	s := settings.Default()
	s.Filesystem.AllowWrite = entries(".")
	var files []string
	for _, n := range names {
		files = append(files, "home/proj/"+n+"/.bashrc")
		s.Filesystem.DenyWrite = append(s.Filesystem.DenyWrite, settings.PathEntry{Path: n + "/deny", Literal: true})
		s.Filesystem.DenyRead = append(s.Filesystem.DenyRead, settings.PathEntry{Path: n + "/hidden", Literal: true})
	}
	root, _, prof := compiled(t, s, files...)
	pj := filepath.Join(root, "home/proj")
	for _, n := range names {
		d := filepath.Join(pj, n)
		for _, c := range []struct {
			op, path string
			want     bool
		}{
			{"file-write-data", d + "/.bashrc", false},
			{"file-write-create", d + "/deny", false},
			{"file-write-create", d + "/deny/x", false},
			{"file-read-data", d + "/hidden", false},
			{"file-write-create", d + "/other", true},
			{"file-read-data", d + "/other", true},
			{"file-write-unlink", d, false},
			{"file-write-create", pj + "/sibling", true},
			{"file-write-create", "/etc/x", false},
			{"file-write-create", root + "/x", false},
		} {
			if got := prof.Allowed(c.op, c.path); got != c.want {
				t.Errorf("(%s %q): allowed=%v, want %v", c.op, c.path, got, c.want)
			}
		}
	}
	// Exactly the rules of a profile without the names: each name only
	// adds filters.
	ps := settings.Default()
	ps.Filesystem.AllowWrite = entries(".")
	_, _, plainProf := compiled(t, ps)
	// (Every policy denies reads already: srtd's token, policy.hostSecrets.)
	if len(prof.Rules) != len(plainProf.Rules) {
		t.Errorf("%d rules, want %d: a name changed the profile's structure", len(prof.Rules), len(plainProf.Rules))
	}
}

func TestUnsafeNamesRefused(t *testing.T) {
	for _, n := range []string{"new\nline", "car\rriage", "t\tab", "del\x7f"} {
		t.Run(strings.ReplaceAll(n, "\n", `\n`), func(t *testing.T) {
			s := settings.Default()
			s.Filesystem.DenyWrite = []settings.PathEntry{{Path: "/p/" + n, Literal: true}}
			s.Filesystem.AllowWrite = entries(".")
			root := tree(t, "proj/")
			pol, err := policy.Compile(s, policy.Env{Cwd: root + "/proj", Home: root})
			if err != nil {
				t.Fatal(err)
			}
			pol.DenyWrite = append(pol.DenyWrite, policy.Path{Literal: "/p/" + n, Resolved: "/p/" + n})
			if _, err := Profile(Options{Policy: pol, Tag: NewTag("x")}); !errors.Is(err, ErrUnsafePath) {
				t.Errorf("Profile: err = %v, want ErrUnsafePath", err)
			}
		})
	}
}

func TestSymlinkSpellings(t *testing.T) {
	root := tree(t, "real/proj/", "home/")
	if err := os.Symlink(filepath.Join(root, "real"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	s := settings.Default()
	s.Filesystem.AllowWrite = entries(filepath.Join(root, "link/proj"))
	s.Filesystem.DenyRead = entries(filepath.Join(root, "link/proj/secret"))
	pol, err := policy.Compile(s, policy.Env{Cwd: filepath.Join(root, "link/proj"), Home: filepath.Join(root, "home")})
	if err != nil {
		t.Fatal(err)
	}
	src, err := Profile(Options{Policy: pol, Tag: NewTag("x"), WriteRoots: []string{"/tmp/srt-x/tmp", "/private/var/folders/ab/T"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`(subpath "` + root + `/link/proj")`, `(subpath "` + root + `/real/proj")`,
		`(subpath "` + root + `/link/proj/secret")`, `(subpath "` + root + `/real/proj/secret")`,
		`(subpath "/tmp/srt-x/tmp")`, `(subpath "/private/tmp/srt-x/tmp")`,
		`(subpath "/var/folders/ab/T")`, `(subpath "/private/var/folders/ab/T")`,
	} {
		if !strings.Contains(src, want) {
			t.Errorf("profile lacks %s", want)
		}
	}
	prof, err := sbpl.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{root + "/link/proj/x", root + "/real/proj/x", "/private/tmp/srt-x/tmp/a", "/var/folders/ab/T/a"} {
		if !prof.Allowed("file-write-create", p) {
			t.Errorf("write %s refused", p)
		}
	}
	for _, p := range []string{root + "/link/proj/secret/x", root + "/real/proj/secret/x"} {
		if prof.Allowed("file-read-data", p) {
			t.Errorf("read %s allowed", p)
		}
	}
}

func TestNetworkRules(t *testing.T) {
	s := settings.Default()
	_, _, prof := compiled(t, s)
	for _, c := range []struct {
		req  sbpl.Request
		want bool
	}{
		{sbpl.Request{Op: "network-outbound", Remote: "localhost:40001"}, true},
		{sbpl.Request{Op: "network-outbound", Remote: "localhost:40002"}, true},
		{sbpl.Request{Op: "network-outbound", Remote: "localhost:22"}, false},
		{sbpl.Request{Op: "network-outbound", Remote: "93.184.216.34:443"}, false},
		{sbpl.Request{Op: "network-bind", Local: "localhost:8080"}, false},
		{sbpl.Request{Op: "network-outbound", Unix: true, Path: "/var/run/docker.sock"}, false},
		{sbpl.Request{Op: "system-socket", SocketDomain: "AF_UNIX"}, false},
		{sbpl.Request{Op: "mach-lookup", Name: "com.apple.trustd.agent"}, false},
		{sbpl.Request{Op: "mach-lookup", Name: "com.apple.logd"}, true},
		{sbpl.Request{Op: "signal", Target: "other"}, false},
		{sbpl.Request{Op: "signal", Target: "same-sandbox"}, true},
		{sbpl.Request{Op: "sysctl-read", Name: "kern.osrelease"}, true},
		{sbpl.Request{Op: "sysctl-write", Name: "kern.hostname"}, false},
		{sbpl.Request{Op: "pseudo-tty"}, false},
		{sbpl.Request{Op: "appleevent-send"}, false},
	} {
		if got := prof.Decide(c.req).Allow; got != c.want {
			t.Errorf("%+v: allow=%v, want %v", c.req, got, c.want)
		}
	}

	s = settings.Default()
	s.Network.AllowLocalBinding = true
	s.Network.AllowUnixSockets = []string{"/run/user/1/app.sock"}
	s.Network.AllowMachLookup = []string{"com.example.*"}
	s.EnableWeakerNetworkIsolation = true
	s.AllowPty = true
	_, _, prof = compiled(t, s)
	for _, c := range []struct {
		req  sbpl.Request
		want bool
	}{
		{sbpl.Request{Op: "network-bind", Local: "localhost:8080"}, true},
		{sbpl.Request{Op: "network-outbound", Remote: "localhost:5432"}, true},
		{sbpl.Request{Op: "network-outbound", Remote: "93.184.216.34:443"}, false},
		{sbpl.Request{Op: "network-outbound", Unix: true, Path: "/run/user/1/app.sock"}, true},
		{sbpl.Request{Op: "network-outbound", Unix: true, Path: "/var/run/docker.sock"}, false},
		{sbpl.Request{Op: "mach-lookup", Name: "com.example.svc"}, true},
		{sbpl.Request{Op: "mach-lookup", Name: "com.apple.trustd.agent"}, true},
		{sbpl.Request{Op: "pseudo-tty"}, true},
		{sbpl.Request{Op: "file-write-data", Path: "/dev/ttys003"}, true},
	} {
		if got := prof.Decide(c.req).Allow; got != c.want {
			t.Errorf("%+v: allow=%v, want %v", c.req, got, c.want)
		}
	}

	s = settings.Default()
	s.Network.AllowMachLookup = []string{"com.*.evil"}
	pol, err := policy.Compile(s, policy.Env{Cwd: t.TempDir(), Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Profile(Options{Policy: pol, Tag: NewTag("x")}); err == nil {
		t.Error("a mid-name * in allowMachLookup was accepted")
	}
}

// TestDeniesAfterAllows checks the structural argument of Profile: after
// the (deny default), every deny comes after every allow, so no allow can
// re-open a deny under last-match-wins.
func TestDeniesAfterAllows(t *testing.T) {
	_, _, prof := compiled(t, testSettings(), testFiles...)
	lastAllow, firstDeny := -1, len(prof.Rules)
	for i, r := range prof.Rules[1:] {
		if r.Allow {
			lastAllow = i
		} else if i < firstDeny {
			firstDeny = i
		}
	}
	if lastAllow > firstDeny {
		t.Errorf("an allow (rule %d) follows a deny (rule %d)", lastAllow+1, firstDeny+1)
	}
	for _, r := range prof.Rules {
		if !r.Allow && r.Message == "" {
			t.Errorf("deny at line %d carries no tag", r.Line)
		}
	}
}

func matches(re, s string) bool {
	ok, _ := regexpMatch(re, s)
	return ok
}
