package peeruid

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
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
	fl := Filter(ln, func(uid int) bool { return uid != me }, func(_ net.Addr, uid int, err error) { refusedCh <- uid })
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
