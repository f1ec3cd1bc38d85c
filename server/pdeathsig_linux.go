package server

import "syscall"

// setPdeathsig makes a host shell die with SIGKILL when srtd does, even
// by SIGKILL (a backend-none terminal is the host, unsandboxed).
func setPdeathsig(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
