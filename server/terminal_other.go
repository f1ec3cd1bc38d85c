//go:build !linux && !darwin

package server

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/srt-go/srt/port"
)

// errNoTerminal is returned where this platform has no PTY support.
var errNoTerminal = errors.New("terminals are not supported on this platform")

func startTerminal(context.Context, port.Backend, TerminalConfig, string, []string, int, int) (termProc, error) {
	return nil, fmt.Errorf("%w (%s)", errNoTerminal, runtime.GOOS)
}
