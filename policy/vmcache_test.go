package policy

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/srt-go/srt/settings"
)

// TestMicroVMCacheWriteDenied: a native run whose write roots reach the
// microvm backend's cache cannot write it, wherever the backend would
// look for it (internal/vmcache.Dir): under $XDG_CACHE_HOME, where
// SRT_MICROVM_CACHE names, and root's /var/cache/srt-microvm; missing
// ones cannot be created either (an adversarial review rewrote
// $XDG_CACHE_HOME/srt-microvm's initramfs from a native run).
func TestMicroVMCacheWriteDenied(t *testing.T) {
	home, _ := filepath.EvalSymlinks(t.TempDir())
	compile := func(t *testing.T, allow ...string) *Policy {
		t.Helper()
		s := settings.Default()
		for _, a := range allow {
			s.Filesystem.AllowWrite = append(s.Filesystem.AllowWrite, settings.PathEntry{Path: a})
		}
		p, err := Compile(s, Env{Cwd: home, Home: home})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	denied := func(t *testing.T, p *Policy, dir string) {
		t.Helper()
		for _, q := range []string{dir, filepath.Join(dir, "initrd-x.cpio")} {
			if p.Writable(q) {
				t.Errorf("%s is writable", q)
			}
		}
		if !p.Writable(filepath.Join(filepath.Dir(dir), "other")) {
			t.Errorf("%s is not writable: the test proves nothing", filepath.Join(filepath.Dir(dir), "other"))
		}
	}
	for _, present := range []bool{false, true} {
		name := "missing"
		if present {
			name = "present"
		}
		t.Run("XDG_CACHE_HOME/"+name, func(t *testing.T) {
			xc := filepath.Join(home, "xc-"+name)
			os.MkdirAll(xc, 0o755)
			if present {
				os.MkdirAll(filepath.Join(xc, "srt-microvm"), 0o755)
			}
			t.Setenv("XDG_CACHE_HOME", xc)
			t.Setenv("SRT_MICROVM_CACHE", "")
			denied(t, compile(t, "~"), filepath.Join(xc, "srt-microvm"))
		})
		t.Run("SRT_MICROVM_CACHE/"+name, func(t *testing.T) {
			vc := filepath.Join(home, "elsewhere-"+name, "vm-cache")
			os.MkdirAll(filepath.Dir(vc), 0o755)
			if present {
				os.MkdirAll(vc, 0o755)
			}
			t.Setenv("SRT_MICROVM_CACHE", vc)
			denied(t, compile(t, "~"), vc)
		})
	}
	t.Run("root", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("root's cache: /var/cache/srt-microvm")
		}
		t.Setenv("SRT_MICROVM_CACHE", "")
		denied(t, compile(t, "/var/cache"), "/var/cache/srt-microvm")
	})
}
