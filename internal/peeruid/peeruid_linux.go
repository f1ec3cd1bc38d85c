package peeruid

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// Supported tells whether UID is offered on this platform (Filter then
// checks every peer).
const Supported = true

// UID returns the uid owning the client end of c: the socket whose local
// address is c's remote one and whose remote address is c's local one,
// asked of the kernel by that exact 4-tuple (sock_diag(7): an
// inet_diag_req_v2 without NLM_F_DUMP is answered by one hash lookup,
// inet_diag_find_one_icsk, whatever the number of sockets). Every peer is
// looked up, whatever its address: a local process may connect to
// loopback from any address of this host. ErrUnknown when no full socket
// matches: none in this network namespace (a peer on another host, or one
// gone), or only a TIME_WAIT, SYN_RECV or orphaned one, which the kernel
// reports with uid 0 and inode 0 and which must not pass for root's.
func UID(c net.Conn) (int, error) {
	remote, err := addrPort(c.RemoteAddr())
	if err != nil {
		return 0, err
	}
	local, err := addrPort(c.LocalAddr())
	if err != nil {
		return 0, err
	}
	if remote.Addr().Is4() != local.Addr().Is4() {
		return 0, fmt.Errorf("%w: mixed address families", ErrUnknown)
	}
	// A socket bound to a device (SO_BINDTODEVICE, open to any user) is
	// found only when the request names that device's index: ask with
	// none, then with each interface's. Without the index the kernel may
	// answer with a listener on the client's address instead (another
	// user's): only an answer for exactly the asked 4-tuple counts.
	ifs := []uint32{0}
	if all, err := net.Interfaces(); err == nil {
		for _, i := range all {
			ifs = append(ifs, uint32(i.Index))
		}
	}
	for _, ifindex := range ifs {
		a, err := diagExact(remote, local, ifindex)
		if errors.Is(err, ErrNoSocket) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if a.state == tcpListen || a.src != remote || a.dst != local {
			continue // not the client's socket
		}
		if a.inode == 0 {
			return 0, fmt.Errorf("%w: the matching socket is not a full one (TIME_WAIT, SYN_RECV or orphaned)", ErrUnknown)
		}
		return int(a.uid), nil
	}
	return 0, fmt.Errorf("%w: %w", ErrUnknown, ErrNoSocket)
}

// tcpListen is TCP_LISTEN, inet_diag_msg.idiag_state of a listener.
const tcpListen = 10

// answer is what the kernel said of one socket (inet_diag_msg).
type answer struct {
	state      uint8
	src, dst   netip.AddrPort
	uid, inode uint32
}

// Sizes of linux/inet_diag.h's structures.
const (
	sockIDLen   = 48 // inet_diag_sockid
	reqLen      = 8 + sockIDLen
	msgUIDOff   = 4 + sockIDLen + 12 // inet_diag_msg.idiag_uid
	msgInodeOff = msgUIDOff + 4      // inet_diag_msg.idiag_inode
)

// diagExact asks for the TCP socket with local address src and remote
// address dst, bound to device ifindex (0: none), and returns the
// kernel's answer.
func diagExact(src, dst netip.AddrPort, ifindex uint32) (answer, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return answer{}, fmt.Errorf("sock_diag: %w", err)
	}
	defer unix.Close(fd)
	tv := unix.Timeval{Sec: 2}
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)

	req := make([]byte, unix.NLMSG_HDRLEN+reqLen)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], 20) // SOCK_DIAG_BY_FAMILY
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(req[8:], 1) // seq
	r := req[unix.NLMSG_HDRLEN:]
	r[0] = unix.AF_INET
	if src.Addr().Is6() {
		r[0] = unix.AF_INET6
	}
	r[1] = unix.IPPROTO_TCP
	ne.PutUint32(r[4:], 0xffffffff) // every state: the answer says which
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], src.Port())
	binary.BigEndian.PutUint16(id[2:], dst.Port())
	s, d := src.Addr().As16(), dst.Addr().As16()
	if src.Addr().Is4() {
		s4, d4 := src.Addr().As4(), dst.Addr().As4()
		copy(id[4:8], s4[:])
		copy(id[20:24], d4[:])
	} else {
		copy(id[4:20], s[:])
		copy(id[20:36], d[:])
	}
	ne.PutUint32(id[36:], ifindex)
	// The cookie INET_DIAG_NOCOOKIE (any socket).
	ne.PutUint32(id[40:], 0xffffffff)
	ne.PutUint32(id[44:], 0xffffffff)

	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return answer{}, fmt.Errorf("sock_diag: %w", err)
	}
	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return answer{}, fmt.Errorf("sock_diag: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return answer{}, fmt.Errorf("sock_diag: %w", err)
	}
	for _, m := range msgs {
		switch m.Header.Type {
		case unix.NLMSG_ERROR:
			if len(m.Data) >= 4 {
				if e := unix.Errno(-int32(ne.Uint32(m.Data))); e == unix.ENOENT {
					return answer{}, ErrNoSocket
				} else if e != 0 {
					return answer{}, fmt.Errorf("%w: %w", ErrUnknown, e)
				}
			}
			return answer{}, fmt.Errorf("%w: empty answer", ErrUnknown)
		case 20: // SOCK_DIAG_BY_FAMILY: an inet_diag_msg
			if len(m.Data) < msgInodeOff+4 {
				return answer{}, fmt.Errorf("sock_diag: short answer (%d bytes)", len(m.Data))
			}
			d := m.Data
			a := answer{state: d[1], uid: ne.Uint32(d[msgUIDOff:]), inode: ne.Uint32(d[msgInodeOff:])}
			sport, dport := binary.BigEndian.Uint16(d[4:]), binary.BigEndian.Uint16(d[6:])
			if d[0] == unix.AF_INET {
				a.src = netip.AddrPortFrom(netip.AddrFrom4([4]byte(d[8:12])), sport)
				a.dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(d[24:28])), dport)
			} else {
				a.src = netip.AddrPortFrom(netip.AddrFrom16([16]byte(d[8:24])).Unmap(), sport)
				a.dst = netip.AddrPortFrom(netip.AddrFrom16([16]byte(d[24:40])).Unmap(), dport)
			}
			return a, nil
		}
	}
	return answer{}, fmt.Errorf("%w: no answer", ErrUnknown)
}
