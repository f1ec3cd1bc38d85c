package linux

import (
	"errors"
	"os"
	"sync/atomic"

	"github.com/srt-go/srt/internal/cgroup"
	"github.com/srt-go/srt/sandbox/linux/guardian"
	"github.com/srt-go/srt/sandbox/linux/inside"
	"github.com/srt-go/srt/sandbox/linux/wire"
)

// dispatched records that this program called DispatchRole: only then may
// it start sandboxes, since each re-executes this same binary in a role.
var dispatched atomic.Bool

// ErrNoDispatch is why a sandbox does not start in a program whose main
// does not call DispatchRole (sandbox.Main) first: the sandbox re-executes
// the running binary as its PID 1, guardian and Landlock stage, and that
// binary would run the program's own main in their place.
var ErrNoDispatch = errors.New("this program does not call sandbox.Main (linux.DispatchRole) first in main, " +
	"so it cannot be the sandbox's PID 1, guardian or Landlock stage; refusing to start a sandbox")

// DispatchRole runs srt's binary in one of its helper roles when its first
// argument names one (sandbox/linux/wire: the sandbox's PID 1, the
// Landlock stage and ssh's ProxyCommand, in sandbox/linux/inside; the
// placeholder guardian, in sandbox/linux/guardian) and never returns
// then; otherwise it returns at once. Every binary that starts sandboxes (srt, srtd, test
// binaries from TestMain) calls it as the first statement of main, since
// the sandbox re-executes that same binary for these roles; Start,
// StartWarm and StartLandlock refuse with ErrNoDispatch until it was
// called.
func DispatchRole() {
	dispatched.Store(true)
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case wire.InitArg:
		inside.RunInit(os.Args[2:])
	case wire.GuardianArg:
		guardian.Run(os.Args[2:])
	case wire.LandlockStageArg:
		inside.RunLandlockStage(os.Args[2:])
	case wire.ProxyConnectArg:
		inside.RunProxyConnect(os.Args[2:])
	case cgroup.EnterArg:
		// The v1 trampoline into a session's memory cgroup, in front of
		// bubblewrap (Config.Cgroup).
		cgroup.RunEnter(os.Args[2:])
	}
}

// checkDispatched returns a *SetupError wrapping ErrNoDispatch unless
// DispatchRole was called.
func checkDispatched() error {
	if !dispatched.Load() {
		return &SetupError{ErrNoDispatch}
	}
	return nil
}
