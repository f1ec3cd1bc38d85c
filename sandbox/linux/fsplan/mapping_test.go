package fsplan

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/srt-go/srt/policy"
)

// TestMappingGuestRoot: in a guest root (the microvm guest) only the
// mounts reach host files; every other path, the mount points' parents
// included, is the guest's own, and a System directory is not.
func TestMappingGuestRoot(t *testing.T) {
	m := Mapping{Confined: true, GuestRoot: true, System: []string{"/sys-ro"}, Mounts: []Mount{
		{Host: "/home/u/proj", Guest: "/home/u/proj"},
		{Host: "/srv/data", Guest: "/mnt/data"},
	}}
	for _, tc := range []struct {
		g       string
		private bool
		host    string
	}{
		{"/home/u/proj", false, "/home/u/proj"},
		{"/home/u/proj/sub/.bashrc", false, "/home/u/proj/sub/.bashrc"},
		{"/mnt/data/x", false, "/srv/data/x"},
		{"/home/u/.bashrc", true, "/home/u/.bashrc"},
		{"/home/u", true, "/home/u"},
		{"/tmp/x", true, "/tmp/x"},
		{"/run/x", true, "/run/x"},
		{"/", true, "/"},
		{"/sys-ro/x", false, "/sys-ro/x"},
		{"/home/u/project", true, "/home/u/project"},
	} {
		if got := m.Private(tc.g); got != tc.private {
			t.Errorf("Private(%s) = %v, want %v", tc.g, got, tc.private)
		}
		if h, _ := m.Host(tc.g); h != tc.host {
			t.Errorf("Host(%s) = %s, want %s", tc.g, h, tc.host)
		}
	}
	// Without GuestRoot a confined view's own tree is /tmp alone.
	c := m
	c.GuestRoot = false
	if c.Private("/run/x") || !c.Private("/tmp/x") || c.Private("/home/u/.bashrc") {
		t.Error("a confined view without GuestRoot: only its /tmp is private")
	}
	if HostView().Private("/tmp/x") {
		t.Error("the host view has no private tree")
	}
}

// TestPinnedParents: the directories between a write root and an existing
// or missing deny are pinned, parents first; the write root is not.
func TestPinnedParents(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"e/a/b", "m"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "e/a/b/.bashrc"), nil, 0o644)
	p := &policy.Policy{
		AllowWrite: []policy.Path{{Resolved: root, Kind: policy.Dir}},
		DenyWrite: []policy.Path{{Resolved: filepath.Join(root, "e/a/b/.bashrc"), Kind: policy.File},
			{Resolved: filepath.Join(root, "m/x/.env"), Kind: policy.Missing}},
	}
	got := PinnedParents(p)
	want := []string{filepath.Join(root, "e"), filepath.Join(root, "m"), filepath.Join(root, "e/a"), filepath.Join(root, "e/a/b")}
	if !slices.Equal(got, want) {
		t.Errorf("PinnedParents = %v, want %v", got, want)
	}
}
