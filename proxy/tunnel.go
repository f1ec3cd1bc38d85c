package proxy

import (
	"io"
	"net"
	"sync"
)

// closeWriter is implemented by *net.TCPConn and *net.UnixConn.
type closeWriter interface{ CloseWrite() error }

// tunnel copies bytes both ways between the client connection a and the
// upstream connection b until both directions are done, then closes both.
//
// End of stream on one side is passed on as a half-close (shutdown
// SHUT_WR) of the other, so protocols where one peer finishes sending
// first (an HTTP/1.0 request, "ssh host cmd < file") keep receiving the
// answer. A read or write error in either direction closes both
// connections, which also ends the other direction.
//
// io.Copy between two *net.TCPConn (or a unix and a TCP socket) uses
// splice(2) on Linux, so bulk data does not pass through user space.
func tunnel(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pipe(b, a)
	}()
	pipe(a, b)
	wg.Wait()
	a.Close()
	b.Close()
}

// pipe copies src to dst, then half-closes dst; on error it closes both.
func pipe(dst, src net.Conn) {
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		src.Close()
		return
	}
	if cw, ok := dst.(closeWriter); ok {
		cw.CloseWrite()
		return
	}
	dst.Close()
}
