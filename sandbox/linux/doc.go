// Package linux is srt's host side of the Linux backend: it runs in srt's
// own process (or srtd's) and never inside a sandbox.
//
// Start turns a compiled policy into a bubblewrap command line from the
// one filesystem plan (fsplan.Build), starts the seccomp supervisor
// (supervisor), the placeholder guardian when the plan has placeholders
// (guardian) and the session's proxies on the listeners PID 1 hands back
// (network_linux.go) with the relay of the allow-list's host loopback
// ports (loopback_linux.go), relays the terminal, and cleans up after the run.
// StartWarm keeps the sandbox up for many commands (srtd's sessions);
// StartLandlock is the weaker sandbox where bubblewrap cannot run. What
// runs inside the sandbox is package inside, started through
// DispatchRole; every message between the two sides is defined in wire.
package linux
