package server

import (
	"os"

	"github.com/srt-go/srt/sandbox/linux"
)

// The test binary starts native terminals, so it plays the roles of srt's
// binary too (cmd/srt/roles_linux.go); init() dispatches before the tests.
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
