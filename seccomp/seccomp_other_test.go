//go:build !linux

package seccomp

import (
	"errors"
	"testing"
)

func TestUnsupported(t *testing.T) {
	if _, err := Build(Options{}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Build: %v, want errors.ErrUnsupported", err)
	}
	if err := Install(nil); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Install: %v, want errors.ErrUnsupported", err)
	}
}
