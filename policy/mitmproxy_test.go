package policy

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/srt-go/srt/settings"
)

// The MITM proxy's socket is read-denied inside the sandbox, its domains
// become the Parent's MITM route, and a socket in a write root (as
// spelled or through a link) or with filesystem.disabled is refused.
func TestMITMSocketRules(t *testing.T) {
	cwd, _ := filepath.EvalSymlinks(t.TempDir())
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	sock := filepath.Join(outside, "mitm.sock")
	os.WriteFile(sock, nil, 0o600)
	s := settings.Default()
	s.Filesystem.AllowWrite = []settings.PathEntry{{Path: "."}}
	s.Network.MITMProxy = &settings.MITMProxy{SocketPath: sock, Domains: []string{"*.example.com"}}
	p, err := Compile(s, Env{Cwd: cwd, Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if p.Readable(sock) {
		t.Fatalf("the MITM socket %s is readable inside the sandbox", sock)
	}
	if p.Network.Parent == nil || p.Network.Parent.String() != "mitm=unix:"+sock {
		t.Fatalf("Parent = %v", p.Network.Parent)
	}
	for _, path := range []string{filepath.Join(cwd, "mitm.sock"), filepath.Join(outside, "in", "mitm.sock")} {
		s.Network.MITMProxy.SocketPath = path
		if path != filepath.Join(cwd, "mitm.sock") {
			os.Symlink(cwd, filepath.Join(outside, "in")) // a link into the write root
		}
		if _, err := Compile(s, Env{Cwd: cwd, Home: t.TempDir()}); !errors.Is(err, ErrUnenforceable) {
			t.Errorf("socket %s in a write root: err = %v, want ErrUnenforceable", path, err)
		}
	}
	s.Network.MITMProxy.SocketPath = sock
	s.Filesystem.Disabled = true
	if _, err := Compile(s, Env{Cwd: cwd, Home: t.TempDir()}); !errors.Is(err, ErrUnenforceable) {
		t.Errorf("filesystem.disabled: err = %v, want ErrUnenforceable", err)
	}
}
