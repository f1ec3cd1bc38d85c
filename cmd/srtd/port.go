package main

import (
	"errors"
	"log/slog"

	"github.com/srt-go/srt/port"
)

// newPort returns the host's port. Until port.New lands, srtd cannot run.
func newPort(lg *slog.Logger) (port.Port, error) {
	return nil, errors.New("the sandbox port is not built yet")
}
