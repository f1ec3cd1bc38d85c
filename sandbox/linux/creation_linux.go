package linux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/seccomp"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// What the creation-time name rules need of the kernel, each asked of the
// kernel itself rather than read off its version (the Linux release that
// brought it is for the message only): openat2, with which srt resolves
// every name; a seccomp notification listener installed with TSYNC; and
// SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SEND, which makes the
// descriptor srt opened the notified call's return value in one step.
const (
	capOpenat2  = "openat2 (Linux 5.6)"
	capListener = "a seccomp notification listener installed with TSYNC (SECCOMP_FILTER_FLAG_NEW_LISTENER|TSYNC_ESRCH, Linux 5.7)"
	capAddFD    = "SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SEND (Linux 5.14)"
)

// missingCapability is why this kernel cannot run the creation-time
// rules: the capability they need and how the kernel refused it.
type missingCapability struct {
	what string
	err  error
}

func (e *missingCapability) Error() string {
	return fmt.Sprintf("this kernel lacks %s: %v", e.what, e.err)
}
func (e *missingCapability) Unwrap() error { return e.err }

// creationProbeArg makes srt's binary run creationProbeChild: the
// seccomp half of the probe installs a filter, which is irreversible, so
// it runs in a child of its own and never in srt's process.
const creationProbeArg = "--srt-probe-creation"

// creationSupport asks the kernel once per process, when a sandbox first
// needs the answer: openat2 here, the seccomp calls in a child (about the
// cost of one exec of srt's binary).
var creationSupport = sync.OnceValue(func() error {
	if err := probeOpenat2(); err != nil {
		return err
	}
	if err := checkDispatched(); err != nil {
		return fmt.Errorf("cannot ask the kernel for %s: %w", capAddFD, err)
	}
	return probeSeccomp("/proc/self/exe")
})

// probeOpenat2 opens "/" with openat2; ENOSYS (or a container's seccomp
// refusing it) means the supervisor could not resolve names.
func probeOpenat2() error {
	fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC})
	if err != nil {
		return &missingCapability{capOpenat2, err}
	}
	unix.Close(fd)
	return nil
}

// probeSeccomp runs exe (srt's binary) in creationProbeArg's role and
// reads its verdict.
func probeSeccomp(exe string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, exe, creationProbeArg).Output()
	if err != nil {
		return fmt.Errorf("asking the kernel for %s: %w", capAddFD, err)
	}
	return creationProbeVerdict(strings.TrimSpace(string(out)))
}

// creationProbeVerdict reads the child's line: "ok", or the step that
// failed ("listener" or "addfd") and the errno, as a number.
func creationProbeVerdict(line string) error {
	step, num, _ := strings.Cut(line, " ")
	if step == "ok" && num == "" {
		return nil
	}
	n, err := strconv.Atoi(num)
	if err != nil {
		return fmt.Errorf("asking the kernel for %s: unexpected answer %q", capAddFD, line)
	}
	var cerr error = unix.Errno(n)
	if n < 0 {
		cerr = errors.New("not installed")
	}
	switch step {
	case "listener":
		return &missingCapability{capListener, cerr}
	case "addfd":
		return &missingCapability{capAddFD, cerr}
	}
	return fmt.Errorf("asking the kernel for %s: unexpected answer %q", capAddFD, line)
}

// runCreationProbe is the child's main function; it prints its verdict
// and exits.
func runCreationProbe() {
	fmt.Println(creationProbeChild())
	os.Exit(0)
}

// creationProbeChild installs a filter that allows every call, with a
// notification listener (TSYNC|TSYNC_ESRCH|NEW_LISTENER, as PID 1 does),
// then asks for ADDFD with SECCOMP_ADDFD_FLAG_SEND on a notification that
// does not exist: a kernel that knows the flag looks the notification up
// and answers ENOENT; one that does not refuses the flags (EINVAL, also
// the answer of a kernel without the ADDFD ioctl at all).
func creationProbeChild() string {
	allow := []bpf.RawInstruction{{Op: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}
	l, err := seccomp.InstallListener(allow)
	if err != nil {
		return "listener " + probeErrno(err)
	}
	if _, err := seccomp.AddFDSend(l, 0, l, true); err != nil && !errors.Is(err, unix.ENOENT) {
		return "addfd " + probeErrno(err)
	}
	return "ok"
}

// probeErrno is err's errno as a number, -1 when it wraps none.
func probeErrno(err error) string {
	var e unix.Errno
	if errors.As(err, &e) {
		return strconv.Itoa(int(e))
	}
	return "-1"
}

// CreationRulesSupported returns nil when this kernel can run the
// creation-time name rules, else why not, naming the missing capability.
// The first call asks the kernel (openat2, and the seccomp calls in a
// child process of srt's binary, which needs DispatchRole); later calls
// return the same answer.
func CreationRulesSupported() error { return creationSupport() }

// CreationRules decides whether a sandbox for p enforces names at creation
// time (filesystem.enforceNamesAtCreation, create_linux.go), in the
// weaker Landlock sandbox when weak. Absent, the key means "on where the
// host can": where it cannot, the run goes on with the mounts alone (the
// names that exist, and placeholders for the missing ones at the top of
// each write root) and notice says so, unless the settings hold a
// denyWrite glob, which only this can enforce: then, as when the key is
// true, err refuses the run. Never a silently weaker policy.
func CreationRules(p *policy.Policy, weak bool) (on bool, notice string, err error) {
	if p == nil || p.FilesystemDisabled {
		return false, "", nil
	}
	want, explicit := p.NamesAtCreation, p.NamesAtCreationSet
	if !want {
		if len(p.DenyWriteGlobs) > 0 {
			return false, "filesystem.enforceNamesAtCreation is false: files created during the run that match filesystem.denyWrite globs are not refused", nil
		}
		return false, "", nil
	}
	why := CreationRulesSupported()
	if weak {
		why = fmt.Errorf("the weaker Landlock sandbox (enableWeakerNestedSandbox) has no seccomp supervisor to perform them")
	}
	if why == nil {
		return true, "", nil
	}
	if explicit || len(p.DenyWriteGlobs) > 0 {
		var globs []string
		for _, g := range p.DenyWriteGlobs {
			globs = append(globs, strconv.Quote(g.Pattern))
		}
		what := "filesystem.enforceNamesAtCreation is true"
		if !explicit {
			what = "filesystem.denyWrite holds globs (" + strings.Join(globs, ", ") + ") that only creation-time name rules enforce on new files"
		}
		return false, "", fmt.Errorf("%s, but this host cannot enforce names at creation: %v; refusing to run with a weaker policy (remove the globs, or set filesystem.enforceNamesAtCreation to false to accept that new files matching them are not refused)", what, why)
	}
	return false, "names created during the run are not checked against the mandatory write-denies below the top of each write root (" + why.Error() + "); set filesystem.enforceNamesAtCreation to false to silence this", nil
}
