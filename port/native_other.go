//go:build !linux

package port

import (
	"context"
	"fmt"
	"runtime"
)

// launchNative: the native backend is wired on Linux only so far; on
// macOS the Seatbelt launcher is still to come. The probe may say
// available; a launch fails loudly rather than run unsandboxed.
func launchNative(ctx context.Context, rt *Runtime, s *session) (runner, error) {
	return nil, fmt.Errorf("%w: the native backend is not wired on %s yet", ErrBackendUnavailable, runtime.GOOS)
}
