package inside

// This file runs in the sandbox's PID 1 and in the Landlock stage: the
// Landlock backstop of the creation-time name rules
// (seccomp.Options.EmulateCreates).

import (
	"fmt"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"github.com/srt-go/srt/seccomp"
	"golang.org/x/sys/unix"
)

// backstopAccess returns the Landlock rights the backstop takes away from
// the sandbox under the options of the filter installed: every right to
// make a name (LANDLOCK_ACCESS_FS_MAKE_*) and REFER (a link or rename
// into another directory), granted nowhere. With the creation-time rules
// srt's supervisor performs every call that makes a name, from outside
// the sandbox and its Landlock domain, so the command needs none of
// them; a creating call the filter does not notify (one missing from
// seccomp's table, a system call newer than it, io_uring's) then fails
// with EACCES instead of creating a name no rule looked at. MAKE_SOCK is
// left out where unix sockets are allowed (bind(2) of one is not
// notified then and makes its name itself); elsewhere an AF_UNIX bind is
// refused anyway. Empty when the rules are off: the command makes its
// own names then. With the in-kernel check (KernelNames) the command
// makes its own names under the BPF program, which is the rule; only
// MAKE_SOCK stays taken (bind(2) is still the supervisor's), and REFER
// is left (a link into another directory is the command's own call now;
// renames are still srt's, and the program refuses any made inside).
func backstopAccess(installed seccomp.Options) landlock.AccessFSSet {
	if !installed.EmulateCreates || !installed.Notify {
		return 0
	}
	if installed.KernelNames {
		if installed.AllowUnixSockets {
			return 0
		}
		return landlock.AccessFSSet(llsys.AccessFSMakeSock)
	}
	s := landlock.AccessFSSet(llsys.AccessFSMakeChar | llsys.AccessFSMakeDir | llsys.AccessFSMakeReg |
		llsys.AccessFSMakeFifo | llsys.AccessFSMakeBlock | llsys.AccessFSMakeSym | llsys.AccessFSRefer)
	if !installed.AllowUnixSockets {
		s |= landlock.AccessFSSet(llsys.AccessFSMakeSock)
	}
	return s
}

// applyBackstop restricts every thread of the calling process (PID 1 or
// the Landlock stage), and so the command and all it starts, with the backstop for installed (backstopAccess). It
// does nothing where Landlock is not available (the supervisor is the
// rule, this is defence in depth; `srt --check` says which) and drops
// REFER on ABI 1, which lacks it (there every rename or link into
// another directory fails anyway).
func applyBackstop(installed seccomp.Options) error {
	access := backstopAccess(installed)
	if access == 0 {
		return nil
	}
	if abi, err := llsys.LandlockGetABIVersion(); err != nil || abi < 1 {
		return nil
	}
	return landlock.Config{HandledAccessFS: access}.BestEffort().RestrictPaths()
}

// ThreadBackstop is applyBackstop for the calling OS thread alone, for a
// long-lived process that forks each command from a thread of its own:
// the microvm guest's PID 1 (microvm/guest, observe_linux.go), whose
// other threads, the supervisor's among them, must keep their rights.
// The caller must have locked its goroutine to the thread for good
// (runtime.LockOSThread, never unlocked) and set no_new_privs on it, as
// seccomp.ThreadListener does. It returns the kernel's Landlock ABI
// version, 0 where Landlock is not available (nothing restricted then,
// as applyBackstop).
func ThreadBackstop(installed seccomp.Options) (abi int, err error) {
	abi, err = llsys.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return 0, nil
	}
	access := uint64(backstopAccess(installed))
	if access == 0 {
		return abi, nil
	}
	if abi < 2 {
		access &^= llsys.AccessFSRefer // ABI 1 lacks it (see applyBackstop)
	}
	fd, err := llsys.LandlockCreateRuleset(&llsys.RulesetAttr{HandledAccessFS: access}, 0)
	if err != nil {
		return abi, fmt.Errorf("landlock_create_ruleset: %w", err)
	}
	defer unix.Close(fd)
	if err := llsys.LandlockRestrictSelf(fd, 0); err != nil {
		return abi, fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return abi, nil
}

// LandlockABI returns the kernel's Landlock ABI version, 0 where Landlock
// is not available.
func LandlockABI() int {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return 0
	}
	return abi
}
