// Package relay holds the small pieces of network plumbing that sit
// between a client and the session's proxies (issue 3 "Plumbing";
// srt-notes §4.6):
//
//   - Dial and ProxyCommand, an HTTP CONNECT client that srt's own binary
//     runs as ssh's ProxyCommand inside the sandbox (GIT_SSH_COMMAND), so
//     ssh needs neither socat nor nc;
//   - Pipe, the byte-for-byte copy with half-close used by the forwarders
//     of the sandbox's loopback ports (the proxies' tunnels run the same
//     loop, internal/halfclose);
//   - LoopbackAddrs, the sandbox-side listen addresses.
//
// There is no in-sandbox relay process: the sandbox's PID 1 binds the
// proxy ports on the sandbox's private loopback and hands the listening
// sockets to srt (SCM_RIGHTS), which serves the proxies on them from
// outside (sandbox/linux/network_linux.go). The reference's two socat
// bridges, and this package's earlier TCP→unix-socket relay, are not
// needed.
package relay

import (
	"net"
	"strconv"

	"github.com/srt-go/srt/internal/halfclose"
)

// Default in-sandbox listen ports (srt-notes §4.7: the reference's ports).
const (
	DefaultHTTPPort  = 3128
	DefaultSOCKSPort = 1080
)

// LoopbackAddrs returns the IPv4 and IPv6 loopback addresses for port.
func LoopbackAddrs(port int) []string {
	p := strconv.Itoa(port)
	return []string{"127.0.0.1:" + p, "[::1]:" + p}
}

// Pipe copies bytes both ways between a and b until both directions end,
// then closes both. End of stream in one direction becomes a half-close
// (CloseWrite) of the other side, so a client that finishes sending still
// receives the answer; an error in either direction closes both. It is
// halfclose.Pipe, the loop the proxies' tunnels run too.
func Pipe(a, b net.Conn) { halfclose.Pipe(a, b) }
