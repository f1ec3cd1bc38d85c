package linux

import (
	"errors"
	"strings"
	"testing"

	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/settings"
	"golang.org/x/sys/unix"
)

// TestCreationRulesDecision: the key's three states against a host that
// can and one that cannot run the rules — never a silently weaker run.
func TestCreationRulesDecision(t *testing.T) {
	saved := creationSupport
	t.Cleanup(func() { creationSupport = saved })
	on, off := true, false
	for _, tc := range []struct {
		name      string
		key       *bool
		globs     bool
		supported bool
		weak      bool
		wantOn    bool
		notice    bool
		err       string
	}{
		{name: "absent, supported", supported: true, wantOn: true},
		{name: "true, supported", key: &on, supported: true, wantOn: true},
		{name: "false, supported", key: &off, supported: true},
		{name: "absent, unsupported", notice: true},
		{name: "absent, globs, unsupported", globs: true, err: "denyWrite holds globs"},
		{name: "true, unsupported", key: &on, err: "enforceNamesAtCreation is true"},
		{name: "false, globs, unsupported", key: &off, globs: true, notice: true},
		{name: "false, globs, supported", key: &off, globs: true, supported: true, notice: true},
		{name: "absent, weak", supported: true, weak: true, notice: true},
		{name: "true, weak", key: &on, supported: true, weak: true, err: "Landlock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			creationSupport = func() error {
				if tc.supported {
					return nil
				}
				return &missingCapability{capAddFD, unix.EINVAL}
			}
			s := settings.Default()
			s.Filesystem.EnforceNamesAtCreation = tc.key
			if tc.globs {
				s.Filesystem.DenyWrite = []settings.PathEntry{{Path: "**/.env"}}
			}
			p, err := policy.Compile(s, policy.Env{Cwd: t.TempDir(), Home: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			gotOn, notice, err := CreationRules(p, tc.weak)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "refusing to run") {
					t.Fatalf("err = %v, want one naming %q and refusing", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if gotOn != tc.wantOn || (notice != "") != tc.notice {
				t.Errorf("on %v, notice %q; want on %v, notice %v", gotOn, notice, tc.wantOn, tc.notice)
			}
		})
	}
}

// TestCreationProbe asks this kernel (6.x, the test machines') and wants
// every capability there, then fakes each refusal and wants its sentence
// to name what is missing.
func TestCreationProbe(t *testing.T) {
	if err := probeOpenat2(); err != nil {
		t.Errorf("openat2: %v", err)
	}
	if err := probeSeccomp(); err != nil {
		t.Errorf("seccomp: %v", err)
	}
	// The probe's filter stayed on its thread: this process still runs
	// everything (a filter on every thread would make this fail under a
	// second no_new_privs check, and setuid binaries lose their bit).
	var nnp int
	for range 50 {
		done := make(chan int)
		go func() {
			n, _ := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
			done <- n
		}()
		nnp |= <-done
	}
	if nnp != 0 {
		t.Errorf("no_new_privs leaked to the process's threads")
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&missingCapability{capListener, unix.EINVAL}, "seccomp notification listener installed with TSYNC"},
		{&missingCapability{capAddFD, unix.EINVAL}, "SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SEND (Linux 5.14): invalid argument"},
	} {
		if !strings.Contains(tc.err.Error(), tc.want) || !errors.Is(tc.err, unix.EINVAL) {
			t.Errorf("%v, want one naming %q and wrapping EINVAL", tc.err, tc.want)
		}
	}
	if err := (&missingCapability{capOpenat2, unix.ENOSYS}).Error(); !strings.Contains(err, "openat2") {
		t.Errorf("openat2 sentence %q", err)
	}
}
