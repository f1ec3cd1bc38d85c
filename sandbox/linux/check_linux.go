package linux

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/srt-go/srt/seccomp"
	"golang.org/x/sys/unix"
)

// Guarantee is one isolation property and whether this host enforces it.
type Guarantee struct {
	// Name says what is guaranteed, e.g. "network isolation".
	Name string
	// OK reports whether srt enforces it on this host.
	OK bool
	// Detail says how, or why not and what to change.
	Detail string
}

// Check reports, guarantee by guarantee, what srt can enforce on this host.
// It runs bubblewrap once (with a 10 s limit) to prove the namespaces work,
// rather than trusting sysctls alone.
func Check(ctx context.Context, bwrapPath string) []Guarantee {
	var out []Guarantee
	add := func(name string, ok bool, format string, a ...any) {
		out = append(out, Guarantee{name, ok, fmt.Sprintf(format, a...)})
	}
	bwrap, err := FindBwrap(bwrapPath)
	if err != nil {
		add("bubblewrap", false, "%v", err)
	} else {
		v, _ := exec.Command(bwrap, "--version").Output()
		add("bubblewrap", true, "%s (%s)", bwrap, strings.TrimSpace(string(v)))
	}
	nsErr := CheckUserNamespaces()
	if nsErr == nil && bwrap != "" {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		b, err := exec.CommandContext(ctx, bwrap, "--unshare-user", "--unshare-pid", "--unshare-net",
			"--unshare-ipc", "--unshare-uts", "--die-with-parent", "--cap-drop", "ALL", "--disable-userns",
			"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "true").CombinedOutput()
		if err != nil {
			nsErr = fmt.Errorf("bubblewrap could not create the namespaces: %v: %s", err, strings.TrimSpace(string(b)))
		}
	}
	nsOK := nsErr == nil && bwrap != ""
	nsDetail := func(how string) string {
		if nsOK {
			return how
		}
		if nsErr != nil {
			return nsErr.Error()
		}
		return "bubblewrap is missing"
	}
	add("user namespace, capabilities dropped", nsOK, "%s", nsDetail("bwrap --unshare-user --cap-drop ALL --disable-userns"))
	add("filesystem policy", nsOK, "%s", nsDetail("mount namespace: read-only root, bind mounts for write roots, tmpfs and /dev/null over denied paths"))
	add("network isolation", nsOK, "%s", nsDetail("network namespace with only lo; egress only through srt's filtering proxies"))
	add("PID, IPC, UTS, cgroup namespaces", nsOK, "%s", nsDetail("the command sees only its own processes and srt's PID 1"))

	if _, err := seccomp.Build(seccomp.Options{}); err != nil {
		add("seccomp filter", false, "%v", err)
	} else {
		add("seccomp filter", true, "%s/%s: no new unix sockets, io_uring, namespace and mount calls, keyring, bpf, perf, userfaultfd, TIOCSTI/TIOCLINUX; foreign ABIs killed", runtime.GOOS, runtime.GOARCH)
	}
	add("no_new_privs", true, "set before the command starts: setuid binaries gain nothing")
	if err := CreationRulesSupported(); err != nil {
		add("creation-time name rules", false, "%v: names created during the run are checked only where placeholders stand; settings with denyWrite globs are refused", err)
	} else {
		add("creation-time name rules", true, "srt performs every create, rename, link and write open (seccomp user notification): denyWrite globs and mandatory names refused at any depth")
		// Which path a run takes: the in-kernel check where the BPF
		// LSM program loads here (kernelnames_linux.go).
		if path, err := KernelNamesPath(); err != nil {
			add("creation-time rules path", true, "%s: the in-kernel check (BPF LSM) is not available: %v", path, err)
		} else {
			add("creation-time rules path", true, "%s: the kernel checks names as they are made; srt performs only renames (a policy the program cannot express, nested user namespaces or a confined view use the supervisor)", path)
		}
	}
	tiocsti, _ := os.ReadFile("/proc/sys/dev/tty/legacy_tiocsti")
	add("terminal injection", true, "the command gets its own pseudo-terminal; TIOCSTI/TIOCLINUX refused by seccomp (kernel dev.tty.legacy_tiocsti=%s)", strings.TrimSpace(string(tiocsti)))
	// Landlock is the backstop of the creation-time rules (PID 1's
	// inside/backstop_linux.go), not a rule of its own: without it the
	// sandbox is as before, so its absence never fails the check.
	if abi, err := landlockABI(); err != nil {
		add("Landlock", false, "not available: %v (srt enforces with namespaces; no backstop for the creation-time name rules: a creating call the seccomp filter missed would not be refused)", err)
	} else {
		add("Landlock", true, "ABI %d: the backstop of the creation-time name rules (with them on, the command holds no right to make a name or move one across directories: a creating call the seccomp filter missed fails with EACCES)", abi)
	}
	return out
}

// landlockABI asks the kernel for its Landlock ABI version
// (landlock_create_ruleset with LANDLOCK_CREATE_RULESET_VERSION).
func landlockABI() (int, error) {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0, e
	}
	return int(v), nil
}
