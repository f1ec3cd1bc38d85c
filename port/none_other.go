//go:build !unix

package port

import (
	"errors"
	"fmt"
	"runtime"
)

func launchNone(spec Spec) (runner, error) {
	return nil, fmt.Errorf("the none backend on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
