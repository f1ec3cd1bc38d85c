package darwin

import (
	"testing"

	"github.com/srt-go/srt/sandbox/darwin/sbpl"
)

func agentSpec(mode string) Spec {
	return Spec{
		BindMounts: []BindMount{
			{HostPath: "/Users/me/wt/c1", GuestPath: "/Users/me/wt/c1"},
			{HostPath: "/Users/me/docs", GuestPath: "/Users/me/docs", ReadOnly: true},
		},
		Mode:            mode,
		ProtectedPaths:  []string{"/Users/me/wt/c1/orig", "/Users/me/src/repo"},
		RunnerStateDirs: []string{"/Users/me/.cc/state"},
		ExecGrantRoots:  []string{"/Users/me/wt/c1/node_modules/.bin"},
		Egress:          Egress{HTTPProxyPort: 41001, SOCKSProxyPort: 41002},
		Home:            "/Users/me",
		TmpDir:          "/var/folders/xy/T/s1",
		Tag:             goldenTag,
	}
}

func load(t *testing.T, gen func() (string, error)) *sbpl.Profile {
	t.Helper()
	src, err := gen()
	if err != nil {
		t.Fatal(err)
	}
	p, err := sbpl.Load(src)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	return p
}

func TestAgentProfile(t *testing.T) {
	p := load(t, func() (string, error) { return AgentProfile(agentSpec("chat")) })
	for _, c := range []struct {
		name string
		req  sbpl.Request
		want bool
	}{
		{"read-ssh", sbpl.Request{Op: "file-read-data", Path: "/Users/me/.ssh/id_rsa"}, false},
		{"read-keychain", sbpl.Request{Op: "file-read-data", Path: "/Users/me/Library/Keychains/login.keychain-db"}, false},
		{"read-gh", sbpl.Request{Op: "file-read-data", Path: "/Users/me/.config/gh/hosts.yml"}, false},
		{"read-ordinary", sbpl.Request{Op: "file-read-data", Path: "/Users/me/notes.txt"}, true},
		{"write-worktree", sbpl.Request{Op: "file-write-create", Path: "/Users/me/wt/c1/x.go"}, true},
		{"write-read-only-mount", sbpl.Request{Op: "file-write-create", Path: "/Users/me/docs/x"}, false},
		{"write-home", sbpl.Request{Op: "file-write-create", Path: "/Users/me/x"}, false},
		{"write-state", sbpl.Request{Op: "file-write-create", Path: "/Users/me/.cc/state/s.json"}, true},
		{"write-tmp-private", sbpl.Request{Op: "file-write-create", Path: "/private/var/folders/xy/T/s1/a"}, true},
		{"write-protected-inside-root", sbpl.Request{Op: "file-write-data", Path: "/Users/me/wt/c1/orig/main.go"}, false},
		{"write-protected", sbpl.Request{Op: "file-write-data", Path: "/Users/me/src/repo/main.go"}, false},
		{"write-bashrc-in-root", sbpl.Request{Op: "file-write-create", Path: "/Users/me/wt/c1/a/b/c/d/e/.bashrc"}, false},
		{"write-hooks-in-root", sbpl.Request{Op: "file-write-create", Path: "/Users/me/wt/c1/.git/hooks/pre-push"}, false},
		{"write-ssh-in-state", sbpl.Request{Op: "file-write-create", Path: "/Users/me/.ssh/authorized_keys"}, false},
		{"unlink-protected-parent", sbpl.Request{Op: "file-write-unlink", Path: "/Users/me/wt/c1"}, false},
		{"unlink-git", sbpl.Request{Op: "file-write-unlink", Path: "/Users/me/wt/c1/.git"}, false},
		{"exec-system", sbpl.Request{Op: "process-exec", Path: "/bin/ls"}, true},
		{"exec-osascript", sbpl.Request{Op: "process-exec", Path: "/usr/bin/osascript"}, false},
		{"exec-launchctl", sbpl.Request{Op: "process-exec", Path: "/bin/launchctl"}, false},
		{"exec-from-worktree", sbpl.Request{Op: "process-exec", Path: "/Users/me/wt/c1/evil"}, false},
		{"exec-from-tmp", sbpl.Request{Op: "process-exec", Path: "/private/var/folders/xy/T/s1/evil"}, false},
		{"exec-grant-root", sbpl.Request{Op: "process-exec", Path: "/Users/me/wt/c1/node_modules/.bin/tsc"}, true},
		{"net-http-proxy", sbpl.Request{Op: "network-outbound", Remote: "localhost:41001"}, true},
		{"net-socks-proxy", sbpl.Request{Op: "network-outbound", Remote: "localhost:41002"}, true},
		{"net-loopback-other", sbpl.Request{Op: "network-outbound", Remote: "localhost:5432"}, false},
		{"net-direct", sbpl.Request{Op: "network-outbound", Remote: "93.184.216.34:443"}, false},
		{"net-dns", sbpl.Request{Op: "network-outbound", Unix: true, Path: "/private/var/run/mDNSResponder"}, true},
		{"net-unix-other", sbpl.Request{Op: "network-outbound", Unix: true, Path: "/var/run/docker.sock"}, false},
		{"net-bind", sbpl.Request{Op: "network-bind", Local: "localhost:8080"}, false},
		{"mach-default", sbpl.Request{Op: "mach-lookup", Name: "com.apple.xpc.anything"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := p.Decide(c.req).Allow; got != c.want {
				t.Errorf("%+v: allow=%v, want %v", c.req, got, c.want)
			}
		})
	}
}

func TestAgentModes(t *testing.T) {
	for _, mode := range []string{"review", "plan", "orchestrate"} {
		p := load(t, func() (string, error) { return AgentProfile(agentSpec(mode)) })
		if p.Allowed("file-write-create", "/Users/me/wt/c1/x") {
			t.Errorf("%s: bind mount writable", mode)
		}
		if !p.Allowed("file-write-create", "/Users/me/.cc/state/x") {
			t.Errorf("%s: runner state dir not writable", mode)
		}
	}
	if _, err := AgentProfile(agentSpec("yolo")); err == nil {
		t.Error("unknown mode accepted")
	}
	s := agentSpec("chat")
	s.ProtectedPaths = []string{"relative"}
	if _, err := AgentProfile(s); err == nil {
		t.Error("relative protected path accepted")
	}
}

func TestTerminalProfile(t *testing.T) {
	p := load(t, func() (string, error) {
		return TerminalProfile(Terminal{Home: "/Users/me", Workdir: "/Volumes/w/s1", Tag: goldenTag})
	})
	for _, c := range []struct {
		op, path string
		want     bool
	}{
		{"file-read-data", "/Users/me/.aws/credentials", false},
		{"file-read-data", "/Users/me/.ssh/id_rsa", false},
		{"file-read-data", "/Users/me/.bashrc", true},
		{"file-write-data", "/Users/me/.bashrc", true},
		{"file-write-create", "/Volumes/w/s1/x", true},
		{"file-write-create", "/etc/x", false},
		{"file-write-create", "/Users/me/.ssh/authorized_keys", false},
		{"file-write-unlink", "/Users/me/.ssh", false},
		{"file-write-unlink", "/Users/me", false},
	} {
		if got := p.Allowed(c.op, c.path); got != c.want {
			t.Errorf("(%s %s): allowed=%v, want %v", c.op, c.path, got, c.want)
		}
	}
	if !p.Decide(sbpl.Request{Op: "network-outbound", Remote: "93.184.216.34:443"}).Allow {
		t.Error("terminal network is not open")
	}
}
