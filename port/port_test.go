package port

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/srt-go/srt/netrule"
)

func TestParseBackend(t *testing.T) {
	for in, want := range map[string]Backend{"": BackendNone, "none": BackendNone, "native": BackendNative,
		"docker": BackendNative, "microvm": BackendMicroVM, "MicroVM": BackendNone, "vm": BackendNone} {
		if got := ParseBackend(in); got != want {
			t.Errorf("ParseBackend(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestTransitions(t *testing.T) {
	all := []State{StateCreated, StateWarm, StateActive, StateSuspended, StateDestroyed, StateError}
	legal := map[[2]State]bool{
		{StateCreated, StateWarm}: true, {StateCreated, StateError}: true, {StateCreated, StateDestroyed}: true,
		{StateWarm, StateActive}: true, {StateWarm, StateSuspended}: true, {StateWarm, StateDestroyed}: true, {StateWarm, StateError}: true,
		{StateActive, StateWarm}: true, {StateActive, StateSuspended}: true, {StateActive, StateDestroyed}: true, {StateActive, StateError}: true,
		{StateSuspended, StateWarm}: true, {StateSuspended, StateActive}: true, {StateSuspended, StateDestroyed}: true, {StateSuspended, StateError}: true,
		{StateError, StateDestroyed}: true,
	}
	for _, from := range all {
		for _, to := range all {
			want := legal[[2]State{from, to}]
			if got := CanTransition(from, to); got != want {
				t.Errorf("%s -> %s: %v, want %v", from, to, got, want)
			}
			err := checkTransition(from, to)
			if want != (err == nil) || !want && !errors.Is(err, ErrIllegalTransition) {
				t.Errorf("checkTransition(%s, %s) = %v", from, to, err)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	ok := Spec{SessionID: "s-1", BindMounts: []BindMount{{HostPath: dir}}}
	if err := Validate(ok); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, field string
		edit        func(*Spec)
	}{
		{"empty-session", "sessionId", func(s *Spec) { s.SessionID = "" }},
		{"session-slash", "sessionId", func(s *Spec) { s.SessionID = "../x" }},
		{"session-dotdot", "sessionId", func(s *Spec) { s.SessionID = ".." }},
		{"session-leading-dot", "sessionId", func(s *Spec) { s.SessionID = ".x" }},
		{"session-leading-dash", "sessionId", func(s *Spec) { s.SessionID = "-x" }},
		{"session-too-long", "sessionId", func(s *Spec) { s.SessionID = strings.Repeat("a", 129) }},
		{"relative-host", "bindMounts[0].hostPath", func(s *Spec) { s.BindMounts[0].HostPath = "rel" }},
		{"missing-host", "bindMounts[0].hostPath", func(s *Spec) { s.BindMounts[0].HostPath = dir + "/nope" }},
		{"nul-host", "bindMounts[0].hostPath", func(s *Spec) { s.BindMounts[0].HostPath = dir + "\x00" }},
		{"relative-guest", "bindMounts[0].guestPath", func(s *Spec) { s.BindMounts[0].GuestPath = "w" }},
		{"root-guest", "bindMounts[0].guestPath", func(s *Spec) { s.BindMounts[0].GuestPath = "/" }},
		{"proc-guest", "bindMounts[0].guestPath", func(s *Spec) { s.BindMounts[0].GuestPath = "/proc/1" }},
		{"dotdot-guest", "bindMounts[0].guestPath", func(s *Spec) { s.BindMounts[0].GuestPath = "/a/../etc" }},
		{"duplicate-guest", "bindMounts[1].guestPath", func(s *Spec) {
			s.BindMounts = append(s.BindMounts, BindMount{HostPath: dir})
		}},
		{"mode", "mode", func(s *Spec) { s.Mode = "yolo" }},
		{"egress-scheme", "egressAllowlist[1]", func(s *Spec) { s.EgressAllowlist = []string{"ok.example", "https://x.example"} }},
		{"egress-star", "egressAllowlist[0]", func(s *Spec) { s.EgressAllowlist = []string{"*"} }},
		{"workdir", "guestWorkdir", func(s *Spec) { s.GuestWorkdir = "w" }},
		{"protected", "protectedPaths[0]", func(s *Spec) { s.ProtectedPaths = []string{"rel"} }},
		{"runner-missing", "runnerStateDirs[0]", func(s *Spec) { s.RunnerStateDirs = []string{dir + "/nope"} }},
		{"workspace", "workspaceId", func(s *Spec) { s.WorkspaceID = "a b" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := ok
			s.BindMounts = append([]BindMount(nil), ok.BindMounts...)
			c.edit(&s)
			var se *SpecError
			if err := Validate(s); !errors.As(err, &se) || se.Field != c.field {
				t.Fatalf("Validate = %v, want a SpecError for %s", err, c.field)
			}
		})
	}
}

// fakeVM is a MicroVMLauncher that can or cannot start a VM.
type fakeVM struct{ ok bool }

func (f fakeVM) Probe(context.Context) (bool, string) {
	if f.ok {
		return true, "fake VM"
	}
	return false, "no hypervisor"
}
func (f fakeVM) Launch(ctx context.Context, spec Spec, e EgressLists) (Sandbox, error) {
	return nil, errors.New("fake")
}

func TestChoose(t *testing.T) {
	native := &Probe{Platform: "linux", Available: true, Note: "bubblewrap"}
	noNative := &Probe{Platform: "linux", Note: "bubblewrap is not installed"}
	for _, c := range []struct {
		name      string
		opts      Options
		probe     *Probe
		req, want Backend
		fail      bool
		log       string
	}{
		{"default-native", Options{}, native, "", BackendNative, false, ""},
		{"default-no-native", Options{}, noNative, "", BackendNone, false, ""},
		{"explicit-microvm-fails-loudly", Options{}, native, BackendMicroVM, "", true, ""},
		{"explicit-native-unavailable", Options{}, noNative, BackendNative, "", true, ""},
		{"default-microvm-falls-back", Options{DefaultBackend: BackendMicroVM}, native, "", BackendNative, false, "falling back to native"},
		{"off-default", Options{Sandbox: SandboxOff}, native, "", BackendNone, false, ""},
		{"off-explicit-native", Options{Sandbox: SandboxOff}, native, BackendNative, "", true, ""},
		{"none", Options{}, native, BackendNone, BackendNone, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			c.opts.Logger = slog.New(slog.NewTextHandler(&buf, nil))
			c.opts.MicroVM = fakeVM{}
			p := *c.probe
			p.MicroVMAvailable, p.MicroVMNote = false, "no hypervisor"
			rt, err := newRuntime(context.Background(), c.opts, &p)
			if err != nil {
				t.Fatal(err)
			}
			got, err := rt.Choose(context.Background(), c.req)
			if c.fail {
				if !errors.Is(err, ErrBackendUnavailable) {
					t.Fatalf("Choose(%q) = %v, %v; want ErrBackendUnavailable", c.req, got, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("Choose(%q) = %v, %v; want %v", c.req, got, err, c.want)
			}
			if c.log != "" && !strings.Contains(buf.String(), c.log) {
				t.Errorf("log %q lacks %q", buf.String(), c.log)
			}
		})
	}
	// An explicit microvm launch fails loudly through Launch too.
	rt, _ := newRuntime(context.Background(), Options{MicroVM: fakeVM{}}, native)
	if _, err := rt.Launch(context.Background(), Spec{SessionID: "vm"}, BackendMicroVM); !errors.Is(err, ErrBackendUnavailable) {
		t.Fatalf("Launch microvm = %v", err)
	}
}

func TestStartupLine(t *testing.T) {
	for _, c := range []struct {
		p    Probe
		on   bool
		want string
	}{
		{Probe{Available: true, Note: "bubblewrap (/usr/bin/bwrap)"}, true, "agent sandbox ON bubblewrap (/usr/bin/bwrap)"},
		{Probe{Note: "x", InstallHint: "install bubblewrap"}, true, "no OS-native agent sandbox on this host install bubblewrap"},
		{Probe{Available: true}, false, "agent sandbox DISABLED by --sandbox off"},
	} {
		if got := StartupLine(c.p, c.on); got != c.want {
			t.Errorf("StartupLine = %q, want %q", got, c.want)
		}
	}
}

func TestEgressRules(t *testing.T) {
	b := DefaultBaseline()
	pol := netrule.MustCompile(EgressRules(b, true, []string{"*.extra.example", "api.*.mid.example"}))
	for _, c := range []struct {
		host string
		want bool
	}{
		{"api.anthropic.com", true},
		{"github.com", true},
		{"raw.githubusercontent.com", true},
		{"bedrock.us-east-1.amazonaws.com", true},
		{"bedrock.evil.attacker.amazonaws.com", false},
		{"a.b.extra.example", true},
		{"extra.example", false},
		{"api.x.mid.example", true},
		{"api.x.y.mid.example", false},
		{"metadata.google.internal", false},
		{"169.254.169.254", false},
		{"statsig.anthropic.com", false},
		{"o1.ingest.sentry.io", false},
		{"example.org", false},
	} {
		if got := pol.Decide(c.host, 443).Allowed; got != c.want {
			t.Errorf("%s: allowed=%v, want %v", c.host, got, c.want)
		}
	}
	off := netrule.MustCompile(EgressRules(b, false, []string{"x.example"}))
	for _, h := range []string{"api.anthropic.com", "github.com", "x.example"} {
		if off.Decide(h, 443).Allowed {
			t.Errorf("networkEnabled false allowed %s", h)
		}
	}
}

func TestSanitizedEnv(t *testing.T) {
	env := SanitizedEnv([]string{"PATH=/bin", "HOME=/h", "AWS_SECRET_ACCESS_KEY=x", "SRTD_TOKEN=y", "LC_ALL=C", "TERM=xterm"}, map[string]string{"FOO": "bar", "HOME": "/w"})
	got := strings.Join(env, " ")
	if got != "FOO=bar HOME=/w LC_ALL=C PATH=/bin TERM=xterm" {
		t.Errorf("env = %s", got)
	}
}

// TestProtectedPathsShown: a protectedPaths entry no bind shows would
// protect nothing; a guest path given by mistake is named as one.
func TestProtectedPathsShown(t *testing.T) {
	ws := t.TempDir()
	base := Spec{SessionID: "p", BindMounts: []BindMount{{HostPath: ws, GuestPath: "/work"}}}
	for _, tc := range []struct {
		path, want string
	}{
		{ws + "/secret", ""},
		{"/work/secret", "is a guest path"},
		{"/elsewhere/secret", "would protect nothing"},
		{ws + "/**/*.pem", ""},
	} {
		spec := base
		spec.ProtectedPaths = []string{tc.path}
		err := Validate(spec)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("protectedPaths %q: %v, want %q", tc.path, err, tc.want)
		}
	}
}
