//go:build !linux && !darwin

package sandbox

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"

	"github.com/srt-go/srt/settings"
)

func dispatchRole() {}

func newHost(*settings.Settings, *slog.Logger) (host, error) {
	return nil, fmt.Errorf("sandbox: no backend for %s yet: %w", runtime.GOOS, errors.ErrUnsupported)
}
