package supervisor

// The notification loop: receive, dispatch, respond. One thread answers
// every notification of the sandbox (for the creation calls, that is what
// serializes them); only opens that wait answer from threads of their own
// (wait_linux.go).

import (
	"log/slog"
	"time"

	"github.com/srt-go/srt/seccomp"
	"github.com/srt-go/srt/violation"
	"golang.org/x/sys/unix"
)

// dispatcher answers the notifications, on the loop's thread.
type dispatcher struct {
	table map[uint32]seccomp.Call
	on    func(violation.Violation)
	log   *slog.Logger
	obs   *observer
	// observe records the refusals of observed calls
	// (seccomp.Options.ObserveWrites).
	observe bool
	// cr performs the creation calls (seccomp.Options.EmulateCreates);
	// nil without them.
	cr *creator
	// kernelNames: the kernel checks the names (seccomp.Options.
	// KernelNames); of the creation calls only renames and umask are
	// the supervisor's, an observed open or mkdir runs (CONTINUE) under
	// the kernel's check.
	kernelNames bool
	// seen holds the seccomp refusals already reported.
	seen map[seen]struct{}
}

type seen struct {
	pid         int
	exe, target string
}

// loop answers notifications on listener fd until the filter has no task
// left (POLLHUP, Linux 5.8) or something is written to stop. One thread
// blocks in poll; each notification costs a wake-up, two ioctls and, for
// an observed call, one process_vm_readv.
func (d *dispatcher) loop(fd, stop int) {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(stop), Events: unix.POLLIN}}
	for {
		pfd[0].Revents, pfd[1].Revents = 0, 0
		if _, err := unix.Poll(pfd, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			d.log.Debug("seccomp listener", "error", err)
			return
		}
		if pfd[1].Revents != 0 {
			return
		}
		if pfd[0].Revents&unix.POLLIN != 0 {
			if nt, err := seccomp.Receive(fd); err == nil {
				d.handle(fd, nt)
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
// unknown number is refused with EPERM. A refused mode is judged first,
// before anything could perform the call (mode_linux.go).
func (d *dispatcher) handle(fd int, nt seccomp.Notification) {
	c, ok := d.table[uint32(nt.Data.Nr)]
	if !ok {
		seccomp.Respond(fd, nt.ID, unix.EPERM)
		return
	}
	if c.Mode != nil {
		if rule, bad := refusedMode(c.Mode, nt.Data.Args); bad {
			d.refuseMode(fd, nt, c, rule)
			return
		}
		if c.FS == nil && c.Errno == 0 {
			// Notified for its mode alone, which is allowed: the
			// deny-only filter would let it run too.
			seccomp.Respond(fd, nt.ID, 0)
			return
		}
	}
	if c.Bind {
		answerBind(fd, nt, d.on)
		return
	}
	if c.FS == nil {
		d.refuse(fd, nt, c)
		return
	}
	if d.cr != nil && d.emulate(fd, nt, c) {
		return
	}
	if !d.observe {
		seccomp.Respond(fd, nt.ID, 0) // unlink, chmod…: no name comes into being
		return
	}
	ev := d.obs.observedCall(nt, c)
	seccomp.Respond(fd, nt.ID, 0) // CONTINUE: the mounts decide
	d.obs.classify(ev)
}

// refuse answers a call the filter refuses with its errno and records it.
//
// The record goes out before the answer: the caller, once answered, may
// exit at once, and a reader that follows the command (srtd's exec
// stream) must have the record by then.
func (d *dispatcher) refuse(fd int, nt seccomp.Notification, c seccomp.Call) {
	defer seccomp.Respond(fd, nt.ID, c.Errno)
	nsPID, exe := procInfo(int(nt.PID))
	if nsPID == 1 {
		return // PID 1's own call, not the command's
	}
	action, target := syscallTarget(c.Name, nt.Data.Args)
	// One record per process and target: glibc, for one, probes
	// nscd's socket with socket(AF_UNIX) on every user lookup.
	k := seen{nsPID, exe, target}
	if _, dup := d.seen[k]; dup {
		return
	}
	if len(d.seen) > 4096 {
		clear(d.seen)
	}
	d.seen[k] = struct{}{}
	d.on(violation.Violation{
		Time: time.Now(), Action: action, Target: target,
		Reason: "seccomp: " + unix.ErrnoName(c.Errno), PID: nsPID, Exe: exe,
	})
}

// emulate handles a creation call; false means it is not one (the caller
// answers as before).
func (d *dispatcher) emulate(fd int, nt seccomp.Notification, c seccomp.Call) bool {
	pid := int(nt.PID)
	if d.kernelNames && c.Name != "umask" && (c.FS == nil || c.FS.Op != seccomp.OpRename) {
		return false
	}
	if d.kernelNames {
		// The mkdirs and symlinks that empty the directory cache are
		// not seen on this path: a cached path could lead elsewhere.
		d.cr.res.forgetDirs()
	}
	switch c.Name {
	case "umask":
		// The mask is an argument, not memory: letting the call run is
		// race-free. Noted before it takes effect (umask_linux.go).
		d.cr.umasks.called(pid, nt.Data.Args[0])
		seccomp.Respond(fd, nt.ID, 0)
		return true
	case "openat2":
		// Its flags are in the caller's memory, which another thread
		// can change after srt has read them: a call srt let run as a
		// read could create when the kernel reads them again. So none
		// runs: ENOSYS, as on a kernel before 5.6, to which every
		// caller of openat2 must fall back (with openat) anyway.
		seccomp.Respond(fd, nt.ID, unix.ENOSYS)
		return true
	}
	a, ok := decode(c.Name, nt.Data.Args)
	if !ok {
		return false
	}
	if a.op == "open" && a.flags&writeOpenFlags == 0 {
		return false // a read (ObserveReads): the mounts decide, as before
	}
	v := d.cr.perform(fd, nt, a)
	if v.rule != "" {
		v.errno = unix.EACCES
	}
	if v.val == answered {
		return true
	}
	nsPID, exe := 0, ""
	action := violation.FileWriteCreate
	if v.rule != "" {
		nsPID, exe = procInfo(pid) // while the caller waits
		if (a.op == "open" || a.op == "truncate") && d.cr.res.isFile(v.target) {
			action = violation.FileWriteData
		}
	}
	// A call the mounts refused (a read-only path, a mount point) is
	// recorded as the observer records the calls it lets run; classified
	// now, while the caller waits and its files are as they were (git
	// removes its config.lock as soon as the rename fails).
	if e := v.errno; v.rule == "" && d.observe && (e == unix.EROFS || e == unix.EACCES || e == unix.EPERM || e == unix.EBUSY || e == unix.EXDEV) {
		ev := d.obs.observedCall(nt, c)
		if ev.path != "" && d.obs.interesting(ev) {
			if r, ok := d.obs.refusal(ev); ok {
				d.on(r)
			}
		}
	}
	if v.errno != 0 {
		seccomp.Respond(fd, nt.ID, v.errno)
	} else {
		seccomp.RespondValue(fd, nt.ID, v.val)
	}
	if v.rule != "" && nsPID != 1 {
		d.on(violation.Violation{Time: time.Now(), Action: action, Target: v.target,
			Reason: v.rule, PID: nsPID, Exe: exe})
	}
	return true
}
