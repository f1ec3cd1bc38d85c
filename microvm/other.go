//go:build !linux

package microvm

import (
	"context"
	"errors"
	"fmt"
	"runtime"
)

var errOS = fmt.Errorf("microvm: the QEMU backend runs on linux, not %s: %w", runtime.GOOS, errors.ErrUnsupported)

// Prepare is not supported on this OS.
func Prepare(ctx context.Context, cacheDir string) (*Assets, error) { return nil, errOS }

// Assets are the files a VM boots from (linux only).
type Assets struct {
	Kernel, KernelRelease string
	Modules               []string
}

// VM is a microvm (linux only).
type VM struct{}

// Launch fails on this OS with an *UnavailableError.
func Launch(ctx context.Context, cfg Config) (*VM, error) {
	return nil, &UnavailableError{Reason: "platform", Err: errOS}
}

// Probe reports the microvm runtime unavailable on this OS.
func Probe(ctx context.Context) ProbeResult { return ProbeConfig(ctx, Config{}) }

// ProbeConfig reports the microvm runtime unavailable on this OS.
func ProbeConfig(ctx context.Context, cfg Config) ProbeResult {
	return ProbeResult{Reason: errOS.Error()}
}

// RunCommand fails on this OS with an *UnavailableError.
func RunCommand(ctx context.Context, rc RunConfig, argv []string, stdio Stdio) (int, error) {
	return 0, &UnavailableError{Reason: "platform", Err: errOS}
}
