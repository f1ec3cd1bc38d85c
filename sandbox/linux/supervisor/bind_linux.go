package supervisor

import (
	"time"
	"unsafe"

	"github.com/srt-go/srt/seccomp"
	"github.com/srt-go/srt/violation"
	"golang.org/x/sys/unix"
)

// This file runs in srt, on the notification loop's thread.

// maxSockaddr is the largest address bind(2) takes (struct
// sockaddr_storage).
const maxSockaddr = 128

// answerBind answers the sandbox's bind(2) (seccomp.Options.CheckBinds). An
// AF_UNIX socket is refused (EPERM, recorded as socket-unix): binding one
// to a path makes a socket inode under any name in a writable directory
// (.env, a trap repository's refs) that no creation rule sees, and an
// abstract name is of no use to a pair that is already connected. Any
// other socket is bound here, on srt's own copy of the caller's
// descriptor (pidfd_getfd(2)) with the address copied once from the
// caller, so neither can be swapped after the check (the call is never
// answered CONTINUE). A socket keeps the network namespace it was made in,
// so the bind lands in the sandbox's.
func answerBind(fd int, nt seccomp.Notification, on func(violation.Violation)) {
	a := nt.Data.Args
	errno, unixSock := bindFor(int(nt.PID), int(int32(a[0])), a[1], a[2])
	if !seccomp.IDValid(fd, nt.ID) {
		return // the caller is gone; its memory was not its own any more
	}
	if errno == 0 {
		seccomp.RespondValue(fd, nt.ID, 0) // done here; never CONTINUE
	} else {
		seccomp.Respond(fd, nt.ID, errno)
	}
	if !unixSock {
		return
	}
	if nsPID, exe := procInfo(int(nt.PID)); nsPID != 1 {
		on(violation.Violation{Time: time.Now(), Action: violation.SocketUnix, Target: "bind(AF_UNIX)",
			Reason: "seccomp: EPERM (a unix socket's name would escape the creation-time rules)", PID: nsPID, Exe: exe})
	}
}

// bindFor performs bind(sockfd, addr, addrlen) for process pid and
// returns its errno, or EPERM and true for an AF_UNIX socket. A
// descriptor srt cannot take (the caller made itself non-dumpable) is
// refused too: fail closed.
func bindFor(pid, sockfd int, addr, addrlen uint64) (unix.Errno, bool) {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return unix.EPERM, false
	}
	defer unix.Close(pidfd)
	sock, err := unix.PidfdGetfd(pidfd, sockfd, 0)
	if err != nil {
		if err == unix.EBADF {
			return unix.EBADF, false
		}
		return unix.EPERM, false
	}
	defer unix.Close(sock)
	dom, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_DOMAIN)
	switch {
	case err != nil:
		return errnoOf(err), false // ENOTSOCK
	case dom == unix.AF_UNIX:
		return unix.EPERM, true
	case addrlen > maxSockaddr:
		return unix.EINVAL, false
	case addrlen == 0:
		return unix.EINVAL, false
	}
	buf := make([]byte, addrlen)
	if readMem(pid, uintptr(addr), buf) != nil {
		return unix.EFAULT, false
	}
	_, _, e := unix.Syscall(unix.SYS_BIND, uintptr(sock), uintptr(unsafe.Pointer(&buf[0])), uintptr(addrlen))
	return e, false
}
