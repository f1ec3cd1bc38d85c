package supervisor

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"github.com/srt-go/srt/seccomp"
	"golang.org/x/sys/unix"
)

// TestRefusedMode judges modes through the filter's own table, as the
// loop does: the rule names come from the refused bit.
func TestRefusedMode(t *testing.T) {
	for _, gw := range []bool{false, true} {
		tb, err := seccomp.Table(seccomp.Options{Notify: true, RefuseGroupWrite: gw})
		if err != nil {
			t.Fatal(err)
		}
		chmod, creat := tb[unix.SYS_FCHMODAT].Mode, tb[unix.SYS_OPENAT].Mode
		if chmod == nil || creat == nil || !chmod.Chmod || creat.Chmod {
			t.Fatalf("Table: fchmodat %+v, openat %+v", chmod, creat)
		}
		for _, tc := range []struct {
			m    *seccomp.ModeCheck
			mode uint64
			rule string
		}{
			{chmod, 0o4755, ruleSetID},
			{chmod, 0o2755, ruleSetID},
			{chmod, 0o6777, ruleSetID},
			{chmod, 0o646, ruleWorldWritable},
			{chmod, 0o664, map[bool]string{true: ruleGroupWritable}[gw]},
			{chmod, 0o644, ""},
			{chmod, 1<<32 | 0o644, ""},
			{creat, 0o4755, ruleSetID},
			{creat, 0o777, ""}, // the umask trims a creation mode
			{creat, 0o666, ""},
		} {
			var args [6]uint64
			args[tc.m.Arg] = tc.mode
			rule, bad := refusedMode(tc.m, args)
			if rule != tc.rule || bad != (tc.rule != "") {
				t.Errorf("groupWrite=%v chmod=%v mode %#o: got %q %v, want %q", gw, tc.m.Chmod, tc.mode, rule, bad, tc.rule)
			}
		}
	}
}

// TestModeTarget names the file of a mode call from the caller's view:
// a path relative to a directory descriptor, and fchmod's descriptor.
func TestModeTarget(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	tb, err := seccomp.Table(seccomp.Options{Notify: true})
	if err != nil {
		t.Fatal(err)
	}
	name, _ := unix.BytePtrFromString("f")
	var at [6]uint64
	at[0], at[1], at[2] = uint64(d.Fd()), uint64(uintptr(unsafe.Pointer(name))), 0o4755
	got := modeTarget(os.Getpid(), tb[unix.SYS_FCHMODAT].Mode, at)
	runtime.KeepAlive(name)
	if got != f.Name() {
		t.Errorf("fchmodat target %q, want %q", got, f.Name())
	}
	var fc [6]uint64
	fc[0], fc[1] = uint64(f.Fd()), 0o4755
	if got := modeTarget(os.Getpid(), tb[unix.SYS_FCHMOD].Mode, fc); got != f.Name() {
		t.Errorf("fchmod target %q, want %q", got, f.Name())
	}
}
