//go:build !linux

package main

import "os"

var forwardedSignals = []os.Signal{os.Interrupt}

func inheritedFDs() []int { return nil }
