//go:build !linux

package server

import (
	"fmt"
	"runtime"

	"github.com/srt-go/srt/port"
)

// startMicroVMTerminal: the microvm backend (QEMU) runs on Linux only.
func (s *Server) startMicroVMTerminal(id, cwd string, env []string, cols, rows int) (termProc, map[string]any, error) {
	return nil, nil, fmt.Errorf("%w: microvm: terminals in a microVM run on linux, not %s", port.ErrBackendUnavailable, runtime.GOOS)
}
