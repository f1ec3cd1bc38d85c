package wire

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func seqpacket(t *testing.T) (int, *os.File) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fds[1]), "srt")
	t.Cleanup(func() { f.Close() })
	return fds[0], f
}

// TestListenersRoundTrip: the names and descriptors PID 1 sends arrive
// in order, one descriptor per name.
func TestListenersRoundTrip(t *testing.T) {
	sock, conn := seqpacket(t)
	defer unix.Close(sock)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if err := SendListeners(sock, []string{ListenerHTTP, ListenerSOCKS5}, []int{int(r.Fd()), int(w.Fd())}); err != nil {
		t.Fatal(err)
	}
	names, fds, err := RecvListeners(conn)
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		defer unix.Close(fd)
	}
	if len(names) != 2 || names[0] != ListenerHTTP || names[1] != ListenerSOCKS5 || len(fds) != 2 {
		t.Fatalf("got %v %v", names, fds)
	}
}

// TestListenersEnded: srt serves nothing when PID 1 closes its end
// without a message, and refuses a message whose descriptors do not match
// its names.
func TestListenersEnded(t *testing.T) {
	sock, conn := seqpacket(t)
	unix.Close(sock)
	if _, _, err := RecvListeners(conn); !errors.Is(err, ErrSandboxEnded) {
		t.Errorf("closed: %v, want ErrSandboxEnded", err)
	}
	sock, conn = seqpacket(t)
	defer unix.Close(sock)
	if err := SendListeners(sock, []string{ListenerHTTP, ListenerSOCKS5}, []int{int(conn.Fd())}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := RecvListeners(conn); !errors.Is(err, ErrBadListenersMessage) {
		t.Errorf("mismatch: %v, want ErrBadListenersMessage", err)
	}
}

// TestListenersFull: a message with both proxies on both loopback
// addresses and MaxLoopbackListeners relayed ports arrives whole (the
// receive buffers are large enough for it).
func TestListenersFull(t *testing.T) {
	sock, conn := seqpacket(t)
	defer unix.Close(sock)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	names := []string{ListenerHTTP, ListenerHTTP, ListenerSOCKS5, ListenerSOCKS5}
	for range MaxLoopbackListeners {
		names = append(names, ListenerLoopback)
	}
	fds := make([]int, len(names))
	for i := range fds {
		fds[i] = int(r.Fd())
	}
	if err := SendListeners(sock, names, fds); err != nil {
		t.Fatal(err)
	}
	got, gotFDs, err := RecvListeners(conn)
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range gotFDs {
		unix.Close(fd)
	}
	if len(got) != len(names) || len(gotFDs) != len(names) || got[len(got)-1] != ListenerLoopback {
		t.Fatalf("got %d names, %d descriptors, want %d", len(got), len(gotFDs), len(names))
	}
}
