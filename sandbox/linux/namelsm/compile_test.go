package namelsm

import (
	"errors"
	"testing"
)

// TestCompileShapes: the shapes the program checks compile; any other
// is ErrInexact (the run then uses the supervisor), never dropped.
func TestCompileShapes(t *testing.T) {
	mounts := []Mount{{Dev: 0x801, Root: "/", Point: "/"}, {Dev: 0x802, Root: "/", Point: "/home"}}
	for _, p := range []string{"**/.bashrc", "**/.claude/settings.json", "**/.vscode/**", "**/*.pem", "/w/x", "/w/x/**",
		"/w/**/.env", "/w/**/*.key", "/w/**/secrets/**", `/w/a\*b`} {
		if _, err := Compile([]Rule{{p, p}}, mounts, []string{"/w"}); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	for _, p := range []string{"**/*", "**/.env*", "**/a*b", "**/a/*/b", "/w/py*/site", "/w/**/a*b", "**/" + "a/b/c/d/e/f/g/h/i", "*/x"} {
		if _, err := Compile([]Rule{{p, p}}, mounts, []string{"/w"}); !errors.Is(err, ErrInexact) {
			t.Errorf("%s: %v, want ErrInexact", p, err)
		}
	}
	// An absolute rule nothing writable reaches is left out; one in or
	// above a write root is kept.
	c, err := Compile([]Rule{{"/etc/py*/x", "r"}, {"/srv/x/**", "r2"}}, mounts, []string{"/w"})
	if err != nil || len(c.Keys) != 0 {
		t.Errorf("unreachable rules: %v, %d keys", err, len(c.Keys))
	}
	if _, err := Compile([]Rule{{"/py*/x", "r"}}, mounts, []string{"/w"}); !errors.Is(err, ErrInexact) {
		t.Errorf("a glob above a write root: %v", err)
	}
	// A write root on a file system mounted at /home: a rule naming
	// "home" would need the mount point, which no dentry chain shows.
	if _, err := Compile([]Rule{{"**/home/.cache/**", "r"}}, mounts, []string{"/home/u"}); !errors.Is(err, ErrInexact) {
		t.Errorf("a rule naming a mount point's component: %v", err)
	}
	if _, err := Compile([]Rule{{"**/.cache/**", "r"}}, mounts, []string{"/home/u"}); err != nil {
		t.Errorf("a rule naming no mount point's component: %v", err)
	}
	// Two rules on one key below different directories: the record
	// could not tell which.
	if _, err := Compile([]Rule{{"/w/a/**/.env", "r1"}, {"/w/b/**/.env", "r2"}}, mounts, []string{"/w"}); !errors.Is(err, ErrInexact) {
		t.Errorf("a shared key: %v", err)
	}
	if _, err := Compile([]Rule{{"/w/a/**/.env", "r1"}, {"/w/b/**/.env", "r1"}}, mounts, []string{"/w"}); err != nil {
		t.Errorf("a shared key, one rule: %v", err)
	}
}

// TestRelComps: an absolute rule is spelled from its file system's root,
// as the dentry chain is, through the mount that shows it.
func TestRelComps(t *testing.T) {
	mounts := []Mount{{Dev: 1, Root: "/", Point: "/"}, {Dev: 2, Root: "/data/home", Point: "/home"}, {Dev: 3, Root: "/", Point: "/home/u/mnt"}}
	for _, tc := range []struct {
		p    string
		dev  uint64
		want string
	}{
		{"/etc/x", 1, "etc/x"},
		{"/home/u/.bashrc", 2, "data/home/u/.bashrc"},
		{"/home/u/mnt/a", 3, "a"},
		{"/homeless/a", 1, "homeless/a"},
	} {
		m, ok := mountOf(mounts, tc.p)
		if !ok || m.Dev != tc.dev {
			t.Errorf("%s: mount %+v", tc.p, m)
			continue
		}
		if got := relComps(m, tc.p); join(got) != tc.want {
			t.Errorf("%s: %q, want %q", tc.p, join(got), tc.want)
		}
	}
	if KernelDev(0x801) != 8<<20|1 {
		t.Errorf("KernelDev(8:1) = %#x", KernelDev(0x801))
	}
}

func join(s []string) string {
	out := ""
	for i, c := range s {
		if i > 0 {
			out += "/"
		}
		out += c
	}
	return out
}
