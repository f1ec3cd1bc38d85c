//go:build !linux

package main

import "errors"

func fcntlGetFD(int) (int, error) { return 0, errors.ErrUnsupported }
