package guest

// The guest's half of "every refusal is a violation" (issue 16): each
// process the agent starts carries a notifying seccomp filter answered by
// srt's own supervisor (sandbox/linux/supervisor), running here in PID 1,
// with the guest's share table as its policy. The supervisor reports the
// seccomp refusals and, observing the write-intent filesystem calls
// (answered CONTINUE: the mounts still decide), the writes that a
// read-only share or a protected path refuses, classified by the same
// rules as a native session's. Each report becomes a wire.FrameViolation
// on the process's exec stream, before its FrameExit.
//
// The filter is put on one OS thread of PID 1 only (seccomp.ThreadListener)
// and the process is forked from that thread, so it inherits the filter
// while the agent stays unfiltered; the thread ends right after the fork.
// The listener's only holder is the supervisor: if it stops, the kernel
// fails every notified call with ENOSYS (fail closed). The set-id filter
// (setIDFilter) is stacked on it, on the same thread, and keeps refusing
// set-id modes with EPERM whatever happens here; a deny-only errno
// outranks a notification, so those refusals are not reported (see
// README.md, "Violations").
//
// With the host's creation-time rules (wire.GuestConfig.Rules,
// microvm.Config.Names) the same supervisor judges the policy's own
// filesystem rules instead, and performs the creation calls under them
// as in a native sandbox (seccomp.Options.EmulateCreates; namesOptions).
// The rules are in host paths: a guest path is judged at the host path
// its share shows there (guestMapping), and a path no share shows is the
// guest's own. The thread that forks the process gets, in the native
// order of sandbox/linux/inside (installFilter), the notifying filter,
// then the Landlock backstop (inside.ThreadBackstop, where the guest
// kernel has Landlock), then the set-id filter built from the notifying
// filter's options, whose mode refusals the supervisor then reports as
// native does. If any of it cannot be set up the process does not start:
// there is no unobserved fallback with the rules on (fail closed).

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srt-go/srt/microvm/internal/wire"
	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/sandbox/linux/fsplan"
	"github.com/srt-go/srt/sandbox/linux/inside"
	"github.com/srt-go/srt/sandbox/linux/supervisor"
	lwire "github.com/srt-go/srt/sandbox/linux/wire"
	"github.com/srt-go/srt/seccomp"
	"github.com/srt-go/srt/violation"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// observeOptions is the workload's notifying filter. The guest has no
// socket or namespace rules of its own (its capabilities are dropped and
// its only way out is the relays), so AF_UNIX sockets and nested
// namespaces stay allowed; the rest of seccomp.Build's refusals (io_uring,
// keyrings, bpf, perf, TIOCSTI, …) apply and are reported.
var observeOptions = seccomp.Options{
	Notify: true, ObserveWrites: true,
	AllowUnixSockets: true, AllowNestedUserNamespaces: true,
}

// namesOptions is the workload's filter under the creation-time rules:
// observeOptions with the creation calls performed by the supervisor
// (EmulateCreates) and group write taken out of every creation mode, as
// PID 1's set-id filter refuses it in chmod (init_linux.go,
// RefuseGroupWrite). Native sets the same (sandbox/linux, run_linux.go),
// but for the socket and namespace rules, which the guest does not need:
// an AF_UNIX socket reaches no host socket from the guest. bind(2) of
// one is therefore not checked, and makes its name itself (the backstop
// leaves MAKE_SOCK, as native does with allowAllUnixSockets).
var namesOptions = seccomp.Options{
	Notify: true, ObserveWrites: true, EmulateCreates: true, RefuseGroupWrite: true,
	AllowUnixSockets: true, AllowNestedUserNamespaces: true,
}

// noTmpDir is the supervisor's private TMPDIR, whose writes it never
// records: a path nothing is ever at, since every guest path can be a
// share (a host /tmp directory is shared at its own path).
const noTmpDir = "/.srt/none"

// violationQueue bounds the reports waiting for the exec stream: past it
// they are counted (wire.ExitStatus.ViolationsDropped), never waited for,
// so a flood cannot block the supervisor or the workload.
const violationQueue = 256

// drainWait bounds how long the exit status waits for the rest of the
// process tree's reports (the supervisor ends when the filter has no
// process left; a background process that outlives the exec keeps it
// going). The exec's own process cannot have a report in flight: the
// supervisor records a refusal before it answers the call, and a process
// blocked in a notified call has not exited. So the wait is short, and a
// background process delays the exit status by no more than it.
const drainWait = 100 * time.Millisecond

// observeProgram is the workload filter, built once: the same program
// for every process.
var observeProgram = sync.OnceValues(func() ([]bpf.RawInstruction, error) { return seccomp.Build(observeOptions) })

// namesProgram is the workload filter under the creation-time rules.
var namesProgram = sync.OnceValues(func() ([]bpf.RawInstruction, error) { return seccomp.Build(namesOptions) })

// guestMapping places the shares' host trees in the guest, for judging a
// guest path by rules written in host paths: every share is a mount, and
// every path no share shows (the guest's root, /tmp, /run) is the
// guest's own (fsplan.Mapping.GuestRoot), but for the host's system
// directories (wire.GuestConfig.System), shown read-only at their own
// paths: a write refused there is judged, and recorded, at that host path.
func guestMapping(cfg wire.GuestConfig) fsplan.Mapping {
	m := fsplan.Mapping{Confined: true, GuestRoot: true}
	for _, s := range cfg.System {
		m.System = append(m.System, s.Path)
	}
	for _, s := range cfg.Shares {
		host := s.Host
		if host == "" {
			host = s.Path
		}
		m.Mounts = append(m.Mounts, fsplan.Mount{Host: host, Guest: s.Path, Rule: "share " + s.Tag})
	}
	return m
}

// Rules naming why a guest path is read-only (violation.Violation.Reason).
const (
	ruleReadOnlyShare = "read-only share"
	ruleProtected     = "protected path"
	ruleSystem        = "host system directory (read-only)"
)

// guestPolicy is the share table as a policy the supervisor judges guest
// paths by: everything is writable except the read-only shares and the
// protected paths. A read-only share with a writable one inside it is left
// out (a DenyWrite cannot have a hole), so writes refused there go
// unreported; they are refused all the same. The host's system
// directories are read-only too.
func guestPolicy(cfg wire.GuestConfig) *policy.Policy {
	p := &policy.Policy{AllowWrite: []policy.Path{{Literal: "/", Resolved: "/", Kind: policy.Dir, Rule: "guest", IsDir: true}}}
	for _, s := range cfg.Shares {
		if !s.ReadOnly || slices.ContainsFunc(cfg.Shares, func(o wire.Share) bool {
			return !o.ReadOnly && o.Path != s.Path && policy.Within(o.Path, s.Path)
		}) {
			continue
		}
		p.DenyWrite = append(p.DenyWrite, policy.Path{Literal: s.Path, Resolved: s.Path, Kind: policy.Dir, Rule: ruleReadOnlyShare, IsDir: true})
	}
	for _, s := range cfg.System {
		p.DenyWrite = append(p.DenyWrite, policy.Path{Literal: s.Path, Resolved: s.Path, Kind: policy.Dir, Rule: ruleSystem, IsDir: true})
	}
	for _, pp := range cfg.Protected {
		p.DenyWrite = append(p.DenyWrite, policy.Path{Literal: pp, Resolved: pp, Rule: ruleProtected})
	}
	return p
}

// watch is one process tree's supervisor and the queue of its reports.
type watch struct {
	sup     *supervisor.Supervisor // nil: started without observation
	names   bool                   // under the creation-time rules: never without sup
	end     *os.File               // the socket the listener goes over
	q       chan violation.Violation
	stop    chan struct{}
	written chan struct{} // closed when the writer has sent the queue
	dropped atomic.Int64
	once    sync.Once
}

// newWatch prepares a supervisor for one process; send writes one
// FrameViolation payload. Without cfg.Rules, on error (no supervisor) the
// process starts unobserved, still under the set-id filter; with them,
// the error is returned and the process must not start.
func newWatch(cfg wire.GuestConfig, send func([]byte) error) (*watch, error) {
	w := &watch{q: make(chan violation.Violation, violationQueue), stop: make(chan struct{}), written: make(chan struct{})}
	sc := supervisor.Config{
		Seccomp: observeOptions, Policy: guestPolicy(cfg), TmpDir: noTmpDir,
		OnViolation: w.put, Logger: slog.New(slog.DiscardHandler),
	}
	if cfg.Rules != nil {
		// The workload runs as root with PID 1's bounding set: the
		// supervisor creates with those capabilities, not none.
		w.names = true
		sc.Seccomp, sc.Policy, sc.Mapping, sc.BoundingCaps = namesOptions, cfg.Rules.Policy(), guestMapping(cfg), true
	}
	sup, end, err := supervisor.New(sc)
	if err != nil && w.names {
		return nil, fmt.Errorf("the creation-time name rules: supervisor: %w", err)
	}
	if err == nil {
		w.sup, w.end = sup, end
		sup.Serve()
	}
	go w.write(send)
	return w, nil
}

// put queues a report; it never blocks.
func (w *watch) put(v violation.Violation) {
	select {
	case w.q <- v:
	default:
		w.dropped.Add(1)
	}
}

// write sends the queued reports until stop, then what is left.
func (w *watch) write(send func([]byte) error) {
	defer close(w.written)
	out := func(v violation.Violation) {
		if b, err := wire.EncodeViolation(v); err == nil && send(b) != nil {
			w.dropped.Add(1)
		}
	}
	for {
		select {
		case v := <-w.q:
			out(v)
		case <-w.stop:
			for {
				select {
				case v := <-w.q:
					out(v)
				default:
					return
				}
			}
		}
	}
}

// start starts the process from a thread of its own, which it inherits
// from: the notifying filter (when there is a supervisor and this kernel
// gives a listener), under the creation-time rules the Landlock backstop,
// and last the set-id filter (setIDFilter), in sandbox/linux/inside's
// order (installFilter). Without a listener it starts the process with
// the set-id filter alone, unless under the creation-time rules: then it
// starts nothing.
func (w *watch) start(r *reaper, path string, argv []string, attr *os.ProcAttr) (int, <-chan unix.WaitStatus, error) {
	type started struct {
		pid int
		c   <-chan unix.WaitStatus
		err error
	}
	res := make(chan started, 1)
	go func() {
		// Never unlocked: the thread carries the filters and ends with
		// this goroutine.
		runtime.LockOSThread()
		if err := w.filterThread(); err != nil {
			res <- started{err: err}
			return
		}
		pid, c, err := r.start(path, argv, attr)
		res <- started{pid, c, err}
	}()
	s := <-res
	return s.pid, s.c, s.err
}

// filterThread puts the process's filters on the calling thread (start).
func (w *watch) filterThread() error {
	opts, program := observeOptions, observeProgram
	if w.names {
		opts, program = namesOptions, namesProgram
	}
	listening := false
	if w.sup != nil {
		prog, err := program()
		var fd int
		if err == nil {
			fd, err = seccomp.ThreadListener(prog)
		}
		switch {
		case err != nil && w.names:
			w.end.Close()
			return fmt.Errorf("the creation-time name rules: seccomp listener: %w", err)
		case err != nil:
			w.end.Close()
			w.unobserved()
		default:
			err = lwire.SendListener(int(w.end.Fd()), fd)
			unix.Close(fd) // the supervisor holds the only copy now
			w.end.Close()
			if err != nil {
				// The thread's filter has no listener: every notified
				// call would fail. Start nothing from it.
				return err
			}
			listening = true
		}
	}
	if w.names {
		// After the filter, as sandbox/linux/inside's installFilter:
		// no right to make a name but through the supervisor.
		if _, err := inside.ThreadBackstop(opts); err != nil {
			return fmt.Errorf("the creation-time name rules: the Landlock backstop: %w", err)
		}
	}
	prog, err := setIDFilter(w.names && listening)
	if err == nil {
		err = seccomp.InstallThread(prog)
	}
	if err != nil {
		return fmt.Errorf("set-id filter: %w", err)
	}
	return nil
}

// setIDFilter is the last filter of every process: no set-id bit, and no
// group or others' write, on any file (seccomp.BuildSetID). With 9p's
// security_model=none a guest chmod lands on the host's file, and a
// set-user-ID binary left in a writable share would outlive the VM (issue
// 14, item 6). It is put on each process's thread, not on PID 1 at boot:
// BuildSetID answers openat2 with ENOSYS, which the supervisor's own
// threads in PID 1 need (sandbox/linux/supervisor, resolve_linux.go).
// Under the creation-time rules (names) it is built from the notifying
// filter's options, as native: that filter notifies the refused modes and
// the supervisor reports them. Otherwise it refuses them itself, deny-only
// (an errno outranks a notification, so they go unreported).
func setIDFilter(names bool) ([]bpf.RawInstruction, error) {
	if names {
		return seccomp.BuildSetID(namesOptions)
	}
	return seccomp.BuildSetID(seccomp.Options{RefuseGroupWrite: true})
}

// unobserved drops the supervisor of a process started without the filter.
func (w *watch) unobserved() {
	w.sup.Close()
	w.sup = nil
}

// finish waits, bounded, for the supervisor to report the process tree's
// last calls, then for the writer to send them, and returns how many
// reports were dropped. Reports that come later (a background process
// that outlived the exec) are dropped too. Only the first call waits.
func (w *watch) finish() int {
	w.once.Do(func() {
		if w.sup != nil {
			select {
			case <-w.sup.Ended():
			case <-time.After(drainWait):
			}
			go func() { <-w.sup.Ended(); w.sup.Close() }()
		}
		close(w.stop)
		<-w.written
	})
	return int(w.dropped.Load())
}
