//go:build linux && !amd64 && !arm64

package seccomp

import (
	"errors"
	"fmt"
	"runtime"
)

// nativeABI fails: the rule table has been written and tested for amd64
// and arm64 only. Other architectures differ in ways a table swap does not
// cover (s390x swaps clone's first two arguments, 386 multiplexes sockets
// through socketcall, mips has several ABIs under one binary), so each
// needs its own review rather than a guessed table.
func nativeABI() (*abi, error) {
	return nil, fmt.Errorf("seccomp filter on GOARCH=%s: no reviewed syscall table: %w", runtime.GOARCH, errors.ErrUnsupported)
}
