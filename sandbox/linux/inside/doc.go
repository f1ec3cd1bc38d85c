// Package inside is the code srt's binary runs inside a sandbox, each
// entry point in a process of its own, re-executed by srt and dispatched
// by sandbox/linux's DispatchRole on the argument that names its role
// (sandbox/linux/wire): never srt's host side, which is sandbox/linux.
//
//	RunInit           the sandbox's PID 1, under bubblewrap (wire.InitArg)
//	RunLandlockStage  the weaker sandbox's first process (wire.LandlockStageArg)
//	RunProxyConnect   ssh's ProxyCommand in the sandbox (wire.ProxyConnectArg)
//
// Which process runs each file:
//
//	init_linux.go          PID 1: spec, lifeline, filter, the command
//	agent_linux.go         PID 1 of a warm sandbox: the exec agent
//	listeners_linux.go     PID 1: binds the proxy and relayed ports, sends them to srt
//	seccomp_linux.go       PID 1 and the Landlock stage: the seccomp filter
//	fds_linux.go           PID 1 and the Landlock stage: descriptor hygiene
//	landlock_linux.go      the Landlock stage: restricts itself, execs
//	landlock_calls_*.go    the Landlock stage: per-architecture call numbers
//	proxyconnect_linux.go  the ProxyCommand helper
//
// It is named for where it runs rather than "pid1": two of its three
// processes are not a PID 1. It imports sandbox/linux/wire for every
// message it exchanges with srt, and never sandbox/linux.
//
// Every entry point exits; none returns. A failure to set up what srt
// asked for exits wire.ExitSetup before the command runs.
package inside
