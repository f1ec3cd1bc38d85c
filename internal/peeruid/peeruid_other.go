//go:build !linux

package peeruid

import (
	"errors"
	"net"
)

// Supported tells whether UID is offered on this platform: not here,
// and Filter lets every peer through.
const Supported = false

// UID is not offered here: the platform has no table of sockets with
// their owners that this package reads.
func UID(c net.Conn) (int, error) {
	return 0, errors.ErrUnsupported
}
