package main

import (
	"os"

	"github.com/srt-go/srt/sandbox/linux"
)

// The same binary is srt's in-sandbox PID 1 and its placeholder guardian;
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
