package inside

// This file runs in the sandbox's PID 1 and in the Landlock stage: their
// half of the seccomp filter. Each installs the filter on itself and
// hands the listener to srt, whose supervisor answers it
// (sandbox/linux/supervisor; the exchange is drawn in sandbox/linux/wire).
//
// There is one filter, and PID 1 installs it on itself with TSYNC (the
// command and everything it starts inherit it); with Options.Notify its
// refusals are SECCOMP_RET_USER_NOTIF instead of an errno. A second,
// notify-only filter stacked on the deny-only one would never fire: ERRNO
// takes precedence over USER_NOTIF when filters disagree. PID 1 cannot
// deadlock on its own filter because it does not answer the
// notifications: srt does, from outside the sandbox. PID 1 gets the
// listener from seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER), sends it to
// srt over an inherited SOCK_SEQPACKET socket (SCM_RIGHTS, like the proxy
// listeners) and closes its own copy before starting the command; a
// notified call made in between simply waits for srt. PID 1 makes no
// refused call after the filter is on (it looks the command up, forks,
// execs and reaps); if it ever did, srt would answer it like any other,
// and does not record calls from the sandbox's PID 1. If the kernel
// cannot combine TSYNC with a listener (before Linux 5.7), PID 1 installs
// the deny-only filter and srt records no seccomp or filesystem
// violations; enforcement is unchanged.

import (
	"fmt"

	"github.com/srt-go/srt/sandbox/linux/wire"
	"github.com/srt-go/srt/seccomp"
	"golang.org/x/sys/unix"
)

// installFilter is PID 1's side: it installs the command's seccomp filters
// on every thread of PID 1 and, with spec.Seccomp.Notify, sends the
// listener to srt over spec.NotifyFD. Nothing is sent (srt then records
// nothing from the kernel) when the kernel cannot give a listener.
func installFilter(spec *wire.InitSpec) error {
	installed, err := installFSFilter(spec.Seccomp, spec.NotifyFD, spec.RequireListener)
	if err != nil {
		return err
	}
	// The Landlock backstop of the creation-time rules, once it is known
	// that srt's supervisor performs the creations (backstop_linux.go).
	if err := applyBackstop(installed); err != nil {
		return fmt.Errorf("the Landlock backstop of the creation-time rules: %w", err)
	}
	// The in-kernel check (sandbox/linux/namelsm): srt registers this
	// mount namespace with its BPF program before anything of the
	// command's runs. The filter is on already: it refuses leaving the
	// namespace.
	if spec.KernelNamesFD > 2 {
		if !installed.KernelNames {
			return fmt.Errorf("the in-kernel name rules need the filter that leaves creations to them")
		}
		err := wire.SendNamespace(spec.KernelNamesFD, spec.KernelNamesPrivate)
		unix.Close(spec.KernelNamesFD)
		if err != nil {
			return fmt.Errorf("the in-kernel name rules: %w", err)
		}
	} else if installed.KernelNames {
		return fmt.Errorf("the filter leaves creations to the in-kernel name rules, which srt did not set up")
	}
	// Stacked on it: no set-id bits (seccomp.BuildSetID), built from the
	// options of the filter actually installed: with a listener, the mode
	// refusals are that filter's, reported by srt; without one, this
	// filter's.
	prog, err := seccomp.BuildSetID(installed)
	if err != nil {
		return err
	}
	return seccomp.Install(prog)
}

// installFSFilter installs the main filter built from opts, with its
// listener, sent to srt over notifyFD, when opts.Notify is set.
// requireListener makes a kernel without a listener an error
// (wire.InitSpec.RequireListener) instead of the deny-only filter. It
// returns the options of the filter it installed (Notify cleared when
// the kernel gave no listener), for seccomp.BuildSetID.
func installFSFilter(opts seccomp.Options, notifyFD int, requireListener bool) (seccomp.Options, error) {
	if !opts.Notify {
		prog, err := seccomp.Build(opts)
		if err != nil {
			return opts, err
		}
		return opts, seccomp.Install(prog)
	}
	defer unix.Close(notifyFD)
	prog, err := seccomp.Build(opts)
	if err != nil {
		return opts, err
	}
	fd, err := seccomp.InstallListener(prog)
	if err != nil && requireListener {
		return opts, fmt.Errorf("filesystem.enforceNamesAtCreation needs a seccomp listener with TSYNC (Linux 5.7+): %w", err)
	}
	if err != nil {
		// No listener on this kernel: the deny-only filter, same rules.
		plain := opts
		plain.Notify, plain.ObserveWrites, plain.ObserveReads, plain.EmulateCreates = false, false, false, false
		if prog, err = seccomp.Build(plain); err == nil {
			err = seccomp.Install(prog)
		}
		if err == nil {
			wire.SendNoListener(notifyFD)
		}
		return plain, err
	}
	// Until srt holds the listener, a notified call waits; after it does,
	// PID 1 must not keep a copy, or srt's death would leave callers
	// waiting instead of failing.
	err = wire.SendListener(notifyFD, fd)
	unix.Close(fd)
	if err != nil {
		return opts, fmt.Errorf("sending the seccomp listener to srt: %w", err)
	}
	return opts, nil
}
