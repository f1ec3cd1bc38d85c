//go:build linux

package seccomp

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Notification is struct seccomp_notif (include/uapi/linux/seccomp.h):
// one call waiting for the listener.
type Notification struct {
	ID uint64
	// PID is the calling thread's ID in the listener's PID namespace
	// (the host's, for srt).
	PID   uint32
	Flags uint32
	Data  Data
}

// Data is struct seccomp_data: what the filter saw.
type Data struct {
	Nr                 int32
	Arch               uint32
	InstructionPointer uint64
	Args               [6]uint64
}

// notifResp is struct seccomp_notif_resp.
type notifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// ioctl numbers: _IOWR('!', 0, struct seccomp_notif),
// _IOWR('!', 1, struct seccomp_notif_resp), _IOW('!', 2, __u64),
// _IOW('!', 4, __u64).
const (
	ioctlNotifRecv     = unix.SECCOMP_IOCTL_NOTIF_RECV
	ioctlNotifSend     = unix.SECCOMP_IOCTL_NOTIF_SEND
	ioctlNotifIDValid  = 0x40082102
	ioctlNotifSetFlags = 0x40082104
)

func ioctlPtr(fd int, req uintptr, p unsafe.Pointer) unix.Errno {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(p))
	return e
}

// Receive waits for the next notification on listener fd
// (SECCOMP_IOCTL_NOTIF_RECV). ENOENT means the caller went away before it
// was read; EINTR should be retried.
func Receive(fd int) (Notification, error) {
	var n Notification
	for {
		e := ioctlPtr(fd, ioctlNotifRecv, unsafe.Pointer(&n))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return n, e
		}
		return n, nil
	}
}

// Respond answers notification id: with errno when errno != 0 (the call
// fails with it and does not run), else with CONTINUE (the call runs as
// if the filter had allowed it). ENOENT means the caller is gone.
func Respond(fd int, id uint64, errno unix.Errno) error {
	r := notifResp{ID: id}
	if errno != 0 {
		r.Error = -int32(errno)
	} else {
		r.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
	}
	if e := ioctlPtr(fd, ioctlNotifSend, unsafe.Pointer(&r)); e != 0 {
		return e
	}
	return nil
}

// IDValid reports whether notification id is still pending: the caller
// has not been killed and its memory is still the one it had when the
// call was made (check after reading its memory, before trusting it).
func IDValid(fd int, id uint64) bool {
	return ioctlPtr(fd, ioctlNotifIDValid, unsafe.Pointer(&id)) == 0
}

// SyncWakeUp asks the kernel to switch straight to the caller when the
// listener answers (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, Linux 6.6), which
// roughly halves the round trip of a notification. Older kernels return
// EINVAL; the listener works the same, only slower.
func SyncWakeUp(fd int) error {
	// The flags are the argument itself, not a pointer to them.
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), ioctlNotifSetFlags, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
	if e != 0 {
		return e
	}
	return nil
}

// RespondValue answers notification id with success and val as the
// call's return value: the call does not run (the listener did its work).
func RespondValue(fd int, id uint64, val int64) error {
	r := notifResp{ID: id, Val: val}
	if e := ioctlPtr(fd, ioctlNotifSend, unsafe.Pointer(&r)); e != 0 {
		return e
	}
	return nil
}

// notifAddFD is struct seccomp_notif_addfd.
type notifAddFD struct {
	ID         uint64
	Flags      uint32
	SrcFD      uint32
	NewFD      uint32
	NewFDFlags uint32
}

// ioctlNotifAddFD is _IOW('!', 3, struct seccomp_notif_addfd);
// addFDFlagSend is SECCOMP_ADDFD_FLAG_SEND (Linux 5.14).
const (
	ioctlNotifAddFD = 0x40182103
	addFDFlagSend   = 1 << 1
)

// AddFDSend installs a copy of srcfd in the caller of notification id and
// answers the notification with its number, atomically
// (SECCOMP_ADDFD_FLAG_SEND): the emulated open returns that descriptor.
// cloexec sets O_CLOEXEC on the caller's copy. The caller may run before
// this returns, while srcfd and the ioctl's own reference still hold the
// file open (see AddFD).
func AddFDSend(fd int, id uint64, srcfd int, cloexec bool) (int, error) {
	return addFD(fd, id, srcfd, cloexec, addFDFlagSend)
}

// AddFD installs a copy of srcfd in the caller of notification id and
// returns its number there, without answering the notification: the
// caller goes on waiting until Respond or RespondValue. Unlike AddFDSend,
// the caller resumes only after srt has dropped its own references, which
// matters when it will execute the file at once (ETXTBSY while another
// open for writing exists) or take a lease on it.
func AddFD(fd int, id uint64, srcfd int, cloexec bool) (int, error) {
	return addFD(fd, id, srcfd, cloexec, 0)
}

func addFD(fd int, id uint64, srcfd int, cloexec bool, flags uint32) (int, error) {
	a := notifAddFD{ID: id, Flags: flags, SrcFD: uint32(srcfd)}
	if cloexec {
		a.NewFDFlags = unix.O_CLOEXEC
	}
	r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), ioctlNotifAddFD, uintptr(unsafe.Pointer(&a)))
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}
