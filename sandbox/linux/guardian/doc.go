// Package guardian is the placeholder guardian: a small process, srt's own
// binary started with wire.GuardianArg, that owns every change srt makes
// to the host filesystem for one sandbox, and srt's client of it.
//
// Which process runs what:
//
//	client_linux.go       srt: Start, Hold, Watch, Finish
//	guardian_linux.go     the guardian process: Run, its requests, cleanup
//	placeholder_linux.go  the guardian process: the files it makes and checks
//
// The guardian creates the placeholders, and removes them once the
// sandbox is gone. It lives in its own session and outlives srt, so that
// even when srt is killed with SIGKILL no placeholder is left behind: the
// guardian sees its socket close, waits for the processes srt told it to
// watch to be dead (pidfd), and cleans up. The exchange is drawn in
// sandbox/linux/wire.
//
// Several sandboxes may share a placeholder (two runs in one directory).
// Each holds a shared flock(2) on a lock file named after the path in the
// state directory; only a guardian that can take the lock exclusively, so
// the last user, removes the placeholder. Removing it earlier would detach
// the mount in the other sandbox (unlinking a mount point in another mount
// namespace lazily unmounts it, Linux ≥ 3.18) and lift its protection.
package guardian
