package halfclose

import (
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

// TestPipeHalfClose: a client that half-closes after its request still
// gets the whole answer through Pipe.
func TestPipeHalfClose(t *testing.T) {
	server, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	go func() {
		c, err := server.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		fmt.Fprintf(c, "echo: %s", b)
	}()
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer front.Close()
	go func() {
		c, err := front.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", server.Addr().String())
		if err != nil {
			c.Close()
			return
		}
		Pipe(c, up)
	}()
	c, err := net.Dial("tcp", front.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte("hello"))
	c.(*net.TCPConn).CloseWrite()
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "echo: hello" {
		t.Fatalf("got %q, %v", b, err)
	}
}
