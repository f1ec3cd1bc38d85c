package fsplan

import "testing"

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
