package main

import (
	"os"

	"github.com/srt-go/srt/sandbox/linux"
)

// The same binary is srtd and, for the sandboxes it starts, their PID 1, placeholder
// guardian, Landlock stage and proxy-connect helper (as for srt);
// init() dispatches before anything else runs.
func init() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case linux.InitArg:
			linux.RunInit(os.Args[2:])
		case linux.GuardianArg:
			linux.RunGuardian(os.Args[2:])
		case linux.LandlockStageArg:
			linux.RunLandlockStage(os.Args[2:])
		case linux.ProxyConnectArg:
			linux.RunProxyConnect(os.Args[2:])
		}
	}
}
