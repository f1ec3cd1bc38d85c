// Package halfclose copies bytes both ways between two connections and
// passes an end of stream on as a half-close. It is the one copy loop of
// srt's forwarders: the proxies' CONNECT and SOCKS tunnels (proxy) and the
// sandbox-side port forwarders (relay.Pipe).
package halfclose

import (
	"io"
	"net"
	"sync"
)

// CloseWriter is a connection that can half-close: shut its sending
// side down (SHUT_WR) and keep receiving. *net.TCPConn and *net.UnixConn
// implement it.
type CloseWriter interface{ CloseWrite() error }

// Pipe copies bytes both ways between a and b until both directions are
// done, then closes both.
//
// End of stream on one side is passed on as a half-close (shutdown
// SHUT_WR) of the other, so protocols where one peer finishes sending
// first (an HTTP/1.0 request, "ssh host cmd < file") keep receiving the
// answer. A read or write error in either direction closes both
// connections, which also ends the other direction. A connection without
// CloseWrite is closed at its end of stream instead.
//
// io.Copy between two *net.TCPConn (or a unix and a TCP socket) uses
// splice(2) on Linux, so bulk data does not pass through user space.
func Pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		copyHalf(b, a)
	}()
	copyHalf(a, b)
	wg.Wait()
	a.Close()
	b.Close()
}

// copyHalf copies src to dst, then half-closes dst; on error it closes
// both.
func copyHalf(dst, src net.Conn) {
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		src.Close()
		return
	}
	if cw, ok := dst.(CloseWriter); ok {
		cw.CloseWrite()
		return
	}
	dst.Close()
}
