package halfclose

import (
	"io"
	"net"
	"testing"
)

// TestPipeHalfClose: a client that finishes sending (CloseWrite) still
// receives the answer the server writes after reading everything.
func TestPipeHalfClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// Server: read to end of stream, then answer with what it read.
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		c.Write(append([]byte("got "), b...))
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
		up, err := net.Dial("tcp", ln.Addr().String())
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
	c.Write([]byte("hello"))
	c.(CloseWriter).CloseWrite()
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "got hello" {
		t.Fatalf("read %q, %v; want %q", b, err, "got hello")
	}
}
