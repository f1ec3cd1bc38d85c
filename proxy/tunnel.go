package proxy

import (
	"net"

	"github.com/srt-go/srt/relay"
)

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
func tunnel(a, b net.Conn) { relay.Pipe(a, b) }

// closeWriter is implemented by *net.TCPConn and *net.UnixConn.
type closeWriter interface{ CloseWrite() error }
