package peeruid

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
)

// UID returns the uid owning the client end of c, a connection accepted
// on loopback: ErrNotLoopback when the peer is elsewhere, ErrUnknown
// when no socket of this network namespace matches.
func UID(c net.Conn) (int, error) {
	remote, err := addrPort(c.RemoteAddr())
	if err != nil {
		return 0, err
	}
	local, err := addrPort(c.LocalAddr())
	if err != nil {
		return 0, err
	}
	if !remote.Addr().IsLoopback() {
		return 0, ErrNotLoopback
	}
	// An IPv4 connection to a dual-stack listener is listed in tcp6 with
	// mapped addresses; one to an IPv4 listener in tcp.
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		uid, ok, err := find(f, remote, local)
		if err != nil {
			return 0, err
		}
		if ok {
			return uid, nil
		}
	}
	return 0, ErrUnknown
}

// find scans one /proc/net/tcp* table for the socket whose local address
// is sockLocal and remote address sockRemote.
func find(path string, sockLocal, sockRemote netip.AddrPort) (uid int, ok bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return 0, false, nil // no IPv6 on this kernel
		}
		return 0, false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid ...
		fs := bytes.Fields(sc.Bytes())
		if len(fs) < 8 {
			continue
		}
		l, err1 := parseAddr(fs[1])
		r, err2 := parseAddr(fs[2])
		if err1 != nil || err2 != nil || l != sockLocal || r != sockRemote {
			continue
		}
		n, err := strconv.Atoi(string(fs[7]))
		if err != nil {
			return 0, false, fmt.Errorf("%s: uid %q: %w", path, fs[7], err)
		}
		return n, true, nil
	}
	return 0, false, sc.Err()
}

// parseAddr reads "0100007F:1F90": the address as the kernel's 32-bit
// words in host byte order (proc(5)), then the port in hex.
func parseAddr(b []byte) (netip.AddrPort, error) {
	i := bytes.IndexByte(b, ':')
	if i < 0 {
		return netip.AddrPort{}, fmt.Errorf("address %q", b)
	}
	raw, err := hex.DecodeString(string(b[:i]))
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("address %q", b)
	}
	port, err := strconv.ParseUint(string(b[i+1:]), 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("port %q", b)
	}
	for w := 0; w < len(raw); w += 4 {
		binary.BigEndian.PutUint32(raw[w:], binary.NativeEndian.Uint32(raw[w:]))
	}
	a, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), nil
}
