// Package vmcache decides where the microvm backend caches the guest
// kernel and the initramfs every VM boots from. It is the one home of
// that decision: microvm.DefaultCacheDir returns it, and the policy's
// host-trusted table write-protects the same directory in every native
// sandbox whose write roots reach it (a run that could write there would
// choose what the next VM's /init enforces). It imports nothing of srt's,
// so both can import it.
package vmcache

import (
	"os"
	"path/filepath"
)

// Dir is SRT_MICROVM_CACHE when set; else /var/cache/srt-microvm for
// root; else $XDG_CACHE_HOME/srt-microvm (~/.cache/srt-microvm,
// os.UserCacheDir); else, without a usable home, os.TempDir()/srt-microvm
// (whose owner microvm.Prepare checks).
func Dir() string {
	if d := os.Getenv("SRT_MICROVM_CACHE"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/var/cache/srt-microvm"
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "srt-microvm")
	}
	return filepath.Join(os.TempDir(), "srt-microvm")
}
