package seccomp

import (
	"fmt"
	"runtime"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Install sets no_new_privs and loads prog into every thread of the
// calling process. It is irreversible: the caller is expected to execve
// the command right after, and the filter and no_new_privs survive the
// exec. Call it from a process that has nothing left to do but exec
// (the in-sandbox helper), never from a long-lived one such as a test.
//
// no_new_privs is required for an unprivileged process to load a filter
// (seccomp(2)), and keeps setuid binaries and file capabilities from
// raising privileges past the filter. SECCOMP_FILTER_FLAG_TSYNC applies
// the filter, and no_new_privs with it, to all of the Go runtime's
// threads at once; without it only the calling thread would be filtered,
// and Go may exec from any thread.
//
// The error wraps the failing call's errno (errors.Is(err, unix.EINVAL)).
func Install(prog []bpf.RawInstruction) error {
	filter, err := sockFilter(prog)
	if err != nil {
		return err
	}

	// no_new_privs is per thread; TSYNC copies the caller's to the other
	// threads (kernel/seccomp.c, seccomp_sync_threads). Both calls must
	// therefore run on the same thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	return setModeFilter(filter)
}

// InstallListener is Install for a filter built with Options.Notify: it
// loads prog into every thread of the calling process and returns the
// notification listener, a descriptor (close-on-exec) that whoever
// answers the notifications must hold, and the caller must close once it
// has handed it on. Until then, a notified call waits.
//
// It needs Linux 5.7: TSYNC and NEW_LISTENER both claim the return value,
// and only SECCOMP_FILTER_FLAG_TSYNC_ESRCH lets them be combined. On an
// older kernel it returns an error wrapping EINVAL and installs nothing;
// the caller then installs the deny-only filter with Install.
func InstallListener(prog []bpf.RawInstruction) (int, error) {
	filter, err := sockFilter(prog)
	if err != nil {
		return -1, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return -1, fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	return setModeFilterListener(filter)
}

// ThreadListener installs prog on the calling OS thread only, with
// no_new_privs set on that thread alone, and returns the notification
// listener: for asking the kernel what it supports without filtering the
// process. The flags are SECCOMP_FILTER_FLAG_NEW_LISTENER and
// SECCOMP_FILTER_FLAG_TSYNC_ESRCH (Linux 5.7; it means nothing without
// TSYNC but is refused by a kernel that does not know it), so success
// says the kernel can give InstallListener's listener.
//
// The thread is spoiled for good: the caller must have locked its
// goroutine to it (runtime.LockOSThread) and must let the goroutine end
// without unlocking it, so that the Go runtime ends the thread, filter and
// no_new_privs with it.
func ThreadListener(prog []bpf.RawInstruction) (int, error) {
	filter, err := sockFilter(prog)
	if err != nil {
		return -1, err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return -1, fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	return setThreadFilterListener(filter)
}

// InstallThread is Install for the calling OS thread alone: no_new_privs
// and the filter are set on that thread, without TSYNC, and whatever it
// starts inherits them, while the process's other threads stay as they
// were (the microvm guest's PID 1 starts each workload from a thread of
// its own; microvm/guest, observe_linux.go). The thread is spoiled for
// good, as with ThreadListener: the caller must have locked its goroutine
// to it and must let the goroutine end without unlocking it.
func InstallThread(prog []bpf.RawInstruction) error {
	filter, err := sockFilter(prog)
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	return setThreadFilter(filter)
}

// sockFilter converts prog to the kernel's struct sock_filter, refusing
// an empty program or one longer than the kernel takes.
func sockFilter(prog []bpf.RawInstruction) ([]unix.SockFilter, error) {
	if len(prog) == 0 || len(prog) > maxInstructions {
		return nil, fmt.Errorf("seccomp filter has %d instructions, want 1 to %d", len(prog), maxInstructions)
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, ins := range prog {
		filter[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
	}
	return filter, nil
}
