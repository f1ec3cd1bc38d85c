//go:build !linux

package main

import (
	"fmt"
	"os"
	"runtime"
)

func openControlFD(fd int) (*os.File, error) {
	return nil, fmt.Errorf("--control-fd is not supported on %s", runtime.GOOS)
}
