package wire

// The arguments that make srt's binary run in one of its roles (argv[1];
// see the package comment). sandbox/linux's DispatchRole switches on them.
const (
	// InitArg makes srt's binary run as the sandbox's PID 1; its one
	// argument is the descriptor of the InitSpec pipe. bubblewrap starts
	// it with --as-pid-1, so no process of bubblewrap's, with its full
	// command line, is visible inside.
	InitArg = "--srt-init"
	// LandlockStageArg makes srt's binary apply the weaker sandbox's
	// restrictions to itself and exec the command; its one argument is
	// the descriptor of the LandlockSpec pipe.
	LandlockStageArg = "--srt-landlock-stage"
	// GuardianArg makes srt's binary run as a placeholder guardian; its
	// one argument is srt's state directory, its socket is GuardianFD.
	GuardianArg = "--srt-guardian"
	// ProxyConnectArg makes srt's binary act as ssh's ProxyCommand
	// inside the sandbox (GIT_SSH_COMMAND): it opens a CONNECT tunnel
	// through the sandbox's HTTP proxy to its two arguments, host and
	// port.
	ProxyConnectArg = "--proxy-connect"
)

// The proxies' ports on the sandbox's own loopback, as in the reference:
// srt points the command's proxy variables at them and PID 1 binds them
// (InitSpec.Listeners); the ProxyCommand helper dials HTTPProxyPort.
const (
	HTTPProxyPort  = 3128
	SOCKSProxyPort = 1080
)

// Exit statuses of PID 1 and the Landlock stage themselves, as env(1) and
// timeout(1) use them; the exec agent reports the same codes
// (AgentMsg.Code).
const (
	ExitSetup       = 125 // srt's own failure: the command did not run
	ExitNotExec     = 126 // found but cannot run
	ExitNotFound    = 127 // not found
	ExitSignalShift = 128 // killed by signal N gives 128+N
)
