package linux

import (
	"errors"
	"strings"
	"testing"

	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/settings"
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
				return errors.New("kernel 5.4 is older than 5.14")
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

func TestLeadingInt(t *testing.T) {
	for in, want := range map[string]int{"6": 6, "14-amd64": 14, "": 0, "x": 0, "18": 18} {
		if got := leadingInt(in); got != want {
			t.Errorf("leadingInt(%q) = %d, want %d", in, got, want)
		}
	}
}
