package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMicroVMCacheNativeWriteDenied: a native run with the home directory
// writable cannot write the microvm backend's cache (the kernel and the
// initramfs whose /init enforces every later VM's rules) where the backend
// would look for it: under $XDG_CACHE_HOME (an adversarial review
// rewrote ~/xc/srt-microvm's initramfs with XDG_CACHE_HOME=~/xc), where
// SRT_MICROVM_CACHE names, and, as root, /var/cache/srt-microvm with
// /var/cache writable. Both ways: present (it keeps its content) and
// missing (it does not come into being).
func TestMicroVMCacheNativeWriteDenied(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		for _, present := range []bool{false, true} {
			name := "missing"
			if present {
				name = "present"
			}
			t.Run(name, func(t *testing.T) {
				w := u.workDir(t)
				home := filepath.Join(w, "home")
				proj := filepath.Join(home, "proj")
				u.mkdir(t, proj)
				xc := filepath.Join(home, "xc")
				u.mkdir(t, xc)
				other := filepath.Join(home, "elsewhere")
				u.mkdir(t, other)
				caches := map[string]string{ // cache dir -> its environment
					filepath.Join(xc, "srt-microvm"): "XDG_CACHE_HOME=" + xc,
					filepath.Join(other, "vmc"):      "SRT_MICROVM_CACHE=" + filepath.Join(other, "vmc"),
				}
				settings := `{"filesystem":{"allowWrite":[".","~"]}}`
				if u.uid == 0 && present {
					// Root's own cache, which the other e2e tests boot
					// from: only the present case, so a failure leaves
					// at most a probe file (removed below).
					caches["/var/cache/srt-microvm"] = "SRT_MICROVM_CACHE="
					settings = `{"filesystem":{"allowWrite":[".","~","/var/cache"]}}`
				}
				for dir, env := range caches {
					probe := filepath.Join(dir, "srt-e2e-probe")
					if present {
						if dir != "/var/cache/srt-microvm" {
							u.write(t, probe, "original\n")
						}
					}
					t.Cleanup(func() {
						if dir == "/var/cache/srt-microvm" {
							os.Remove(filepath.Join(dir, "planted"))
							os.Remove(probe)
						}
					})
					script := "mkdir -p '" + dir + "' 2>/dev/null; (echo planted >> '" + probe + "') 2>/dev/null && echo WROTE-PROBE; " +
						"(echo x > '" + filepath.Join(dir, "planted") + "') 2>/dev/null && echo WROTE-NEW; echo ok > ordinary.txt && echo ordinary-ok"
					envs := []string{"HOME=" + home, env}
					out, errOut, code := srtRun{u: u, dir: proj, settings: settings, env: envs, args: []string{"sh", "-c", script}}.run(t)
					if code != 0 || !strings.Contains(out, "ordinary-ok") {
						t.Fatalf("%s: exit %d, stdout %q, stderr %s", env, code, out, errOut)
					}
					if strings.Contains(out, "WROTE") {
						t.Errorf("%s: the microvm cache %s was written from a native sandbox:\n%s", env, dir, out)
					}
					b, err := os.ReadFile(probe)
					switch {
					case present && dir != "/var/cache/srt-microvm" && string(b) != "original\n":
						t.Errorf("%s changed on the host: %q", probe, b)
					case !present && err == nil:
						t.Errorf("%s was created on the host: %q", probe, b)
					}
					if _, err := os.Stat(filepath.Join(dir, "planted")); err == nil {
						t.Errorf("%s was created on the host", filepath.Join(dir, "planted"))
					}
				}
			})
		}
	})
}
