//go:build !linux && !darwin

package server

import (
	"context"
	"fmt"
	"runtime"

	"github.com/srt-go/srt/port"
)

func startTerminal(context.Context, port.Backend, TerminalConfig, string, []string, int, int) (termProc, error) {
	return nil, fmt.Errorf("%w (%s)", errNoTerminal, runtime.GOOS)
}
