//go:build !linux && !darwin

package port

import (
	"context"
	"fmt"
	"runtime"
)

// probeNative: no native sandbox outside Linux and macOS (seed 000:
// "Windows n'a pas de bac à sable natif").
func probeNative(ctx context.Context, _ string) Probe { return notOffered(runtime.GOOS) }

func notOffered(goos string) Probe {
	return Probe{Platform: goos, Note: fmt.Sprintf("the native sandbox is not offered on this platform (%s)", goos)}
}
