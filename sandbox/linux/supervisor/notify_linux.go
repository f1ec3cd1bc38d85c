package supervisor

// Violations from the kernel side: the seccomp filter's refusals and the
// filesystem calls the mounts refuse.
//
// Where the notifying filter lives. There is one filter, and PID 1
// installs it on itself with TSYNC exactly as before (the command and
// everything it starts inherit it); with Options.Notify its refusals are
// SECCOMP_RET_USER_NOTIF instead of an errno. A second, notify-only filter
// stacked on the deny-only one would never fire: ERRNO takes precedence
// over USER_NOTIF when filters disagree. PID 1 cannot deadlock on its own
// filter because it does not answer the notifications: srt does, from
// outside the sandbox. PID 1 gets the listener from
// seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER), sends it to srt over an
// inherited SOCK_SEQPACKET socket (SCM_RIGHTS, like the proxy listeners)
// and closes its own copy before starting the command; a notified call
// made in between simply waits for srt. PID 1 makes no refused call after
// the filter is on (it looks the command up, forks, execs and reaps); if
// it ever did, srt would answer it like any other, and does not record
// calls from the sandbox's PID 1.
//
// Fail closed. The listener's only holder is srt. If srt dies or closes
// it, the kernel fails every notified call with ENOSYS without running it
// (seccomp_do_user_notification; seccomp.TestNotifyFailClosed): refused
// calls stay refused, and observed filesystem calls fail too. In practice
// srt's death also kills the sandbox (--die-with-parent, PDEATHSIG).
// If the kernel cannot combine TSYNC with a listener (before Linux 5.7),
// PID 1 installs the deny-only filter and srt records no seccomp or
// filesystem violations; enforcement is unchanged.
//
// Filesystem observation (Config.ObserveFilesystem) adds notifications
// for the write-intent calls (and, when filesystem.denyRead is not empty,
// every open), answered CONTINUE as soon as srt has copied the path out of
// the caller's memory: the mounts still decide, so observation never
// weakens enforcement, and a racing caller can at worst mislead the
// record, never the sandbox. Which of those calls the mounts refuse is
// decided afterwards, off the caller's path, from the policy the mounts
// were built from (refusal).

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/sandbox/linux/wire"
	"github.com/srt-go/srt/seccomp"
	"github.com/srt-go/srt/violation"
	"golang.org/x/sys/unix"
)

// Supervisor is srt's side: it answers the sandbox's notifications and
// reports refusals through on.
type Supervisor struct {
	conn     *os.File // srt's end of the socket pair; the listener arrives on it
	table    map[uint32]seccomp.Call
	pol      *policy.Policy
	tmpdir   string
	on       func(violation.Violation)
	log      *slog.Logger
	stopR    *os.File
	stopW    *os.File
	fsq      chan fsEvent
	loopDone chan struct{}
	fsDone   chan struct{}
	served   bool // serve was called; close waits for it
	// seen holds the seccomp refusals already reported; loop goroutine only.
	seen map[seen]struct{}
	// dirCache maps directories to their resolved form, for the
	// classifier (its goroutine, and the loop when it classifies a call
	// it performed and the mounts refused); dirMu guards it.
	dirMu    sync.Mutex
	dirCache map[string]string
	once     sync.Once
	// cr performs the creation calls (filesystem.enforceNamesAtCreation,
	// create_linux.go); nil without it.
	cr *creator
	// observe records the refusals of observed calls (ObserveFilesystem).
	observe bool
	// pending counts the answers given from other goroutines (openWaiting);
	// stopping is closed when the loop ends, and the listener is closed
	// only after pending is done.
	pending  sync.WaitGroup
	stopping chan struct{}
	// waiters counts the opens waiting on threads of their own
	// (openWaiting).
	waiters atomic.Int32
}

type seen struct {
	pid         int
	exe, target string
}

// fsEvent is an observed filesystem call, copied out of the caller.
type fsEvent struct {
	call         *seccomp.FSCall
	name         string
	path, path2  string // absolute, as the caller spelled them
	flags        uint64
	pid          int // in the sandbox; 0 when the path was plainly allowed
	exe          string
	observedTime time.Time
}

// Config says what a Supervisor answers for.
type Config struct {
	// Seccomp are the options of the filter PID 1 installs (Notify set):
	// the notified calls are seccomp.Table's, ObserveWrites/ObserveReads
	// make the supervisor record the refusals of the observed calls, and
	// EmulateCreates makes it perform the creation calls under the name
	// rules (RefuseGroupWrite then also takes group write out of every
	// creation mode).
	Seccomp seccomp.Options
	// Policy is the compiled policy the mounts were built from.
	Policy *policy.Policy
	// TmpDir is the sandbox's private TMPDIR, exempt from the name rules
	// and never recorded.
	TmpDir string
	// OnViolation receives each refusal, from one goroutine at a time; it
	// must not block. It must not be nil.
	OnViolation func(violation.Violation)
	// Logger receives debug lines; it must not be nil.
	Logger *slog.Logger
}

// New returns a Supervisor and the socket end to pass to PID 1, which
// sends the listener on it (sandbox/linux/wire).
func New(cfg Config) (*Supervisor, *os.File, error) {
	n, end, err := newNotifier(cfg.Seccomp, cfg.Policy, cfg.TmpDir, cfg.OnViolation, cfg.Logger)
	if err != nil {
		return nil, nil, err
	}
	n.observe = cfg.Seccomp.ObserveWrites
	if cfg.Seccomp.EmulateCreates {
		n.cr = newCreator(cfg.Policy, cfg.TmpDir)
		n.cr.noWrite = unix.S_IWOTH
		if cfg.Seccomp.RefuseGroupWrite {
			n.cr.noWrite |= unix.S_IWGRP
		}
	}
	return n, end, nil
}

// newNotifier returns the notifier and the socket end to pass to PID 1.
func newNotifier(opts seccomp.Options, pol *policy.Policy, tmpdir string, on func(violation.Violation), lg *slog.Logger) (*Supervisor, *os.File, error) {
	table, err := seccomp.Table(opts)
	if err != nil {
		return nil, nil, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, nil, err
	}
	n := &Supervisor{
		conn: os.NewFile(uintptr(fds[0]), "seccomp-notify"), table: table, pol: pol, tmpdir: tmpdir,
		on: on, log: lg, stopR: r, stopW: w, fsq: make(chan fsEvent, 4096),
		loopDone: make(chan struct{}), fsDone: make(chan struct{}), dirCache: map[string]string{},
		stopping: make(chan struct{}),
		seen:     map[seen]struct{}{},
	}
	return n, os.NewFile(uintptr(fds[1]), "seccomp-notify"), nil
}

// Serve receives the listener and answers notifications until the
// sandbox ends or close is called.
func (n *Supervisor) Serve() {
	n.served = true
	go func() {
		defer close(n.fsDone)
		for ev := range n.fsq {
			if v, ok := n.refusal(ev); ok {
				n.on(v)
			}
		}
	}()
	go func() {
		defer close(n.loopDone)
		defer close(n.fsq)
		fd, err := wire.RecvListener(n.conn)
		if err != nil || fd < 0 {
			if err != nil {
				n.log.Debug("seccomp listener", "error", err)
			}
			return
		}
		defer unix.Close(fd)
		defer n.pending.Wait()
		defer close(n.stopping)
		if n.cr != nil {
			defer n.cr.close()
			if err := prepareCreatorThread(); err != nil {
				// Without its own umask and credentials the thread
				// cannot create for the command: fail every call
				// closed (closing the listener: ENOSYS) rather than
				// create with srt's.
				n.log.Debug("seccomp listener: creation thread", "error", err)
				return
			}
		}
		seccomp.SyncWakeUp(fd) // Linux 6.6+; harmless to lack
		n.loop(fd)
	}()
}

// loop answers notifications until the filter has no task left
// (POLLHUP, Linux 5.8) or close writes the stop pipe. One thread blocks
// in poll; each notification costs a wake-up, two ioctls and, for an
// observed call, one process_vm_readv.
func (n *Supervisor) loop(fd int) {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(n.stopR.Fd()), Events: unix.POLLIN}}
	for {
		pfd[0].Revents, pfd[1].Revents = 0, 0
		if _, err := unix.Poll(pfd, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			n.log.Debug("seccomp listener", "error", err)
			return
		}
		if pfd[1].Revents != 0 {
			return
		}
		if pfd[0].Revents&unix.POLLIN != 0 {
			if nt, err := seccomp.Receive(fd); err == nil {
				n.handle(fd, nt)
			}
			continue
		}
		if pfd[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
			return
		}
	}
}

// handle answers one notification. A refused call gets the deny-only
// filter's errno and is never allowed to run, whatever else fails here; an
// unknown number is refused with EPERM.
func (n *Supervisor) handle(fd int, nt seccomp.Notification) {
	c, ok := n.table[uint32(nt.Data.Nr)]
	if !ok {
		seccomp.Respond(fd, nt.ID, unix.EPERM)
		return
	}
	if c.Bind {
		n.bind(fd, nt)
		return
	}
	hostPID := int(nt.PID)
	if c.FS == nil {
		nsPID, exe := procInfo(hostPID)
		seccomp.Respond(fd, nt.ID, c.Errno)
		if nsPID == 1 {
			return // PID 1's own call, not the command's
		}
		action, target := syscallTarget(c.Name, nt.Data.Args)
		// One record per process and target: glibc, for one, probes
		// nscd's socket with socket(AF_UNIX) on every user lookup.
		k := seen{nsPID, exe, target}
		if _, dup := n.seen[k]; dup {
			return
		}
		if len(n.seen) > 4096 {
			clear(n.seen)
		}
		n.seen[k] = struct{}{}
		n.on(violation.Violation{
			Time: time.Now(), Action: action, Target: target,
			Reason: "seccomp: " + unix.ErrnoName(c.Errno), PID: nsPID, Exe: exe,
		})
		return
	}
	if n.cr != nil && n.emulate(fd, nt, c) {
		return
	}
	if !n.observe {
		seccomp.Respond(fd, nt.ID, 0) // unlink, chmod…: no name comes into being
		return
	}
	ev := n.observedCall(nt, c)
	seccomp.Respond(fd, nt.ID, 0) // CONTINUE: the mounts decide
	n.classify(ev)
}

// observedCall copies what the classifier needs out of the caller of an
// observed filesystem call, while it waits.
func (n *Supervisor) observedCall(nt seccomp.Notification, c seccomp.Call) fsEvent {
	hostPID := int(nt.PID)
	ev := fsEvent{call: c.FS, name: c.Name, observedTime: time.Now()}
	a := nt.Data.Args
	ev.path = n.callPath(hostPID, a, c.FS.Dirfd, c.FS.Path)
	if c.FS.Path2 >= 0 {
		ev.path2 = n.callPath(hostPID, a, c.FS.Dirfd2, c.FS.Path2)
	}
	switch {
	case c.FS.Flags >= 0:
		ev.flags = uint64(uint32(a[c.FS.Flags]))
	case c.FS.Flags == seccomp.FlagsInHow:
		var b [8]byte
		if readMem(hostPID, uintptr(a[2]), b[:]) == nil {
			ev.flags = binary.NativeEndian.Uint64(b[:])
		}
	}
	// A path that is not plainly allowed (a prefix test against the
	// policy's lists, no system call) may be refused: name the caller now,
	// while it waits, since it may be gone by the time the classifier
	// looks. Writes inside a write root, the hot path, skip this.
	if ev.path != "" && n.maybeRefused(ev) {
		ev.pid, ev.exe = procInfo(hostPID)
	}
	return ev
}

// classify hands an observed call to the classifier, which records it if
// the policy refused it.
func (n *Supervisor) classify(ev fsEvent) {
	if ev.path == "" || !n.interesting(ev) {
		return
	}
	select {
	case n.fsq <- ev:
	default:
		// The classifier is behind by thousands of calls; classify here
		// rather than drop a record.
		if v, ok := n.refusal(ev); ok {
			n.on(v)
		}
	}
}

// interesting is a cheap first cut, on the caller's path: a path that is
// plainly inside the private TMPDIR, /dev or /proc is never recorded.
func (n *Supervisor) interesting(ev fsEvent) bool {
	for _, p := range []string{ev.path, ev.path2} {
		if p == "" {
			continue
		}
		if !policy.Within(p, n.tmpdir) && !policy.Within(p, "/dev") && !policy.Within(p, "/proc") {
			return true
		}
	}
	return false
}

// callPath returns the absolute path a call names: its path argument
// joined to the directory of its dirfd argument (or the caller's working
// directory). A NULL path (utimensat on a descriptor) names the
// descriptor's own file. "" when it cannot be read.
func (n *Supervisor) callPath(pid int, args [6]uint64, dirfdArg, pathArg int) string {
	var p string
	if addr := uintptr(args[pathArg]); addr != 0 {
		s, err := readString(pid, addr)
		if err != nil {
			return ""
		}
		p = s
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	dirfd := int32(unix.AT_FDCWD)
	if dirfdArg >= 0 {
		dirfd = int32(uint32(args[dirfdArg]))
	}
	link := "/proc/" + strconv.Itoa(pid) + "/cwd"
	if dirfd != unix.AT_FDCWD {
		link = "/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(int(dirfd))
	}
	dir, err := os.Readlink(link)
	if err != nil || !filepath.IsAbs(dir) {
		return ""
	}
	return filepath.Join(dir, p)
}

// refusal decides whether the mounts refuse an observed call, from the
// policy they were built from: writes outside the write roots or into a
// denied or protected path, opens of a read-denied path. A call that
// would fail anyway (creating a name that exists, writing one that does
// not) is not a refusal.
func (n *Supervisor) refusal(ev fsEvent) (violation.Violation, bool) {
	v := violation.Violation{Time: ev.observedTime}
	if n.plainlyWritable(ev) {
		return v, false
	}
	write := func(action, p string) bool {
		res := policy.Resolve(p)
		if n.pol.Writable(res) || policy.Within(res, n.tmpdir) || policy.Within(res, "/dev") || policy.Within(res, "/proc") {
			return false
		}
		v.Action, v.Target, v.Reason = action, p, n.writeRule(res)
		return true
	}
	exists := func(p string) bool { _, err := os.Lstat(policy.Resolve(p)); return err == nil }
	var ok bool
	switch ev.call.Op {
	case seccomp.OpOpen:
		const w = unix.O_WRONLY | unix.O_RDWR | unix.O_TRUNC
		switch {
		case ev.flags&(w|unix.O_CREAT) == 0:
			res := policy.Resolve(ev.path)
			if !n.pol.Readable(res) {
				v.Action, v.Target, v.Reason = violation.FileReadData, ev.path, n.readRule(res)
				ok = true
			}
		case exists(ev.path):
			ok = ev.flags&w != 0 && write(violation.FileWriteData, ev.path)
		default:
			ok = ev.flags&unix.O_CREAT != 0 && write(violation.FileWriteCreate, ev.path)
		}
	case seccomp.OpCreate:
		ok = !exists(ev.path) && write(violation.FileWriteCreate, ev.path)
	case seccomp.OpUnlink:
		ok = exists(ev.path) && write(violation.FileWriteUnlink, ev.path)
	case seccomp.OpRename:
		ok = exists(ev.path) && (write(violation.FileWriteUnlink, ev.path) || write(violation.FileWriteCreate, ev.path2))
	case seccomp.OpData:
		ok = exists(ev.path) && write(violation.FileWriteData, ev.path)
	case seccomp.OpMode:
		ok = exists(ev.path) && write(violation.FileWriteMode, ev.path)
	case seccomp.OpOwner:
		ok = exists(ev.path) && write(violation.FileWriteOwner, ev.path)
	case seccomp.OpTimes:
		ok = exists(ev.path) && write(violation.FileWriteTimes, ev.path)
	case seccomp.OpXattr:
		ok = exists(ev.path) && write(violation.FileWriteXattr, ev.path)
	}
	v.PID, v.Exe = ev.pid, ev.exe
	return v, ok && ev.pid != 1
}

// maybeRefused is the caller-side first cut: false when every path of ev
// is, as spelled, inside a write root and outside every deny (or, for a
// read, readable), so the call is most likely allowed.
func (n *Supervisor) maybeRefused(ev fsEvent) bool {
	read := ev.call.Op == seccomp.OpOpen && ev.flags&(unix.O_WRONLY|unix.O_RDWR|unix.O_TRUNC|unix.O_CREAT) == 0
	for _, p := range []string{ev.path, ev.path2} {
		if p == "" {
			continue
		}
		if read && !n.pol.Readable(p) || !read && !n.pol.Writable(p) {
			return true
		}
	}
	return false
}

// plainlyWritable is the classifier's fast path for the common case, a
// write inside a write root: the call's directory, symlinks resolved
// (cached), is writable and readable, so the mounts let it through. A
// last component that is a symlink pointing out of the write roots is
// not followed here, so such a write goes unrecorded (it is still
// refused).
func (n *Supervisor) plainlyWritable(ev fsEvent) bool {
	if ev.call.Op == seccomp.OpOpen && ev.flags&(unix.O_WRONLY|unix.O_RDWR|unix.O_TRUNC|unix.O_CREAT) == 0 {
		return false // a read: checked against denyRead
	}
	for _, p := range []string{ev.path, ev.path2} {
		if p == "" {
			continue
		}
		n.dirMu.Lock()
		dir, ok := n.dirCache[filepath.Dir(p)]
		n.dirMu.Unlock()
		if !ok {
			dir = policy.Resolve(filepath.Dir(p))
			n.dirMu.Lock()
			if len(n.dirCache) > 4096 {
				clear(n.dirCache)
			}
			n.dirCache[filepath.Dir(p)] = dir
			n.dirMu.Unlock()
		}
		if !n.pol.Writable(filepath.Join(dir, filepath.Base(p))) {
			return false
		}
	}
	return true
}

// writeRule names the rule that makes res read-only.
func (n *Supervisor) writeRule(res string) string {
	if r := ruleFor(n.pol.DenyWrite, res); r != "" {
		return r
	}
	if !n.pol.Readable(res) {
		return n.readRule(res)
	}
	return "outside the write roots"
}

// readRule names the denyRead rule that hides res.
func (n *Supervisor) readRule(res string) string {
	if r := ruleFor(n.pol.DenyRead, res); r != "" {
		return r
	}
	return "filesystem.denyRead"
}

// ruleFor returns the Rule of the most specific entry of list covering res.
func ruleFor(list []policy.Path, res string) string {
	best, rule := -1, ""
	for _, e := range list {
		if policy.Within(res, e.Resolved) && len(e.Resolved) > best {
			best, rule = len(e.Resolved), e.Rule
		}
	}
	return rule
}

// syscallTarget names a refused call for its violation.
func syscallTarget(name string, args [6]uint64) (action, target string) {
	switch name {
	case "socket":
		switch uint32(args[0]) {
		case unix.AF_UNIX:
			return violation.SocketUnix, "socket(AF_UNIX)"
		case unix.AF_VSOCK:
			return violation.Syscall, "socket(AF_VSOCK)"
		}
	case "ioctl":
		switch uint32(args[1]) {
		case unix.TIOCSTI:
			return violation.Syscall, "ioctl(TIOCSTI)"
		case unix.TIOCLINUX:
			return violation.Syscall, "ioctl(TIOCLINUX)"
		}
	}
	return violation.Syscall, name
}

// SetTerminal gives the creator the command's pty (an O_PATH descriptor),
// for opens of /dev/tty. Called before serve.
func (n *Supervisor) SetTerminal(tty *os.File) {
	if n.cr == nil || tty == nil {
		return
	}
	// O_PATH: a descriptor that does not hold the terminal open, so the
	// relay still sees the end when the command's last copy is closed.
	if t, err := unix.Open("/proc/self/fd/"+strconv.Itoa(int(tty.Fd())), unix.O_PATH|unix.O_CLOEXEC, 0); err == nil {
		n.cr.ctty = t
	}
}

// Close stops answering (every process of the sandbox must be gone: a
// call notified after this would wait until srt exits) and waits until
// every recorded violation has been reported.
func (n *Supervisor) Close() {
	n.once.Do(func() {
		n.stopW.Write([]byte{0})
		if n.served {
			<-n.loopDone
			<-n.fsDone
		}
		if n.cr != nil {
			n.cr.close() // the loop closes it too; here for a loop that never ran
		}
		n.conn.Close()
		n.stopR.Close()
		n.stopW.Close()
	})
}

