//go:build amd64 || arm64

package seccomp

import (
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// setIDVM loads BuildSetID's filter for opts into a bpf.VM.
func setIDVM(t *testing.T, opts Options) *bpf.VM {
	t.Helper()
	raw, err := BuildSetID(opts)
	if err != nil {
		t.Fatalf("BuildSetID(%+v): %v", opts, err)
	}
	prog, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("BuildSetID produced an instruction x/net/bpf cannot decode")
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	return vm
}

// cwd is AT_FDCWD as an int argument reaches the filter.
const cwd = uint64(0xffff_ffff_ffff_ff9c)

// modeCase is one mode-setting call and whether its mode is refused.
type modeCase struct {
	name    string
	d       seccompData
	refused bool
}

// modeCases are written from the rule (set-id bits anywhere; o+w, and g+w
// with RefuseGroupWrite, for the chmod family only), not from modeArgs.
func modeCases(groupWrite bool) []modeCase {
	const hi = 1 << 32 // a high word the kernel truncates away
	cs := []modeCase{
		{"fchmodat u+s", call(unix.SYS_FCHMODAT, cwd, 0x1000, 0o4755), true},
		{"fchmodat g+s", call(unix.SYS_FCHMODAT, cwd, 0x1000, 0o2755), true},
		{"fchmodat o+w", call(unix.SYS_FCHMODAT, cwd, 0x1000, 0o646), true},
		{"fchmodat g+w", call(unix.SYS_FCHMODAT, cwd, 0x1000, 0o664), groupWrite},
		{"fchmodat 644", call(unix.SYS_FCHMODAT, cwd, 0x1000, 0o644), false},
		{"fchmodat 644 high word set", call(unix.SYS_FCHMODAT, cwd, 0x1000, hi|0o644), false},
		{"fchmodat u+s high word set", call(unix.SYS_FCHMODAT, cwd, 0x1000, hi|0o4755), true},
		{"fchmodat2 u+s", call(unix.SYS_FCHMODAT2, cwd, 0x1000, 0o4755, 0), true},
		{"fchmod u+s", call(unix.SYS_FCHMOD, 3, 0o4755), true},
		{"fchmod o+w", call(unix.SYS_FCHMOD, 3, 0o777), true},
		{"fchmod 755", call(unix.SYS_FCHMOD, 3, 0o755), false},
		{"openat O_CREAT 4755", call(unix.SYS_OPENAT, cwd, 0x1000, unix.O_CREAT|unix.O_WRONLY, 0o4755), true},
		{"openat O_CREAT 666", call(unix.SYS_OPENAT, cwd, 0x1000, unix.O_CREAT|unix.O_WRONLY, 0o666), false},
		{"openat O_CREAT 777", call(unix.SYS_OPENAT, cwd, 0x1000, unix.O_CREAT|unix.O_WRONLY, 0o777), false},
		{"openat read", call(unix.SYS_OPENAT, cwd, 0x1000, unix.O_RDONLY, 0), false},
		{"mknodat 2644", call(unix.SYS_MKNODAT, cwd, 0x1000, unix.S_IFREG|0o2644, 0), true},
		{"mknodat 644", call(unix.SYS_MKNODAT, cwd, 0x1000, unix.S_IFREG|0o644, 0), false},
	}
	cs = append(cs, legacyModeCases()...)
	return cs
}

// TestSetIDDenyOnly: without a listener, BuildSetID refuses the modes
// with EPERM, and answers the xattr calls and openat2 as before.
func TestSetIDDenyOnly(t *testing.T) {
	for _, gw := range []bool{false, true} {
		opts := Options{RefuseGroupWrite: gw}
		vm := setIDVM(t, opts)
		for _, tc := range modeCases(gw) {
			want := uint32(retAllow)
			if tc.refused {
				want = retEPERM
			}
			if got := runVM(t, vm, tc.d); got != want {
				t.Errorf("groupWrite=%v %s: got %s, want %s", gw, tc.name, actionName(got), actionName(want))
			}
		}
		silentAnswers(t, vm)
	}
}

// silentAnswers checks the answers BuildSetID makes in every sandbox.
func silentAnswers(t *testing.T, vm *bpf.VM) {
	t.Helper()
	if got := runVM(t, vm, call(unix.SYS_SETXATTR, 0x1000, 0x2000, 0x3000, 4, 0)); got != unix.SECCOMP_RET_ERRNO|uint32(unix.EOPNOTSUPP) {
		t.Errorf("setxattr: got %s, want ERRNO(EOPNOTSUPP)", actionName(got))
	}
	if got := runVM(t, vm, call(unix.SYS_OPENAT2, cwd, 0x1000, 0x2000, 24)); got != retENOSYS {
		t.Errorf("openat2: got %s, want ERRNO(ENOSYS)", actionName(got))
	}
}

// TestSetIDNotified: with Notify the mode refusals move to Build's filter,
// which notifies just the refused modes (every other mode-setting call
// runs without a round trip), and BuildSetID no longer makes them (its
// errno would outrank the notification); the xattr and openat2 answers
// stay deny-only.
func TestSetIDNotified(t *testing.T) {
	for _, gw := range []bool{false, true} {
		for _, extra := range []Options{{}, {EmulateCreates: true}, {ObserveWrites: true}, {ObserveWrites: true, EmulateCreates: true}} {
			opts := extra
			opts.Notify, opts.RefuseGroupWrite = true, gw
			main := newVM(t, opts)
			setid := setIDVM(t, opts)
			tb, err := Table(opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range modeCases(gw) {
				if got := runVM(t, setid, tc.d); got != retAllow {
					t.Errorf("%+v %s: BuildSetID answers %s, want ALLOW (the listener decides)", opts, tc.name, actionName(got))
				}
				got := runVM(t, main, tc.d)
				if tc.refused && got != retNotify {
					t.Errorf("%+v %s: Build answers %s, want USER_NOTIF", opts, tc.name, actionName(got))
				}
				if !tc.refused && got == retNotify && opts == (Options{Notify: true, RefuseGroupWrite: gw}) {
					t.Errorf("%+v %s: notified, a round trip for an ordinary mode", opts, tc.name)
				}
				c, ok := tb[tc.d.nr]
				if !ok || c.Mode == nil {
					t.Fatalf("%+v %s: Table has no mode check: %+v", opts, tc.name, c)
				}
				if hit := uint32(tc.d.args[c.Mode.Arg])&c.Mode.Refused != 0; hit != tc.refused {
					t.Errorf("%+v %s: the Table's mode check says refused=%v", opts, tc.name, hit)
				}
			}
			silentAnswers(t, setid)
		}
	}
	// Without Notify, Build leaves the modes alone: BuildSetID refuses them.
	if got := runVM(t, newVM(t, Options{}), call(unix.SYS_FCHMODAT, cwd, 0x1000, 0o4755)); got != retAllow {
		t.Errorf("deny-only Build answers fchmodat u+s with %s, want ALLOW (BuildSetID's)", actionName(got))
	}
}
