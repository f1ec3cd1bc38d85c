package supervisor

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"

	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/sandbox/linux/fsplan"
	"github.com/srt-go/srt/sandbox/linux/wire"
	"github.com/srt-go/srt/seccomp"
	"github.com/srt-go/srt/violation"
	"golang.org/x/sys/unix"
)

// Config says what a Supervisor answers for.
type Config struct {
	// Seccomp are the options of the filter PID 1 installs (Notify set):
	// the notified calls are seccomp.Table's, ObserveWrites makes the
	// supervisor record the refusals of the observed calls, and
	// EmulateCreates makes it perform the creation calls under the name
	// rules (RefuseGroupWrite then also takes group write out of every
	// creation mode).
	Seccomp seccomp.Options
	// Policy is the compiled policy the mounts were built from.
	Policy *policy.Policy
	// TmpDir is the sandbox's private TMPDIR, exempt from the name rules
	// and never recorded.
	TmpDir string
	// Mapping places the host's trees in the sandbox (fsplan.Plan's):
	// every sandbox path is judged at the host path it reaches, where the
	// policy's rules are written. The zero value is the host view.
	Mapping fsplan.Mapping
	// OnViolation receives each refusal, from the loop's goroutine or the
	// classifier's; it must not block. It must not be nil.
	OnViolation func(violation.Violation)
	// Logger receives debug lines; it must not be nil.
	Logger *slog.Logger
	// BoundingCaps makes the threads that perform the creation calls keep
	// the capabilities of srt's bounding set instead of none
	// (prepareCreatorThread): for a command that runs as root with them,
	// as the microvm guest's workloads do under PID 1's reduced bounding
	// set (microvm/guest, init_linux.go's droppedCaps). Native commands
	// hold no capability: false.
	BoundingCaps bool
}

// Supervisor is srt's side of the sandbox's seccomp filter: it answers
// the notifications and reports refusals through Config.OnViolation.
type Supervisor struct {
	conn     *os.File // srt's end of the socket pair; the listener arrives on it
	log      *slog.Logger
	stopR    *os.File
	stopW    *os.File
	loopDone chan struct{}
	served   bool // Serve was called; Close waits for it
	once     sync.Once
	d        *dispatcher
	obs      *observer
	// cr performs the creation calls; nil without them.
	cr *creator
	// waits are the opens answered from other goroutines; the listener
	// is closed only after they have answered.
	waits *waiters
}

// New returns a Supervisor for cfg and the socket end to pass to PID 1,
// which sends the listener on it (sandbox/linux/wire). Errors are those
// of seccomp.Table, socketpair(2) and pipe(2).
func New(cfg Config) (*Supervisor, *os.File, error) {
	table, err := seccomp.Table(cfg.Seccomp)
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
		conn: os.NewFile(uintptr(fds[0]), "seccomp-notify"), log: cfg.Logger, stopR: r, stopW: w,
		loopDone: make(chan struct{}), obs: newObserver(cfg.Policy, cfg.TmpDir, cfg.Mapping, cfg.OnViolation),
		waits: newWaiters(cfg.BoundingCaps),
	}
	if cfg.Seccomp.EmulateCreates {
		noWrite := uint64(unix.S_IWOTH)
		if cfg.Seccomp.RefuseGroupWrite {
			noWrite |= unix.S_IWGRP
		}
		n.cr = newCreator(cfg.Policy, cfg.TmpDir, cfg.Mapping, noWrite, n.waits)
	}
	n.d = &dispatcher{table: table, on: cfg.OnViolation, log: cfg.Logger, obs: n.obs,
		observe: cfg.Seccomp.ObserveWrites, cr: n.cr, kernelNames: cfg.Seccomp.KernelNames, seen: map[seen]struct{}{}}
	return n, os.NewFile(uintptr(fds[1]), "seccomp-notify"), nil
}

// SetTerminal gives the supervisor the command's pty, for opens of
// /dev/tty (which srt performs with the creation-time rules). Called
// before Serve; tty stays the caller's.
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

// Serve receives the listener and answers notifications, on goroutines of
// its own, until the sandbox ends or Close is called. It returns at once.
func (n *Supervisor) Serve() {
	n.served = true
	go n.obs.run()
	go func() {
		defer close(n.loopDone)
		defer close(n.obs.fsq)
		fd, err := wire.RecvListener(n.conn)
		if err != nil || fd < 0 {
			if err != nil {
				n.log.Debug("seccomp listener", "error", err)
			}
			return
		}
		defer unix.Close(fd)
		defer n.waits.stop()
		if n.cr != nil {
			defer n.cr.close()
			if err := prepareCreatorThread(n.waits.keepBounding); err != nil {
				// Without its own umask and credentials the thread
				// cannot create for the command: fail every call
				// closed (closing the listener: ENOSYS) rather than
				// create with srt's.
				n.log.Debug("seccomp listener: creation thread", "error", err)
				return
			}
		}
		seccomp.SyncWakeUp(fd) // Linux 6.6+; harmless to lack
		n.d.loop(fd, int(n.stopR.Fd()))
	}()
}

// Ended returns a channel closed once the supervisor stopped answering —
// the filter has no process left (POLLHUP), the listener never came, or
// Close was called — and every violation recorded until then has gone to
// Config.OnViolation. For a caller whose sandbox's processes may outlive
// its wait (the microvm guest's exec): Close would make their notified
// calls fail. Call it after Serve.
func (n *Supervisor) Ended() <-chan struct{} { return n.obs.done }

// Close stops answering (every process of the sandbox must be gone: a
// call notified after this would wait until srt exits) and waits until
// every recorded violation has been reported. Only the first call does
// anything.
func (n *Supervisor) Close() {
	n.once.Do(func() {
		n.stopW.Write([]byte{0})
		if n.served {
			<-n.loopDone
			<-n.obs.done
		}
		if n.cr != nil {
			n.cr.close() // the loop closes it too; here for a loop that never ran
		}
		n.conn.Close()
		n.stopR.Close()
		n.stopW.Close()
	})
}
