//go:build linux

package microvm

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestQEMUModeFilter: what confine runs QEMU under refuses set-id bits
// and others' write permission on a file QEMU owns, and extended
// attributes, as a subverted guest would ask through 9p, and allows an
// ordinary chmod. Run through bubblewrap with the same --seccomp
// descriptor as QEMU (startQEMU).
func TestQEMUModeFilter(t *testing.T) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bwrap missing")
	}
	v := &VM{cfg: Config{}, assets: &Assets{Kernel: "/dev/null"}, initrd: "/dev/null"}
	if args := confine(bwrap, v, t.TempDir(), []string{"true"}, 3); !slices.Contains(args, "--seccomp") {
		t.Fatalf("confine has no --seccomp: %v", args)
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	os.WriteFile(f, []byte("#!/bin/sh\n"), 0o644)
	for _, tc := range []struct {
		cmd []string
		ok  bool
	}{
		{[]string{"chmod", "0755", f}, true},
		{[]string{"chmod", "4755", f}, false},
		{[]string{"chmod", "2755", f}, false},
		{[]string{"chmod", "0757", f}, false},
		{[]string{"setfattr", "-n", "user.x", "-v", "1", f}, false},
	} {
		if _, err := exec.LookPath(tc.cmd[0]); err != nil {
			continue
		}
		mf, err := qemuModeFilter()
		if err != nil {
			t.Fatal(err)
		}
		c := exec.Command(bwrap, append([]string{"--ro-bind", "/", "/", "--bind", dir, dir, "--dev", "/dev", "--seccomp", "3", "--"}, tc.cmd...)...)
		c.ExtraFiles = []*os.File{mf}
		out, err := c.CombinedOutput()
		mf.Close()
		if (err == nil) != tc.ok {
			t.Errorf("%v: %v %s, want allowed %v", tc.cmd, err, out, tc.ok)
		}
	}
	if st, err := os.Stat(f); err != nil || st.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 || st.Mode().Perm()&0o002 != 0 {
		t.Errorf("f: %v %v", st.Mode(), err)
	}
}
