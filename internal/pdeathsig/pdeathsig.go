// Package pdeathsig starts child processes that carry PR_SET_PDEATHSIG
// (syscall.SysProcAttr.Pdeathsig) from an OS thread that outlives them.
//
// The kernel sends the parent-death signal when the thread that forked
// the child exits, not when the process does (prctl(2),
// PR_SET_PDEATHSIG), and the Go runtime ends a thread whenever a
// goroutine locked to it returns without unlocking — srt's seccomp
// listener thread does so each time a sandbox ends. A child forked from
// such a thread would be killed at a random moment (golang/go#27505).
package pdeathsig

import "os/exec"

// Start runs start, which must fork exactly one process and return its
// PID, on an OS thread that stays locked until that process has exited;
// then the thread is released. It returns start's error. The process is
// not reaped: the caller waits for it as usual (exec.Cmd.Wait).
func Start(start func() (pid int, err error)) error { return startPinned(start) }

// StartCmd is Start for cmd.Start.
func StartCmd(cmd *exec.Cmd) error {
	return Start(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	})
}
