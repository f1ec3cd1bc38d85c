package port

import (
	"errors"
	"testing"

	"github.com/srt-go/srt/sandbox/darwin"
	"github.com/srt-go/srt/sandbox/darwin/sbpl"
)

const seatbeltTag = "CMD64_bnBtIHRlc3Q=_END_0123456789abcdef_SBX"

func seatbeltTestSpec(mode Mode) Spec {
	return Spec{
		SessionID: "s1", WorkspaceID: "w", Mode: mode, NetworkEnabled: true,
		BindMounts: []BindMount{
			{HostPath: "/Users/me/wt/c1", GuestPath: "/Users/me/wt/c1"},
			{HostPath: "/Users/me/docs", GuestPath: "/Users/me/docs", ReadOnly: true},
		},
		GuestWorkdir:    "/Users/me/wt/c1",
		ProtectedPaths:  []string{"/Users/me/wt/c1/orig", "/Users/me/wt/c1/keep-*"},
		RunnerStateDirs: []string{"/Users/me/.cc/state"},
	}
}

func seatbeltProfile(t *testing.T, spec Spec) *sbpl.Profile {
	t.Helper()
	ds, err := seatbeltSpec(spec, StandardNameGlobWriteDenies, "/Users/me", "/var/folders/xy/T/s1", seatbeltTag, darwin.Egress{HTTPProxyPort: 41001, SOCKSProxyPort: 41002})
	if err != nil {
		t.Fatal(err)
	}
	src, err := darwin.AgentProfile(ds)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sbpl.Load(src)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	return p
}

// TestSeatbeltSpec: a session's Spec, translated for the macOS native
// backend, gives an agent profile that enforces the launch policy, checked
// with the profile evaluator.
func TestSeatbeltSpec(t *testing.T) {
	for _, tc := range []struct {
		mode  Mode
		cases []struct {
			name string
			req  sbpl.Request
			want bool
		}
	}{
		{ModeChat, []struct {
			name string
			req  sbpl.Request
			want bool
		}{
			{"write-bind", sbpl.Request{Op: "file-write-create", Path: "/Users/me/wt/c1/main.go"}, true},
			{"write-read-only-bind", sbpl.Request{Op: "file-write-create", Path: "/Users/me/docs/x"}, false},
			{"write-outside", sbpl.Request{Op: "file-write-create", Path: "/Users/me/x"}, false},
			{"write-state", sbpl.Request{Op: "file-write-create", Path: "/Users/me/.cc/state/s.json"}, true},
			{"write-tmp", sbpl.Request{Op: "file-write-create", Path: "/private/var/folders/xy/T/s1/a"}, true},
			{"write-protected", sbpl.Request{Op: "file-write-data", Path: "/Users/me/wt/c1/orig/a.go"}, false},
			{"write-protected-glob", sbpl.Request{Op: "file-write-create", Path: "/Users/me/wt/c1/keep-1"}, false},
			{"write-protected-glob-below", sbpl.Request{Op: "file-write-create", Path: "/Users/me/wt/c1/keep-1/a/b"}, false},
			{"write-near-protected-glob", sbpl.Request{Op: "file-write-create", Path: "/Users/me/wt/c1/kept"}, true},
			{"create-env-deep", sbpl.Request{Op: "file-write-create", Path: "/Users/me/wt/c1/a/b/c/.env"}, false},
			{"create-key", sbpl.Request{Op: "file-write-create", Path: "/Users/me/wt/c1/id.key"}, false},
			{"create-pem-in-state", sbpl.Request{Op: "file-write-create", Path: "/Users/me/.cc/state/x.PEM"}, false},
			{"create-hook", sbpl.Request{Op: "file-write-create", Path: "/Users/me/wt/c1/.git/hooks/pre-commit"}, false},
			{"read-ssh", sbpl.Request{Op: "file-read-data", Path: "/Users/me/.ssh/id_ed25519"}, false},
			{"read-bind", sbpl.Request{Op: "file-read-data", Path: "/Users/me/docs/a"}, true},
			{"net-http-proxy", sbpl.Request{Op: "network-outbound", Remote: "localhost:41001"}, true},
			{"net-socks-proxy", sbpl.Request{Op: "network-outbound", Remote: "localhost:41002"}, true},
			{"net-other-loopback", sbpl.Request{Op: "network-outbound", Remote: "localhost:7777"}, false},
			{"net-direct", sbpl.Request{Op: "network-outbound", Remote: "93.184.216.34:443"}, false},
			{"exec-from-bind", sbpl.Request{Op: "process-exec", Path: "/Users/me/wt/c1/evil"}, false},
		}},
		{ModeReview, []struct {
			name string
			req  sbpl.Request
			want bool
		}{
			{"write-bind", sbpl.Request{Op: "file-write-create", Path: "/Users/me/wt/c1/main.go"}, false},
			{"write-state", sbpl.Request{Op: "file-write-create", Path: "/Users/me/.cc/state/s.json"}, true},
			{"exec-from-bind", sbpl.Request{Op: "process-exec", Path: "/Users/me/wt/c1/tool"}, true},
		}},
	} {
		p := seatbeltProfile(t, seatbeltTestSpec(tc.mode))
		for _, c := range tc.cases {
			if got := p.Decide(c.req); got.Allow != c.want {
				t.Errorf("%s %s: %s %s allowed=%v; want %v (rule %v)", tc.mode, c.name, c.req.Op, c.req.Path+c.req.Remote, got.Allow, c.want, got.Rule)
			}
		}
	}
}

// TestSeatbeltSpecRefuses: what Seatbelt cannot do fails the launch.
func TestSeatbeltSpecRefuses(t *testing.T) {
	eg := darwin.Egress{HTTPProxyPort: 1, SOCKSProxyPort: 2}
	s := seatbeltTestSpec(ModeChat)
	s.BindMounts[0].GuestPath = "/workspace"
	s.GuestWorkdir = "/workspace"
	if _, err := seatbeltSpec(s, nil, "/Users/me", "", seatbeltTag, eg); !errors.Is(err, ErrUnenforceable) {
		t.Errorf("guestPath ≠ hostPath: %v; want ErrUnenforceable", err)
	}
	s = seatbeltTestSpec(ModeChat)
	s.GuestWorkdir = "/Users/me/elsewhere"
	var se *SpecError
	if _, err := seatbeltSpec(s, nil, "/Users/me", "", seatbeltTag, eg); !errors.As(err, &se) || se.Field != "guestWorkdir" {
		t.Errorf("guestWorkdir outside the binds: %v; want a SpecError on guestWorkdir", err)
	}
	s = seatbeltTestSpec(ModeChat)
	if _, err := seatbeltSpec(s, nil, "", "", seatbeltTag, eg); !errors.Is(err, ErrUnenforceable) {
		t.Errorf("no home: %v; want ErrUnenforceable", err)
	}
	// Same spelling up to Clean is the same path.
	s = seatbeltTestSpec(ModeChat)
	s.BindMounts[0].GuestPath = "/Users/me/wt/c1/"
	if _, err := seatbeltSpec(s, nil, "/Users/me", "", seatbeltTag, eg); err != nil {
		t.Errorf("guestPath with a trailing slash: %v", err)
	}
}
