//go:build !linux

package seccomp

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/net/bpf"
)

// Build is only implemented on Linux.
func Build(opts Options) ([]bpf.RawInstruction, error) {
	return nil, fmt.Errorf("seccomp filter on GOOS=%s: %w", runtime.GOOS, errors.ErrUnsupported)
}

// Install is only implemented on Linux.
func Install(prog []bpf.RawInstruction) error {
	return fmt.Errorf("seccomp install on GOOS=%s: %w", runtime.GOOS, errors.ErrUnsupported)
}
