package port

import "syscall"

// setPdeathsig makes a backend-none command die with SIGKILL when srtd
// does, even by SIGKILL. What it started in sessions of its own can
// outlive srtd: backend none is the host, unsandboxed by definition.
func setPdeathsig(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
