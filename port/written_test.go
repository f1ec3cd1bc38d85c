//go:build linux

package port

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// linkedTrees makes the reproduction's layout: base/ws (a session's
// writable bind), base/secret holding s.txt, and base/ws/sub -> secret,
// the link the session left.
func linkedTrees(t *testing.T) (base string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"ws", "secret", "mine"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(base, "secret/s.txt"), []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "secret"), filepath.Join(base, "ws/sub")); err != nil {
		t.Fatal(err)
	}
	return base
}

func specErrorField(t *testing.T, err error) string {
	t.Helper()
	var se *SpecError
	if !errors.As(err, &se) {
		t.Fatalf("want a *SpecError, got %v", err)
	}
	return se.Field
}

// TestWrittenTreesLinks: a path reached through a link inside a tree a
// session had writable is refused with its field named, a link elsewhere
// is followed, a protected path may be a link but not be spelled through
// one.
func TestWrittenTreesLinks(t *testing.T) {
	base := linkedTrees(t)
	w := newWrittenTrees("-")
	if err := w.record(Spec{Mode: ModeChat, BindMounts: []BindMount{{HostPath: base + "/ws", GuestPath: "/ws"}}}); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(base+"/secret", base+"/mine/link"); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(base+"/secret/inner", 0o700)
	cases := []struct {
		name, field string
		spec        Spec
	}{
		{"the bind is the link", "bindMounts[0].hostPath", Spec{BindMounts: []BindMount{{HostPath: base + "/ws/sub", GuestPath: "/b"}}}},
		{"a link in a parent", "bindMounts[1].hostPath", Spec{BindMounts: []BindMount{{HostPath: base + "/mine", GuestPath: "/m"}, {HostPath: base + "/ws/sub/inner", GuestPath: "/b"}}}},
		{"runner state dir", "runnerStateDirs[0]", Spec{RunnerStateDirs: []string{base + "/ws/sub"}}},
		{"protected path spelled through it", "protectedPaths[0]", Spec{BindMounts: []BindMount{{HostPath: base + "/secret", GuestPath: "/s"}}, ProtectedPaths: []string{base + "/ws/sub/s.txt"}}},
		{"the user's own link elsewhere", "", Spec{BindMounts: []BindMount{{HostPath: base + "/mine/link", GuestPath: "/b"}}}},
		{"a protected path that is the link", "", Spec{BindMounts: []BindMount{{HostPath: base + "/ws", GuestPath: "/w"}}, ProtectedPaths: []string{base + "/ws/sub"}}},
		{"the tree itself", "", Spec{BindMounts: []BindMount{{HostPath: base + "/ws", GuestPath: "/w"}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := w.checkLinks(c.spec)
			if c.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if f := specErrorField(t, err); f != c.field {
				t.Fatalf("field %s, want %s (%v)", f, c.field, err)
			}
			if !strings.Contains(err.Error(), base+"/ws/sub is a symbolic link") {
				t.Fatalf("the error does not name the link: %v", err)
			}
		})
	}
	// Without the record, the same link is the user's own: the rule is
	// about the trees, not about links in general.
	if err := newWrittenTrees("-").checkLinks(cases[0].spec); err != nil {
		t.Fatalf("with no written tree: %v", err)
	}
	// Read-only binds are not recorded.
	ro := newWrittenTrees("-")
	ro.record(Spec{Mode: ModeReview, BindMounts: []BindMount{{HostPath: base + "/ws"}}})
	ro.record(Spec{Mode: ModeChat, BindMounts: []BindMount{{HostPath: base + "/ws", ReadOnly: true}}})
	if err := ro.checkLinks(cases[0].spec); err != nil {
		t.Fatalf("after read-only binds only: %v", err)
	}
}

// TestWrittenTreesStore: the trees outlive the process that recorded
// them (a second store at the same file sees them), trees that no longer
// exist are dropped when a store opens, and a store file others could
// write is refused.
func TestWrittenTreesStore(t *testing.T) {
	base := linkedTrees(t)
	file := filepath.Join(t.TempDir(), "written-trees")
	gone := filepath.Join(base, "gone")
	os.Mkdir(gone, 0o700)
	w := newWrittenTrees(file)
	if err := w.record(Spec{RunnerStateDirs: []string{base + "/ws", gone}}); err != nil {
		t.Fatal(err)
	}
	later := newWrittenTrees(file)
	if err := later.checkLinks(Spec{BindMounts: []BindMount{{HostPath: base + "/ws/sub", GuestPath: "/b"}}}); specErrorField(t, err) != "bindMounts[0].hostPath" {
		t.Fatal(err)
	}
	os.Remove(gone)
	newWrittenTrees(file)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != base+"/ws\n" {
		t.Fatalf("store after compaction: %q, want only %s", got, base+"/ws")
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Fatalf("store mode %v", fi.Mode())
	}
	os.Chmod(file, 0o622)
	bad := newWrittenTrees(file)
	if _, err := bad.list(); err == nil {
		t.Fatal("a store others can write was used")
	}
	if err := bad.record(Spec{RunnerStateDirs: []string{base}}); err == nil {
		t.Fatal("recorded into a store others can write")
	}
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(file, link)
	if _, err := newWrittenTrees(link).list(); err == nil {
		t.Fatal("a store reached through a link was used")
	}
}

// TestWrittenTreesOtherUsersLink: a link another user left in a sticky,
// world-writable directory (/tmp) is never followed, recorded trees or
// not; one of this user's there is. Root only (it makes the other user's
// link).
func TestWrittenTreesOtherUsersLink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make another user's link")
	}
	base := linkedTrees(t)
	tmp := filepath.Join(base, "tmp")
	os.Mkdir(tmp, 0o777)
	if err := os.Chmod(tmp, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	theirs, mine := filepath.Join(tmp, "theirs"), filepath.Join(tmp, "mine")
	os.Symlink(base+"/secret", theirs)
	os.Symlink(base+"/secret", mine)
	if err := os.Lchown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	w := newWrittenTrees("-")
	err := w.checkLinks(Spec{BindMounts: []BindMount{{HostPath: theirs, GuestPath: "/b"}}})
	if specErrorField(t, err) != "bindMounts[0].hostPath" || !strings.Contains(err.Error(), "owned by another user (uid 65534)") {
		t.Fatal(err)
	}
	if err := w.checkLinks(Spec{BindMounts: []BindMount{{HostPath: mine, GuestPath: "/b"}}}); err != nil {
		t.Fatalf("this user's own link in a sticky directory: %v", err)
	}
	// A link in a world-writable directory without the sticky bit is
	// anyone's.
	os.Chmod(tmp, 0o777)
	if err := w.checkLinks(Spec{BindMounts: []BindMount{{HostPath: mine, GuestPath: "/b"}}}); err == nil || !strings.Contains(err.Error(), "writable by other users") {
		t.Fatalf("a link in a non-sticky world-writable directory: %v", err)
	}
}
