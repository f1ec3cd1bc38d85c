package seccomp

import "golang.org/x/sys/unix"

// nativeABI returns the arm64 system-call numbers, from golang.org/x/sys/unix
// (generated from the kernel's syscall tables), and ioctl request codes.
func nativeABI() (*abi, error) {
	return &abi{
		auditArch: unix.AUDIT_ARCH_AARCH64,
		x32:       false,

		tiocsti:   unix.TIOCSTI,
		tioclinux: unix.TIOCLINUX,

		socket:     unix.SYS_SOCKET,
		socketpair: unix.SYS_SOCKETPAIR,
		bind:       unix.SYS_BIND,
		ioctl:      unix.SYS_IOCTL,

		ioUringSetup:    unix.SYS_IO_URING_SETUP,
		ioUringEnter:    unix.SYS_IO_URING_ENTER,
		ioUringRegister: unix.SYS_IO_URING_REGISTER,

		clone:        unix.SYS_CLONE,
		clone3:       unix.SYS_CLONE3,
		unshare:      unix.SYS_UNSHARE,
		setns:        unix.SYS_SETNS,
		mount:        unix.SYS_MOUNT,
		umount2:      unix.SYS_UMOUNT2,
		pivotRoot:    unix.SYS_PIVOT_ROOT,
		chroot:       unix.SYS_CHROOT,
		openTree:     unix.SYS_OPEN_TREE,
		openTreeAttr: unix.SYS_OPEN_TREE_ATTR,
		moveMount:    unix.SYS_MOVE_MOUNT,
		fsopen:       unix.SYS_FSOPEN,
		fsconfig:     unix.SYS_FSCONFIG,
		fsmount:      unix.SYS_FSMOUNT,
		fspick:       unix.SYS_FSPICK,
		mountSetattr: unix.SYS_MOUNT_SETATTR,

		keyctl:         unix.SYS_KEYCTL,
		addKey:         unix.SYS_ADD_KEY,
		requestKey:     unix.SYS_REQUEST_KEY,
		userfaultfd:    unix.SYS_USERFAULTFD,
		bpf:            unix.SYS_BPF,
		perfEventOpen:  unix.SYS_PERF_EVENT_OPEN,
		kexecLoad:      unix.SYS_KEXEC_LOAD,
		kexecFileLoad:  unix.SYS_KEXEC_FILE_LOAD,
		initModule:     unix.SYS_INIT_MODULE,
		finitModule:    unix.SYS_FINIT_MODULE,
		deleteModule:   unix.SYS_DELETE_MODULE,
		openByHandleAt: unix.SYS_OPEN_BY_HANDLE_AT,
		acct:           unix.SYS_ACCT,
		swapon:         unix.SYS_SWAPON,
		swapoff:        unix.SYS_SWAPOFF,
		reboot:         unix.SYS_REBOOT,
		syslog:         unix.SYS_SYSLOG,
		quotactl:       unix.SYS_QUOTACTL,
		quotactlFd:     unix.SYS_QUOTACTL_FD,
		lookupDcookie:  unix.SYS_LOOKUP_DCOOKIE,

		modeArgs: []modeArg{
			{"fchmod", unix.SYS_FCHMOD, 1, true, 0, -1}, {"fchmodat", unix.SYS_FCHMODAT, 2, true, 0, 1}, {"fchmodat2", unix.SYS_FCHMODAT2, 2, true, 0, 1},
			{"openat", unix.SYS_OPENAT, 3, false, 0, 1}, {"mknodat", unix.SYS_MKNODAT, 2, false, 0, 1},
		},
		setxattrs: []uint32{unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_FSETXATTR, unix.SYS_SETXATTRAT},
	}, nil
}
