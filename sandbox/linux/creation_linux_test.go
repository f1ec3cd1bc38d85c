package linux

import (
	"errors"
	"os"
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

// TestMain plays the kernel probe's role only (creationProbeArg): the
// package's other roles are not needed by its tests, and
// TestStartWithoutDispatch wants DispatchRole never called.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == creationProbeArg {
		runCreationProbe()
	}
	os.Exit(m.Run())
}

// TestCreationProbe asks this kernel (6.x, the test machines') and wants
// every capability there, then fakes each refusal and wants its sentence
// to name what is missing.
func TestCreationProbe(t *testing.T) {
	if err := probeOpenat2(); err != nil {
		t.Errorf("openat2: %v", err)
	}
	if err := probeSeccomp("/proc/self/exe"); err != nil {
		t.Errorf("seccomp: %v", err)
	}
	for _, tc := range []struct{ line, want string }{
		{"listener 22", "seccomp notification listener installed with TSYNC"},
		{"addfd 22", "SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SEND (Linux 5.14): invalid argument"},
		{"addfd -1", "SECCOMP_ADDFD_FLAG_SEND"},
		{"", "unexpected answer"},
		{"ok 1", "unexpected answer"},
	} {
		err := creationProbeVerdict(tc.line)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("verdict %q: %v, want one naming %q", tc.line, err, tc.want)
		}
	}
	if err := creationProbeVerdict("addfd 22"); !errors.Is(err, unix.EINVAL) {
		t.Errorf("verdict wraps no EINVAL: %v", err)
	}
	if err := creationProbeVerdict("ok"); err != nil {
		t.Errorf("verdict ok: %v", err)
	}
	if err := (&missingCapability{capOpenat2, unix.ENOSYS}).Error(); !strings.Contains(err, "openat2") {
		t.Errorf("openat2 sentence %q", err)
	}
}
