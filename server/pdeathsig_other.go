//go:build !linux

package server

import "syscall"

func setPdeathsig(*syscall.SysProcAttr) {}
