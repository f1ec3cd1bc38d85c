//go:build !linux

package main

import (
	"errors"
	"os"
)

var forwardedSignals = []os.Signal{os.Interrupt}

func checkPassFDs(fds []int) ([]int, error) {
	if len(fds) > 0 {
		return nil, errors.New("--pass-fd is not supported on this platform")
	}
	return nil, nil
}
