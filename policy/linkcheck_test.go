package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckLinksUntrusted: a link inside an untrusted tree is refused
// (also as a parent component), the same link is followed when no tree
// holds it, and CompileView applies the same rule to its binds through
// ViewRules.Untrusted.
func TestCheckLinksUntrusted(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	ws, secret := filepath.Join(base, "ws"), filepath.Join(base, "secret")
	os.MkdirAll(filepath.Join(secret, "inner"), 0o700)
	os.Mkdir(ws, 0o700)
	os.Symlink(secret, filepath.Join(ws, "sub"))
	for _, p := range []string{ws + "/sub", ws + "/sub/inner"} {
		if _, err := CheckLinks(p, []string{ws}); !errors.Is(err, ErrUnenforceable) || !strings.Contains(err.Error(), ws+"/sub is a symbolic link, and it lies inside") {
			t.Errorf("%s: %v; want it refused naming the link", p, err)
		}
		if res, err := CheckLinks(p, nil); err != nil || !strings.HasPrefix(res, secret) {
			t.Errorf("%s with no untrusted tree: %q, %v", p, res, err)
		}
	}
	_, err := CompileView(ViewRules{Binds: []ViewBind{{Host: ws + "/sub", Guest: "/b"}}, System: []string{}, Home: base, Untrusted: []string{ws}})
	if !errors.Is(err, ErrUnenforceable) {
		t.Fatalf("CompileView with the link's tree untrusted: %v", err)
	}
	if _, err := CompileView(ViewRules{Binds: []ViewBind{{Host: ws + "/sub", Guest: "/b"}}, System: []string{}, Home: base}); err != nil {
		t.Fatalf("CompileView without: %v", err)
	}
}
