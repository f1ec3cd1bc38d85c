//go:build unix && !linux

package port

import "syscall"

func setPdeathsig(*syscall.SysProcAttr) {}
