//go:build !linux && !darwin

package port

import (
	"context"
	"fmt"
	"runtime"
)

// launchNative: the native backend is wired on Linux (bubblewrap,
// native_linux.go) and macOS (Seatbelt, native_darwin.go) only. Elsewhere
// the probe says unavailable; a launch fails loudly rather than run
// unsandboxed.
func launchNative(ctx context.Context, rt *Runtime, s *session) (runner, error) {
	return nil, fmt.Errorf("%w: the native backend is not offered on %s", ErrBackendUnavailable, runtime.GOOS)
}

// precheckLaunch: nothing to check before the start here.
func precheckLaunch(rt *Runtime, spec Spec, b Backend) error { return nil }
