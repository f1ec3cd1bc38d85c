package wire

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// The two messages PID 1 (or the Landlock stage) may send on the notify
// socket (see the package comment).
const (
	msgListener   = "listener" // with one descriptor: the seccomp listener
	msgNoListener = "none"     // the kernel gave no listener
)

// ErrBadListenerMessage is returned by RecvListener for a message that
// carries the listener's word but not exactly one descriptor.
var ErrBadListenerMessage = errors.New("bad control message")

// SendListener is PID 1's side: it sends the listener fd on sock. The
// caller closes its own copy afterwards.
func SendListener(sock, fd int) error {
	return unix.Sendmsg(sock, []byte(msgListener), unix.UnixRights(fd), nil, 0)
}

// SendNoListener is PID 1's side when the kernel gave no listener.
func SendNoListener(sock int) error {
	return unix.Sendmsg(sock, []byte(msgNoListener), nil, nil, 0)
}

// RecvListener is srt's side: it reads PID 1's one message from conn and
// returns the listener (close-on-exec), or -1 and a nil error when there
// is none (no listener on this kernel, or the sandbox ended first).
func RecvListener(conn *os.File) (int, error) {
	buf := make([]byte, 64)
	oob := make([]byte, unix.CmsgSpace(4))
	nb, oobn, _, _, err := unix.Recvmsg(int(conn.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("receiving the seccomp listener: %w", err)
	}
	if nb == 0 || string(buf[:nb]) != msgListener {
		return -1, nil // sandbox ended first, or no listener on this kernel
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return -1, fmt.Errorf("receiving the seccomp listener: %w", ErrBadListenerMessage)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return -1, fmt.Errorf("receiving the seccomp listener: %d descriptors: %w", len(fds), ErrBadListenerMessage)
	}
	return fds[0], nil
}
