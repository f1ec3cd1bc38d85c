//go:build !linux && !darwin

package proxy

import (
	"errors"
	"net"
)

// peerUID is not known on this system, so the MITM proxy's socket is
// refused (fail closed): srt runs sandboxes on Linux and macOS only.
func peerUID(net.Conn) (uint32, error) {
	return 0, errors.New("peer credentials are not read on this system")
}
