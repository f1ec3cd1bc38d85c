package linux

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// This file runs in srt and in srtd: srtd registers the addresses it
// listens on, and every sandbox's proxies refuse them, so that no
// sandboxed command reaches srtd's API, whose backend none runs commands
// on the host (issue 16: a CLI sandbox allowed localhost read srtd's token
// and drove it; the token is now read-denied too).

// serversDir is where srtd registers its listeners: srt's state directory
// (per user, 0700), one file per srtd process named by its pid.
func serversDir() (string, error) {
	state, err := StateDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(state, "srtd"), nil
}

// RegisterServer records addr (srtd's listener) so that every sandbox of
// this user refuses it; the returned func removes the record. A record
// of a process that has ended is ignored, so a killed srtd leaves nothing
// that refuses an unrelated server later.
func RegisterServer(addr net.Addr) (unregister func(), err error) {
	ta, ok := addr.(*net.TCPAddr)
	if !ok {
		return nil, fmt.Errorf("register %v: not a TCP address", addr)
	}
	dir, err := serversDir()
	if err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return nil, fmt.Errorf("srtd registry: %w", err)
	}
	path := filepath.Join(dir, strconv.Itoa(os.Getpid()))
	tmp, err := os.CreateTemp(dir, ".new-*")
	if err != nil {
		return nil, fmt.Errorf("srtd registry: %w", err)
	}
	defer os.Remove(tmp.Name())
	fmt.Fprintln(tmp, ta.AddrPort())
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("srtd registry: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, fmt.Errorf("srtd registry: %w", err)
	}
	return func() { os.Remove(path) }, nil
}

// ServerAddresses returns the proxies' Forbidden hook: it gives a reason
// when an address is one a running srtd of this user listens on (one
// registered on loopback matches every loopback address of its port; one
// on every interface, every address of this host), else "". The registry
// directory is found once, here; each dial then reads it (srtd may start
// after the sandbox). Errors are StateDir's.
func ServerAddresses() (func(netip.AddrPort) string, error) {
	dir, err := serversDir()
	if err != nil {
		return nil, err
	}
	return func(ap netip.AddrPort) string { return registered(dir, ap) }, nil
}

// registered is ServerAddresses' hook for registry directory dir.
func registered(dir string, ap netip.AddrPort) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	a := ap.Addr().Unmap()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			continue // that srtd has ended
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		for _, line := range strings.Fields(string(b)) {
			reg, err := netip.ParseAddrPort(line)
			if err != nil || reg.Port() != ap.Port() {
				continue
			}
			r := reg.Addr().Unmap()
			if r == a || (r.IsUnspecified() || r.IsLoopback()) && a.IsLoopback() || r.IsUnspecified() && hostAddress(a) {
				return "srtd's API listens there; no sandbox may reach it"
			}
		}
	}
	return ""
}

// hostAddress reports whether a is one of this host's interface addresses.
func hostAddress(a netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, ia := range addrs {
		if pfx, err := netip.ParsePrefix(ia.String()); err == nil && pfx.Addr().Unmap() == a {
			return true
		}
	}
	return false
}
