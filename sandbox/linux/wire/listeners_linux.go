package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// maxListeners bounds the descriptors of one listeners message: two
// proxies (ListenerHTTP, ListenerSOCKS5) on at most two loopback addresses
// each, and MaxLoopbackListeners relayed ports, with room to spare (the
// kernel's own bound, SCM_MAX_FD, is 253).
const maxListeners = 8 + MaxLoopbackListeners

// ErrBadListenersMessage is returned by RecvListeners for a message whose
// descriptors do not match its names.
var ErrBadListenersMessage = errors.New("bad control message")

// ErrSandboxEnded is returned by RecvListeners when PID 1 closed its end
// without sending the listeners.
var ErrSandboxEnded = errors.New("sandbox ended")

// SendListeners is PID 1's side of the listeners message: names[i] is the
// name of the listening socket fds[i]. The caller closes its copies.
func SendListeners(sock int, names []string, fds []int) error {
	b, _ := json.Marshal(names)
	return unix.Sendmsg(sock, b, unix.UnixRights(fds...), nil, 0)
}

// RecvListeners is srt's side: it reads PID 1's one message from conn and
// returns the names and the matching listening sockets (close-on-exec),
// as many of one as of the other.
func RecvListeners(conn *os.File) ([]string, []int, error) {
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(maxListeners*4))
	n, oobn, _, _, err := unix.Recvmsg(int(conn.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, nil, fmt.Errorf("receiving listeners: %w", err)
	}
	if n == 0 {
		return nil, nil, fmt.Errorf("receiving listeners: %w", ErrSandboxEnded)
	}
	var names []string
	if err := json.Unmarshal(buf[:n], &names); err != nil {
		return nil, nil, fmt.Errorf("receiving listeners: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, nil, fmt.Errorf("receiving listeners: %w", ErrBadListenersMessage)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != len(names) {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, nil, fmt.Errorf("receiving listeners: %d descriptors for %d names: %w", len(fds), len(names), ErrBadListenersMessage)
	}
	return names, fds, nil
}
