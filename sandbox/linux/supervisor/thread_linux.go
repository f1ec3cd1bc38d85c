package supervisor

// The answering threads' own credentials: the notification loop's thread,
// and each thread that waits on an open for it (wait_linux.go).

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// prepareCreatorThread is run by the notification loop's goroutine: it
// locks it to its thread (never unlocked: the thread dies with the loop),
// gives the thread its own umask, drops the thread's capabilities so
// that, for srt running as root, the kernel checks srt's calls as it
// checks the command's, and blocks every signal on it.
//
// Signals: SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SEND marks
// the notification replied before it waits for the caller to take the
// descriptor; interrupted by a signal before the caller has, it takes
// the descriptor back but leaves the reply, so the caller's call returns
// 0 — an open that "returned" descriptor 0 (kernel/seccomp.c,
// seccomp_notify_addfd; seen here with Go's preemption signal, SIGURG,
// about one untar of 10,000 files in four). With every signal blocked on
// this thread nothing interrupts it: the Go runtime preempts it at
// function calls, and process signals go to other threads.
//
// With keepBounding (Config.BoundingCaps) the thread keeps, effective and
// permitted, the capabilities of srt's bounding set instead of none: the
// capabilities a root command execve'd from srt holds (the microvm
// guest's workloads, root under PID 1's reduced bounding set), so its
// calls are still checked as the command's.
func prepareCreatorThread(keepBounding bool) error {
	runtime.LockOSThread()
	var all unix.Sigset_t
	for i := range all.Val {
		all.Val[i] = ^uint64(0)
	}
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &all, nil); err != nil {
		return err
	}
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return err
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if keepBounding {
		for c := 0; c < 64; c++ {
			in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0)
			if err != nil {
				break // EINVAL: past the kernel's last capability
			}
			if in == 1 {
				data[c/32].Effective |= 1 << (c % 32)
				data[c/32].Permitted |= 1 << (c % 32)
			}
		}
		// Only what srt holds can be kept: never more than its own.
		var own [2]unix.CapUserData
		if err := unix.Capget(&hdr, &own[0]); err != nil {
			return err
		}
		for i := range data {
			data[i].Effective &= own[i].Permitted
			data[i].Permitted &= own[i].Permitted
		}
	}
	return unix.Capset(&hdr, &data[0])
}
