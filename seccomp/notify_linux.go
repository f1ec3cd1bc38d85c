package seccomp

import (
	"golang.org/x/sys/unix"
)

// retNotify hands the call to the listener (Linux 5.0). Its precedence is
// below ERRNO: were a deny-only filter stacked with a notifying one, the
// errno would win and nothing would be notified, which is why Notify
// changes the actions of this one filter instead of adding a second.
const retNotify = unix.SECCOMP_RET_USER_NOTIF

// Call is what the listener must know about one system call the filter
// notifies.
type Call struct {
	// Name is the system call's name ("socket", "openat").
	Name string
	// Errno is the answer for a refused call: the errno the deny-only
	// filter returns for it (EPERM; ENOSYS for clone3). Zero marks an
	// observed filesystem call, which the listener must let run
	// (SECCOMP_USER_NOTIF_FLAG_CONTINUE), or a call notified for its mode
	// alone (Mode).
	Errno unix.Errno
	// FS describes an observed call's arguments; nil for refused calls.
	FS *FSCall
	// Bind marks bind(2) under Options.CheckBinds: the listener must
	// refuse it for an AF_UNIX socket and may perform it otherwise; it
	// must never answer CONTINUE, since the caller could swap the
	// descriptor or the address meanwhile.
	Bind bool
	// Mode, for a call that can set a file's mode, is the check the
	// listener makes before anything else: a call whose mode has any
	// ModeCheck.Refused bit must be answered EPERM (and may be recorded),
	// whatever FS and Errno say; the filter notifies the call for that
	// reason alone when neither is set. nil for other calls.
	Mode *ModeCheck
}

// FSOp is what an observed filesystem call does to its path.
type FSOp int

const (
	OpOpen   FSOp = iota + 1 // open: the flags say read, write or create
	OpCreate                 // mkdir, mknod, symlink, link's new name
	OpUnlink                 // unlink, rmdir
	OpRename                 // rename: unlink at Path, create at Path2
	OpData                   // truncate
	OpMode                   // chmod
	OpOwner                  // chown
	OpTimes                  // utimes
	OpXattr                  // setxattr, removexattr
	OpUmask                  // umask: no path; notified with EmulateCreates
)

// creates reports whether op is one of the calls EmulateCreates notifies
// under opts (only renames with KernelNames).
func creates(opts Options, op FSOp) bool {
	if opts.KernelNames {
		return op == OpRename
	}
	return op == OpOpen || op == OpCreate || op == OpRename || op == OpData
}

// umaskCall is the FSCall of umask(2), whose only argument is the mask.
var umaskCall = FSCall{Op: OpUmask, Dirfd: -1, Path: -1, Flags: -1, Dirfd2: -1, Path2: -1}

// FSCall is the argument layout of an observed filesystem call. Indexes
// are into seccomp_data.args; -1 means absent.
type FSCall struct {
	Op FSOp
	// Dirfd is the directory a relative Path is resolved against; -1
	// means the working directory (the pre-*at calls).
	Dirfd, Path int
	// Flags holds the open flags; -1 when the call has none.
	// FlagsInHow means they are the first u64 of openat2's struct
	// open_how, whose address is args[2].
	Flags int
	// Dirfd2 and Path2 are the second name of rename and link; -1 if none.
	Dirfd2, Path2 int
}

// FlagsInHow marks openat2, whose flags are in memory (FSCall.Flags).
const FlagsInHow = -2

// writeFlags are the open flags that make an open write-intent: any of
// them can create, change or truncate a file. O_TMPFILE needs O_WRONLY or
// O_RDWR, so it is covered.
const writeFlags = unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC

// notifyRules turns every refusal of rs into a notification and, when
// asked, adds the observed filesystem calls.
func notifyRules(rs []rule, opts Options, s *abi) ([]rule, error) {
	out := make([]rule, 0, len(rs))
	for _, r := range rs {
		if !notified(r) {
			out = append(out, r)
			continue
		}
		r.action = retNotify
		out = append(out, r)
	}
	if checkBinds(opts) {
		out = append(out, rule{name: "bind", nr: uint32(unix.SYS_BIND), action: retNotify})
	}
	observe := opts.ObserveWrites || opts.ObserveReads
	if !observe && !opts.EmulateCreates {
		return notifyModes(out, opts, s)
	}
	if opts.EmulateCreates {
		out = append(out, rule{name: "umask", nr: uint32(unix.SYS_UMASK), action: retNotify})
	}
	for nr, c := range fsCalls() {
		if !observe && !creates(opts, c.call.Op) {
			continue
		}
		r := rule{name: c.name, nr: nr, action: retNotify}
		// if nr == openat && (u32)args[flags] & (O_WRONLY|O_RDWR|O_CREAT|O_TRUNC) != 0 {
		//	return USER_NOTIF
		// }
		// Flags are an int: the low word holds all of them. With
		// ObserveReads every open is notified, whatever its flags.
		if c.call.Op == OpOpen && c.call.Flags >= 0 && !opts.ObserveReads {
			r.args = []argCheck{{arg: c.call.Flags, val: writeFlags}}
		}
		out = append(out, r)
	}
	return notifyModes(out, opts, s)
}

// notified reports whether a refusal goes to the listener. clone3 keeps
// its plain ENOSYS: it is not a refusal but the signal that makes libc and
// Go fall back to clone, which every process start would otherwise pay a
// round trip and a false record for. A clone3 meant to create a namespace
// comes back as a clone with the same flags, and that one is notified.
func notified(r rule) bool { return r.action != retENOSYS }

// Table returns, by system call number, every call the filter for opts
// notifies, with how the listener must answer it. It is empty unless
// opts.Notify.
func Table(opts Options) (map[uint32]Call, error) {
	s, err := nativeABI()
	if err != nil {
		return nil, err
	}
	t := map[uint32]Call{}
	if !opts.Notify {
		return t, nil
	}
	for _, r := range rules(opts, s) {
		if !notified(r) {
			continue
		}
		t[r.nr] = Call{Name: r.name, Errno: unix.Errno(r.action & unix.SECCOMP_RET_DATA)}
	}
	observe := opts.ObserveWrites || opts.ObserveReads
	if observe || opts.EmulateCreates {
		for nr, c := range fsCalls() {
			if !observe && !creates(opts, c.call.Op) {
				continue
			}
			cc := c.call
			t[nr] = Call{Name: c.name, FS: &cc}
		}
	}
	if opts.EmulateCreates {
		uc := umaskCall
		t[uint32(unix.SYS_UMASK)] = Call{Name: "umask", FS: &uc}
	}
	if checkBinds(opts) {
		t[uint32(unix.SYS_BIND)] = Call{Name: "bind", Bind: true}
	}
	for _, m := range s.modeArgs {
		c, ok := t[m.nr]
		if !ok {
			c = Call{Name: m.name}
		}
		mc := modeCheck(opts, m)
		c.Mode = &mc
		t[m.nr] = c
	}
	return t, nil
}

// checkBinds reports whether the filter for opts notifies bind(2).
func checkBinds(opts Options) bool {
	return opts.Notify && opts.CheckBinds && !opts.AllowUnixSockets
}
