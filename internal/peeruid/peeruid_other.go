//go:build !linux

package peeruid

import (
	"errors"
	"net"
)

// UID is not offered here: the platform has no table of sockets with
// their owners that this package reads.
func UID(c net.Conn) (int, error) {
	return 0, errors.ErrUnsupported
}
