// Package supervisor is srt's side of the sandbox's seccomp filter: it
// runs in srt's own process, outside the sandbox, and answers the user
// notifications of the sandboxed processes (seccomp_unotify(2)). PID 1
// installs the filter and hands over the listener (seccomp_linux.go in
// sandbox/linux/inside; the exchange is drawn in sandbox/linux/wire).
//
// The API is New, Serve, SetTerminal and Close. Inside, by mechanism:
//
//	supervisor_linux.go  the Supervisor: its goroutines and their end
//	loop_linux.go        receive, dispatch, respond; seccomp refusals
//	mode_linux.go        set-id and write-permission modes (Call.Mode)
//	observe_linux.go     observed filesystem calls → violation.Violation
//	caller_linux.go      what /proc and the caller's memory say of it
//	thread_linux.go      the answering thread's own umask and credentials
//	umask_linux.go       the callers' umasks, kept from their umask calls
//	creator_linux.go     the creation calls: decode, resolve, dispatch
//	resolve_linux.go     names resolved inside the sandbox's root
//	names.go             the name rules (pure)
//	git.go, git_linux.go git-directory and config rules
//	locks_linux.go       git lock files left behind
//	open_linux.go, truncate_linux.go, mkdir_linux.go, link_linux.go,
//	rename_linux.go, wait_linux.go, bind_linux.go
//	                     one file per family of emulated calls, each
//	                     returning a verdict
//
// # Refusals
//
// Every call the filter refuses is notified and answered with the errno
// the deny-only filter gives (seccomp.Table); the supervisor records it,
// once per process and target, through Config.OnViolation. The mode
// refusals seccomp.BuildSetID makes in a deny-only sandbox (set-id bits,
// others' or group write) are this filter's too, notified only for a
// refused mode: the supervisor judges the mode before anything else,
// answers EPERM and records every such call (mode_linux.go).
//
// Fail closed. The listener's only holder is srt. If srt dies or closes
// it, the kernel fails every notified call with ENOSYS without running it
// (seccomp_do_user_notification; seccomp.TestNotifyFailClosed): refused
// calls stay refused, and observed filesystem calls fail too. In practice
// srt's death also kills the sandbox (--die-with-parent, PDEATHSIG).
//
// # Observation
//
// Filesystem observation (seccomp.Options.ObserveWrites, ObserveReads)
// adds notifications for the write-intent calls (and, when
// filesystem.denyRead is not empty, every open), answered CONTINUE as
// soon as srt has copied the path out of the caller's memory: the mounts
// still decide, so observation never weakens enforcement, and a racing
// caller can at worst mislead the record, never the sandbox. Which of
// those calls the mounts refuse is decided afterwards, off the caller's
// path, from the policy the mounts were built from (observer.refusal).
//
// # Creation-time name rules
//
// filesystem.enforceNamesAtCreation (seccomp.Options.EmulateCreates).
// Bind mounts protect the names that exist when the sandbox starts. A
// name that comes into being later — a ".env", a "*.key", the hooks of a
// repository created during the run — matches no mount. With this feature
// every call that can bring a name into being or write a file by name is
// notified to srt, and srt does NOT let it run: it performs the call
// itself, from outside the sandbox, and returns the result.
//
//   - Race-free. The path is read once from the caller's memory; from then
//     on srt works on descriptors it holds: the sandbox's root
//     (/proc/PID/root), the parent directory opened in it with openat2
//     RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS (absolute symlinks and ".."
//     stay inside the sandbox's mount tree, whose read-only mounts still
//     apply), the parent's real path read back from that descriptor, and
//     the *at call relative to it. A created file's descriptor is handed to
//     the caller with SECCOMP_IOCTL_NOTIF_ADDFD|SECCOMP_ADDFD_FLAG_SEND, so
//     it is the call's return value. Nothing is answered CONTINUE.
//   - Serialized. One thread answers every notification of the sandbox, so
//     while srt walks a directory that is being renamed, no other name can
//     be created in the sandbox.
//   - Credentials. That thread has its own umask (unshare CLONE_FS) set to
//     the caller's before each creation (read from /proc once per thread,
//     then kept from the notified umask calls: umask_linux.go), and, when
//     srt runs as root, no capabilities (capset): the kernel checks the
//     calls as it would the command's (same uid, no DAC override).
//   - Backstop. Where Landlock is available PID 1 takes every right to
//     make a name away from the command (sandbox/linux/inside's
//     backstop_linux.go): a creating call this package never sees fails.
//
// Rules: every filesystem.denyWrite glob and every mandatory name at any
// depth (policy.MandatoryGlobs). A name matching one cannot be created,
// opened for writing, renamed to or from, linked or symlinked; a directory
// renamed into place must not bring a name that would match there and did
// not at its old place. git keeps working:
//   - ".git/hooks" may be created empty by mkdir, and in it only regular
//     "*.sample" files (git init's templates; git runs no hook by that
//     name). No hook can be renamed, linked or symlinked in.
//   - ".git/config" may come into being only by renaming a sibling file
//     (git's config.lock dance) whose content passes a list of harmless
//     keys (core.repositoryformatversion, remote.*.url, branch.*.merge, …;
//     never core.hooksPath, core.fsmonitor, include, alias, filter, …):
//     srt copies the checked content into a file of its own, renames it
//     over config and removes the lock, so a descriptor the command kept
//     on the lock cannot change config afterwards.
//
// Limits: a relative name's directory is resolved through the path of the
// caller's dirfd or working directory (/proc/PID/fd/N), so a caller that
// renames its own directory meanwhile may create the name in the new
// place — the rules are checked where it lands. A symlink whose name ends
// in a rule's directory part (".git", ".git/hooks", "secrets") is refused;
// a symlink to a directory elsewhere can still show that directory's
// names under a path a glob with a directory part covers.
package supervisor
