package linux

import "os"

// DispatchRole runs srt's binary in one of its helper roles when its first
// argument names one (the sandbox's PID 1, the placeholder guardian, the
// Landlock stage, ssh's ProxyCommand) and never returns then; otherwise it
// returns at once. Every binary that starts sandboxes (srt, srtd, tests)
// calls it first thing, from init, since the sandbox re-executes that same
// binary for these roles.
func DispatchRole() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case InitArg:
		RunInit(os.Args[2:])
	case GuardianArg:
		RunGuardian(os.Args[2:])
	case LandlockStageArg:
		RunLandlockStage(os.Args[2:])
	case ProxyConnectArg:
		RunProxyConnect(os.Args[2:])
	}
}
