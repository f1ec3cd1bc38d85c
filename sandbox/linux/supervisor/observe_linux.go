package supervisor

// Observed filesystem calls (seccomp.Options.ObserveWrites, ObserveReads)
// and the refusals they come to: which the mounts refuse is decided off
// the caller's path, from the policy the mounts were built from, into a
// violation.Violation.

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/sandbox/linux/fsplan"
	"github.com/srt-go/srt/seccomp"
	"github.com/srt-go/srt/violation"
	"golang.org/x/sys/unix"
)

// observer classifies observed calls on a goroutine of its own (run), fed
// by the loop through fsq.
type observer struct {
	pol    *policy.Policy
	tmpdir string
	// m places the host's trees in the sandbox: a call is judged at the
	// host path it reaches.
	m  fsplan.Mapping
	on func(violation.Violation)
	// fsq carries the observed calls to the classifier; the loop closes
	// it when it ends, and done is closed once the classifier has
	// reported the last of them.
	fsq  chan fsEvent
	done chan struct{}
	// dirCache maps directories to their resolved form, for the
	// classifier (its goroutine, and the loop when it classifies a call
	// it performed and the mounts refused); dirMu guards it.
	dirMu    sync.Mutex
	dirCache map[string]string
}

func newObserver(pol *policy.Policy, tmpdir string, m fsplan.Mapping, on func(violation.Violation)) *observer {
	return &observer{pol: pol, tmpdir: tmpdir, m: m, on: on, fsq: make(chan fsEvent, 4096),
		done: make(chan struct{}), dirCache: map[string]string{}}
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

// run classifies the observed calls until fsq is closed.
func (ob *observer) run() {
	defer close(ob.done)
	for ev := range ob.fsq {
		if v, ok := ob.refusal(ev); ok {
			ob.on(v)
		}
	}
}

// observedCall copies what the classifier needs out of the caller of an
// observed filesystem call, while it waits.
func (ob *observer) observedCall(nt seccomp.Notification, c seccomp.Call) fsEvent {
	hostPID := int(nt.PID)
	ev := fsEvent{call: c.FS, name: c.Name, observedTime: time.Now()}
	a := nt.Data.Args
	ev.path = callPath(hostPID, a, c.FS.Dirfd, c.FS.Path)
	if c.FS.Path2 >= 0 {
		ev.path2 = callPath(hostPID, a, c.FS.Dirfd2, c.FS.Path2)
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
	if ev.path != "" && ob.maybeRefused(ev) {
		ev.pid, ev.exe = procInfo(hostPID)
	}
	return ev
}

// classify hands an observed call to the classifier, which records it if
// the policy refused it.
func (ob *observer) classify(ev fsEvent) {
	if ev.path == "" || !ob.interesting(ev) {
		return
	}
	select {
	case ob.fsq <- ev:
	default:
		// The classifier is behind by thousands of calls; classify here
		// rather than drop a record.
		if v, ok := ob.refusal(ev); ok {
			ob.on(v)
		}
	}
}

// interesting is a cheap first cut, on the caller's path: a path that is
// plainly inside the private TMPDIR, /dev or /proc is never recorded.
func (ob *observer) interesting(ev fsEvent) bool {
	for _, p := range []string{ev.path, ev.path2} {
		if p == "" {
			continue
		}
		if !policy.Within(p, ob.tmpdir) && !policy.Within(p, "/dev") && !policy.Within(p, "/proc") && !ob.m.Private(p) {
			return true
		}
	}
	return false
}

// refusal decides whether the mounts refuse an observed call, from the
// policy they were built from: writes outside the write roots or into a
// denied or protected path, opens of a read-denied path. A call that
// would fail anyway (creating a name that exists, writing one that does
// not) is not a refusal.
func (ob *observer) refusal(ev fsEvent) (violation.Violation, bool) {
	v := violation.Violation{Time: ev.observedTime}
	if ob.plainlyWritable(ev) {
		return v, false
	}
	write := func(action, p string) bool {
		if policy.Within(p, ob.tmpdir) || policy.Within(p, "/dev") || policy.Within(p, "/proc") || ob.m.Private(p) {
			return false
		}
		res := ob.resolve(p)
		if ob.pol.Writable(res) || policy.Within(res, ob.tmpdir) || policy.Within(res, "/dev") || policy.Within(res, "/proc") {
			return false
		}
		v.Action, v.Target, v.Reason = action, p, ob.writeRule(res)
		return true
	}
	exists := func(p string) bool { _, err := os.Lstat(ob.resolve(p)); return err == nil }
	var ok bool
	switch ev.call.Op {
	case seccomp.OpOpen:
		const w = unix.O_WRONLY | unix.O_RDWR | unix.O_TRUNC
		switch {
		case ev.flags&(w|unix.O_CREAT) == 0:
			res := ob.resolve(ev.path)
			if !ob.pol.Readable(res) {
				v.Action, v.Target, v.Reason = violation.FileReadData, ev.path, ob.readRule(res)
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
func (ob *observer) maybeRefused(ev fsEvent) bool {
	read := ev.call.Op == seccomp.OpOpen && ev.flags&(unix.O_WRONLY|unix.O_RDWR|unix.O_TRUNC|unix.O_CREAT) == 0
	for _, p := range []string{ev.path, ev.path2} {
		if p == "" {
			continue
		}
		h, _ := ob.m.Host(p)
		if read && !ob.pol.Readable(h) || !read && !ob.pol.Writable(h) {
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
func (ob *observer) plainlyWritable(ev fsEvent) bool {
	if ev.call.Op == seccomp.OpOpen && ev.flags&(unix.O_WRONLY|unix.O_RDWR|unix.O_TRUNC|unix.O_CREAT) == 0 {
		return false // a read: checked against denyRead
	}
	for _, p := range []string{ev.path, ev.path2} {
		if p == "" {
			continue
		}
		ob.dirMu.Lock()
		dir, ok := ob.dirCache[filepath.Dir(p)]
		ob.dirMu.Unlock()
		if !ok {
			dir = ob.resolve(filepath.Dir(p))
			ob.dirMu.Lock()
			if len(ob.dirCache) > 4096 {
				clear(ob.dirCache)
			}
			ob.dirCache[filepath.Dir(p)] = dir
			ob.dirMu.Unlock()
		}
		if !ob.pol.Writable(filepath.Join(dir, filepath.Base(p))) {
			return false
		}
	}
	return true
}

// resolve is the host path sandbox path p reaches, symbolic links
// resolved on the host.
func (ob *observer) resolve(p string) string {
	h, _ := ob.m.Host(p)
	return policy.Resolve(h)
}

// writeRule names the rule that makes res read-only.
func (ob *observer) writeRule(res string) string {
	if r := ruleFor(ob.pol.DenyWrite, res); r != "" {
		return r
	}
	if !ob.pol.Readable(res) {
		return ob.readRule(res)
	}
	return "outside the write roots"
}

// readRule names the denyRead rule that hides res.
func (ob *observer) readRule(res string) string {
	if r := ruleFor(ob.pol.DenyRead, res); r != "" {
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
