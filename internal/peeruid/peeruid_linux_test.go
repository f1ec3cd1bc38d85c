package peeruid

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestUIDOfLoopbackPeer(t *testing.T) {
	for _, network := range []string{"tcp4", "tcp6"} {
		t.Run(network, func(t *testing.T) {
			addr := "127.0.0.1:0"
			if network == "tcp6" {
				addr = "[::1]:0"
			}
			ln, err := net.Listen(network, addr)
			if err != nil {
				t.Skipf("no %s loopback: %v", network, err)
			}
			defer ln.Close()
			c, err := net.Dial(network, ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			s, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			uid, err := UID(s)
			if err != nil || uid != os.Getuid() {
				t.Fatalf("UID = %d, %v; want %d", uid, err, os.Getuid())
			}
		})
	}
}

func TestFilterClosesRefusedPeers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	me := os.Getuid()
	refusedCh := make(chan int, 1)
	fl := Filter(ln, func(uid int) bool { return uid != me }, false, func(_ net.Addr, uid int, err error) { refusedCh <- uid })
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := fl.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if uid := <-refusedCh; uid != me {
		t.Errorf("refused uid %d, want %d", uid, me)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("refused connection still open: %v", err)
	}
	select {
	case <-accepted:
		t.Error("the refused connection was handed on")
	default:
	}
}

// A closed client's socket (FIN_WAIT2 orphaned, or TIME_WAIT: the kernel
// says uid 0, inode 0) never passes for root's.
func TestClosedPeerIsUnknown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c.Close()
	s.Read(make([]byte, 1)) // the FIN has come: the client's socket is orphaned
	uid, err := UID(s)
	if err == nil {
		t.Fatalf("UID of a closed client = %d, want an error", uid)
	}
	if !errors.Is(err, ErrUnknown) {
		t.Errorf("err %v, want ErrUnknown", err)
	}
}

// A peer that connects to loopback from another address of this host is
// looked up like any other.
func TestNonLoopbackSourceIsLookedUp(t *testing.T) {
	var src net.IP
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() {
			src = ip.IP
		}
	}
	if src == nil {
		t.Skip("no non-loopback IPv4 address on this host")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: src}}
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Skipf("cannot connect to loopback from %s: %v", src, err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if uid, err := UID(s); err != nil || uid != os.Getuid() {
		t.Fatalf("UID = %d, %v; want %d", uid, err, os.Getuid())
	}
}

// A client socket bound to a device (SO_BINDTODEVICE, open to any user)
// is found too, and never taken for a listener on its address (the
// kernel answers a lookup without the device's index with one).
func TestDeviceBoundPeer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		rc.Control(func(fd uintptr) { serr = unix.BindToDevice(int(fd), "lo") })
		return serr
	}}
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Skipf("SO_BINDTODEVICE lo: %v", err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if uid, err := UID(s); err != nil || uid != os.Getuid() {
		t.Fatalf("UID of a device-bound client = %d, %v; want %d", uid, err, os.Getuid())
	}
}
