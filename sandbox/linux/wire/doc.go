// Package wire defines every message that crosses a process boundary
// between srt and the processes it starts, so that both ends read one
// definition. It runs in both: srt's host side (sandbox/linux, and the
// client half of sandbox/linux/guardian) and the processes it starts
// (sandbox/linux/inside: the sandbox's PID 1, the Landlock stage, ssh's
// ProxyCommand; the guardian process). It imports nothing of
// sandbox/linux.
//
// Every channel below is an inherited descriptor, never a path: nothing
// else on the host can open it, and nothing in the sandbox can reach
// srt's end. Each side's reaction to EOF is part of the protocol, and
// each is chosen to fail closed: a process that loses srt ends what it
// guards, and srt that loses a process treats the sandbox as ended.
//
// # Roles (argv)
//
// srt re-executes its own binary (/proc/self/exe, or its descriptor
// through bubblewrap) with argv[1] naming the role, so every program that
// starts sandboxes calls sandbox.Main (linux.DispatchRole) first. Only
// descriptor numbers ride on the command line, which every process in
// the sandbox can read; everything else comes in an inherited descriptor.
//
//	InitArg SPECFD          the sandbox's PID 1 (bwrap --as-pid-1)
//	LandlockStageArg SPECFD the weaker sandbox's first process
//	GuardianArg STATEDIR    the placeholder guardian (its socket is fd 3)
//	ProxyConnectArg HOST PORT  ssh's ProxyCommand inside the sandbox
//
// # Starting the sandbox (srt, bubblewrap, PID 1)
//
// srt creates five descriptors for one sandbox before it starts
// bubblewrap, which passes them on to PID 1 at the same numbers:
//
//	srt                          bubblewrap                 PID 1
//	 │ InitSpec (JSON) in a sealed memfd ────────────────────▶ read SPECFD to EOF
//	 │                            │ info-fd: BwrapInfo ─▶ srt
//	 │                            │ (mounts, namespaces)     │
//	 │ ◀──────────────────────────────────── StartedByte ─── │ write, close StartedFD
//	 │ lifeline: holds the write end, never writes ────────▶ │ reads LifelineFD
//	 │ ◀──────────────────────── listeners (see below) ───── │ ListenFD
//	 │ ◀──────────────────── seccomp listener (see below) ── │ NotifyFD
//	 │                                                       │ exec the command,
//	 │                                                       │ or serve AgentFD
//
// On EOF, or what stands for it:
//
//   - Spec, PID 1's side: a spec it cannot read or decode, or with
//     neither a command nor an agent socket, ends PID 1 with ExitSetup
//     before it starts anything; so does a mount that is not where the
//     spec's MountChecks say (checked before StartedByte, so srt reports
//     a set-up error).
//   - Started pipe, srt's side: EOF without StartedByte means bubblewrap
//     failed before PID 1 ran; srt reports a set-up error (the command
//     did not run) whatever bubblewrap's exit status, and never signals
//     a PID 1 that has not said it catches signals.
//   - Lifeline, PID 1's side: EOF means srt is gone, however it died
//     (even before bubblewrap set its child's PDEATHSIG): PID 1 sends
//     SIGKILL to every process in the PID namespace and exits
//     ExitSignalShift+SIGKILL, which ends the namespace.
//   - Info pipe, srt's side: EOF before BwrapInfo leaves PID 1's host
//     pid unknown; Signal then fails instead of guessing a pid.
//
// # Proxy listeners (SOCK_SEQPACKET, PID 1 → srt, one message)
//
// PID 1 binds InitSpec.Listeners on the sandbox's loopback and sends
// them in one packet; srt serves its proxies on them from outside:
//
//	PID 1                                     srt (network_linux.go)
//	  JSON ["http","socks5",…]
//	  + SCM_RIGHTS{one listener per name}  ─▶  serves each by name
//	  (close)
//
// PID 1 skips an address the namespace lacks (no IPv6) and ends with
// ExitSetup when it can bind none: no proxy, no command. srt, on EOF or
// a message whose descriptors do not match its names, serves nothing:
// the sandbox then has no route out at all.
//
// # Seccomp listener (SOCK_SEQPACKET, PID 1 or the Landlock stage → srt)
//
// After installing its filter, the sandbox's PID 1 (or the Landlock
// stage) sends srt exactly one message over NotifyFD, then closes its
// end (SendListener, RecvListener):
//
//	PID 1                                  srt (sandbox/linux/supervisor)
//	  "listener" + SCM_RIGHTS{listener}  ─▶  answers the notifications
//	  "none"                             ─▶  records nothing (no listener
//	                                         on this kernel)
//	  (end closed, nothing sent)         ─▶  the sandbox ended first
//
// PID 1 closes its own copy of the listener once sent: should srt die, a
// notified call then fails (ENOSYS) instead of waiting for an answer.
// With InitSpec.RequireListener a kernel without a listener ends PID 1
// with ExitSetup instead of sending "none".
//
// # Exec agent (SOCK_SEQPACKET, a warm sandbox, both directions)
//
// One JSON AgentMsg per packet. srt sends the command's stdio (the
// sandbox's ends) with the exec request; for one exec, started or
// failed always precedes exit:
//
//	srt (warm_linux.go)                             PID 1 (agent)
//	  │ ◀──────────────────────────────────────── ready (once)
//	  │ exec{id,argv,env,dir,tty}
//	  │   + SCM_RIGHTS{stdin,stdout,stderr} ─────▶ fork into its own session
//	  │ ◀──────────────────────────────────────── started{id,pid}
//	  │                                            or failed{id,code,error}
//	  │ signal{id,sig} ──────────────────────────▶ kill(-pid, sig)
//	  │ ◀──────────────────────────────────────── exit{id,code,signal}
//	  │ freeze{id} / thaw{id} ───────────────────▶ kill(-1, SIGSTOP/SIGCONT)
//	  │ ◀──────────────────────────────────────── frozen{id} / thawed{id}
//
// PID 1, on EOF, exits 0: the kernel kills everything left in the PID
// namespace. srt, on EOF, ends every pending exec with
// ExitSignalShift+SIGKILL and ErrSandboxEnded, and refuses new ones. A
// packet that does not decode is dropped (its descriptors closed) by
// either side.
//
// # Landlock stage (pipe, srt → the stage)
//
//	srt (landlock_linux.go)                 stage (sandbox/linux/inside)
//	  write LandlockSpec (JSON), close ───▶  read SPECFD to EOF, restrict
//	                                         itself, send the seccomp
//	                                         listener as PID 1 does, exec
//
// The stage, on a spec it cannot read or decode, or on any failure to
// restrict itself, exits ExitSetup without running the command.
//
// # Placeholder guardian (SOCK_STREAM on fd 3, request/reply)
//
// One JSON GuardianRequest per line, one GuardianReply per line, in
// order; srt may send a batch before reading its replies:
//
//	srt (sandbox/linux/guardian client)        guardian process
//	  create{path,dir,content} … ──────────▶   lock, create if missing
//	  ◀──────────────────────────────────────  {created} or {error} each
//	  watch{pids:[bwrap]} ─────────────────▶   remember bwrap's pid/pgid
//	  ◀──────────────────────────────────────  {}
//	  done ────────────────────────────────▶   srt saw bubblewrap end
//	  ◀──────────────────────────────────────  {}
//	  (close)                                  wait for the watched pids,
//	                                           remove what no one holds,
//	                                           exit 0
//
// The guardian, on EOF without "done", knows srt died: it sends SIGKILL
// to bubblewrap's process group (bubblewrap's child stays in it until it
// is tied to bubblewrap), waits for the watched processes to be gone,
// and only then removes the placeholders. srt, on EOF or a reply that
// does not decode, fails the start: a path it could not protect is never
// left unprotected.
//
// # Exit statuses
//
// PID 1 and the Landlock stage exit as env(1) and timeout(1) do
// (ExitSetup, ExitNotExec, ExitNotFound, ExitSignalShift+N); the exec
// agent reports the same codes in failed and exit.
package wire
