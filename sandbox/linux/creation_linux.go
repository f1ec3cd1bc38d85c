package linux

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"

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

// creationSupport asks the kernel once per process, when a sandbox first
// needs the answer: openat2, then the seccomp calls on a throwaway thread
// of srt's own (about a hundred microseconds; installing a filter is
// irreversible, and the thread, which ends with its goroutine, is the
// only one that gets it).
var creationSupport = sync.OnceValue(func() error {
	if err := probeOpenat2(); err != nil {
		return err
	}
	return probeSeccomp()
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

// probeSeccomp installs a filter that allows every call, with a
// notification listener, on a thread of its own (seccomp.ThreadListener),
// then asks for ADDFD with SECCOMP_ADDFD_FLAG_SEND on a notification that
// does not exist: a kernel that knows the flag looks the notification up
// and answers ENOENT; one that does not refuses the flags (EINVAL, also
// the answer of a kernel without the ADDFD ioctl at all).
func probeSeccomp() error {
	res := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with this goroutine, and the
		// filter and no_new_privs with it. No other thread inherits them
		// meanwhile: the Go runtime creates threads from its template
		// thread, never from a locked one (runtime.newm), and
		// no_new_privs on a thread srt forks from would strip a setuid
		// bubblewrap of its bit.
		runtime.LockOSThread()
		allow := []bpf.RawInstruction{{Op: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}
		l, err := seccomp.ThreadListener(allow)
		if err != nil {
			res <- &missingCapability{capListener, err}
			return
		}
		defer unix.Close(l)
		if _, err := seccomp.AddFDSend(l, 0, l, true); err != nil && !errors.Is(err, unix.ENOENT) {
			res <- &missingCapability{capAddFD, err}
			return
		}
		res <- nil
	}()
	return <-res
}

// CreationRulesSupported returns nil when this kernel can run the
// creation-time name rules, else why not, naming the missing capability.
// The first call asks the kernel; later calls return the same answer.
func CreationRulesSupported() error { return creationSupport() }

// CreationRules decides whether a sandbox for p enforces names at creation
// time (filesystem.enforceNamesAtCreation, sandbox/linux/supervisor), in the
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
