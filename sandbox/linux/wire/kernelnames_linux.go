package wire

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// The exchange of the in-kernel name rules (sandbox/linux/namelsm), on
// InitSpec.KernelNamesFD: PID 1 sends its mount namespace (an open
// /proc/self/ns/mnt) and O_PATH descriptors of the sandbox's private
// trees (TMPDIR, /dev, /proc, …), srt registers the namespace with the
// BPF program and answers one byte; PID 1 runs nothing of the command's
// before that byte.
const (
	msgNamespace = "mntns"
	// AckKernelNames is srt's answer once the namespace is registered.
	AckKernelNames = 'K'
)

// SendNamespace is PID 1's side: it sends its mount namespace and the
// private trees (those that exist) on sock, then waits for srt's answer.
func SendNamespace(sock int, private []string) error {
	ns, err := unix.Open("/proc/self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening the mount namespace: %w", err)
	}
	fds := []int{ns}
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for _, p := range private {
		if fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
			fds = append(fds, fd)
		}
	}
	if err := unix.Sendmsg(sock, []byte(msgNamespace), unix.UnixRights(fds...), nil, 0); err != nil {
		return fmt.Errorf("sending the mount namespace to srt: %w", err)
	}
	var b [1]byte
	for {
		n, err := unix.Read(sock, b[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || n != 1 || b[0] != AckKernelNames {
			return errors.New("srt did not register the sandbox with the in-kernel name rules")
		}
		return nil
	}
}

// RecvNamespace is srt's side: it reads PID 1's message and returns the
// namespace's descriptor first, then the private trees' (all
// close-on-exec; the caller closes them).
func RecvNamespace(conn *os.File) ([]int, error) {
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(4*16))
	nb, oobn, _, _, err := unix.Recvmsg(int(conn.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("receiving the mount namespace: %w", err)
	}
	if string(buf[:nb]) != msgNamespace {
		return nil, errors.New("receiving the mount namespace: the sandbox ended first")
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("receiving the mount namespace: %w", ErrBadListenerMessage)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) < 1 {
		return nil, fmt.Errorf("receiving the mount namespace: %w", ErrBadListenerMessage)
	}
	return fds, nil
}
