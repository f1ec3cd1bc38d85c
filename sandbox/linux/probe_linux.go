package linux

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/srt-go/srt/internal/syspath"
)

// ErrNoBwrap is wrapped by FindBwrap's error when bubblewrap is missing.
var ErrNoBwrap = errors.New("bubblewrap is not installed")

// ErrNoUserNamespaces is wrapped when the kernel or a security module
// refuses the unprivileged user namespaces bubblewrap needs.
var ErrNoUserNamespaces = errors.New("user namespaces are not available")

// FindBwrap returns bubblewrap's absolute path: configured (settings
// bwrapPath, which must be absolute and executable; there is no fallback
// to PATH, as in the reference) or found in a system directory of PATH
// (syspath.LookPath: never one a sandboxed run could have written).
func FindBwrap(configured string) (string, error) {
	if configured != "" {
		if !filepath.IsAbs(configured) {
			return "", fmt.Errorf("bwrapPath %q must be an absolute path", configured)
		}
		if err := executable(configured); err != nil {
			return "", fmt.Errorf("bwrapPath %s: %w", configured, err)
		}
		return configured, nil
	}
	p, err := syspath.LookPath("bwrap")
	if err != nil {
		return "", fmt.Errorf("%w (%w); install the bubblewrap package (apt-get install bubblewrap, dnf install bubblewrap, or pacman -S bubblewrap), or give its absolute path as bwrapPath", ErrNoBwrap, err)
	}
	return p, nil
}

func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return errors.New("not an executable file")
	}
	return nil
}

// CheckUserNamespaces reads the kernel's settings that refuse user
// namespaces and returns an error naming the cause and the fix, or nil when
// nothing known refuses them. It costs a few file reads, no process.
func CheckUserNamespaces() error {
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	if read("/proc/sys/user/max_user_namespaces") == "0" {
		return fmt.Errorf("%w: the kernel allows none (user.max_user_namespaces = 0); as root run: sysctl -w user.max_user_namespaces=15000", ErrNoUserNamespaces)
	}
	if os.Geteuid() == 0 {
		return nil
	}
	if read("/proc/sys/kernel/unprivileged_userns_clone") == "0" {
		return fmt.Errorf("%w: the kernel refuses them to unprivileged users (kernel.unprivileged_userns_clone = 0); as root run: sysctl -w kernel.unprivileged_userns_clone=1", ErrNoUserNamespaces)
	}
	if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1" && !bwrapHasAppArmorProfile() {
		return fmt.Errorf("%w: AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1, as on Ubuntu 23.10 and later); install an AppArmor profile that grants bwrap \"userns\" (e.g. /etc/apparmor.d/bwrap), or as root run: sysctl -w kernel.apparmor_restrict_unprivileged_userns=0", ErrNoUserNamespaces)
	}
	return nil
}

func bwrapHasAppArmorProfile() bool {
	for _, p := range []string{"/etc/apparmor.d/bwrap", "/etc/apparmor.d/bwrap-userns-restrict", "/etc/apparmor.d/usr.bin.bwrap"} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// Diagnose explains a bubblewrap set-up failure after the fact: it names a
// known cause (user namespaces refused) when it finds one, else returns "".
func Diagnose() string {
	if err := CheckUserNamespaces(); err != nil {
		return err.Error()
	}
	return ""
}
