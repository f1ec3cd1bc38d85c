// Package wire defines the messages that cross a process boundary between
// srt and the processes it starts, so that both ends read one definition.
//
// The seccomp listener (notify_linux.go here): after installing its filter,
// the sandbox's PID 1 sends srt exactly one message over an inherited
// SOCK_SEQPACKET socket, then closes its end:
//
//	PID 1                                  srt (sandbox/linux/supervisor)
//	  "listener" + SCM_RIGHTS{listener}  ─▶  answers the notifications
//	  "none"                             ─▶  records nothing (no listener
//	                                         on this kernel)
//	  (end closed, nothing sent)         ─▶  the sandbox ended first
package wire
