//go:build !unix

// Package syspath finds the host programs srt itself runs in PATH, only
// in system directories (see syspath_unix.go).
package syspath

import (
	"errors"
	"fmt"
)

// ErrNotFound is wrapped when no system directory of PATH holds the
// program.
var ErrNotFound = errors.New("not found in a system directory of PATH")

// LookPath fails: this platform has no sandbox helpers to find.
func LookPath(name string) (string, error) {
	return "", fmt.Errorf("%s: %w: %w", name, ErrNotFound, errors.ErrUnsupported)
}
