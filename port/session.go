package port

import (
	"context"
	"errors"
	"fmt"
	"github.com/srt-go/srt/credential"
	"io"
	"maps"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// runner is one backend's side of a session: it starts commands and
// freezes, thaws and tears down what runs.
type runner interface {
	// start runs one command with the sandbox's ends of its stdio. A
	// command that cannot start (not found, not executable) is a
	// *startError; other errors mean the sandbox cannot run anything.
	start(c command) (proc, error)
	// freeze stops every process of the session (running execs: procs);
	// thaw resumes them.
	freeze(ctx context.Context, procs []proc) error
	thaw(ctx context.Context, procs []proc) error
	// destroy ends every process and releases every resource.
	destroy(ctx context.Context) error
	details() map[string]any
}

// command is what a runner starts.
type command struct {
	argv                  []string
	env                   map[string]string
	dir                   string // "" means the session's default
	stdin, stdout, stderr *os.File
}

// proc is one started command.
type proc interface {
	pid() int
	signal(sig syscall.Signal) error
	// wait blocks until the command has ended: its exit code (128+N for
	// signal N) and N.
	wait() (code, sig int)
}

// startError is a command that did not start; code is what a shell gives
// (126 not executable, 127 not found).
type startError struct {
	code int
	msg  string
}

func (e *startError) Error() string { return e.msg }

// teardownTimeout bounds the teardown of a runner whose session was
// destroyed while it started (nobody's ctx is left to bound it).
const teardownTimeout = 30 * time.Second

// exitGrace is how long an exec's output is still read after its process
// ended, for a background process that keeps the pipes open.
const exitGrace = 2 * time.Second

// session is a launched sandbox on any backend: the state machine, the
// execs and their event streams.
type session struct {
	rt      *Runtime
	id      string
	backend Backend
	spec    Spec
	r       runner // set once launched (under mu when Runtime.boot starts it)
	// ev is the sandbox's event stream (EventSubscriber).
	ev *eventLog
	// bootCancel and bootDone are set by Runtime.Start before the session
	// is registered: cancel ends the backend start, done is closed once
	// it has ended (see started). Nil for a session started otherwise.
	bootCancel context.CancelFunc
	bootDone   chan struct{}

	mu sync.Mutex // guards the fields below
	// state is the SandboxState; err is set in StateError, and bootErr
	// when the backend start failed (Launch returns it, typed).
	state   State
	err     string
	bootErr error
	// agent is Handle.AgentID: Spec.AgentID until SetAgent.
	agent string
	// creds are the session's masked secrets and credEnv the shown
	// environment every exec starts from (Runtime.sessionCredentials);
	// nil without credentials, dropped by Destroy.
	creds   *credential.Set
	credEnv map[string]string
	// execs are the running execs by id.
	execs  map[string]*execRun
	nextID uint64
}

// newSession returns a session in StateCreated whose stream starts with
// its starting event.
func newSession(rt *Runtime, spec Spec, b Backend) *session {
	s := &session{rt: rt, id: spec.SessionID, backend: b, spec: spec, state: StateCreated, agent: spec.AgentID,
		execs: map[string]*execRun{}, ev: newEventLog()}
	s.ev.publish(Event{Type: EventStarting})
	return s
}

// started ends a start run by Runtime.boot with its runner or its error:
// created → warm with r, or created → error. A session destroyed
// meanwhile tears r down here, so that Destroy (which waits for bootDone)
// leaves nothing behind.
func (s *session) started(r runner, err error) {
	s.mu.Lock()
	if s.state != StateCreated {
		s.mu.Unlock()
		if r != nil {
			ctx, cancel := context.WithTimeout(context.Background(), teardownTimeout)
			defer cancel()
			if derr := r.destroy(ctx); derr != nil {
				s.rt.log.Error("tearing down a sandbox destroyed while it started", "session", s.id, "err", derr)
			}
		}
		return
	}
	defer s.mu.Unlock()
	if err != nil {
		s.rt.log.Info("sandbox start failed", "session", s.id, "backend", string(s.backend), "err", err)
		s.bootErr, s.err = err, err.Error()
		s.setLocked(StateError)
		return
	}
	s.r = r
	s.setLocked(StateWarm)
}

// Handle implements Sandbox.
func (s *session) Handle() Handle {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := Handle{SessionID: s.id, WorkspaceID: s.spec.WorkspaceID, AgentID: s.agent, Backend: s.backend,
		State: s.state, Error: s.err, Mode: s.spec.Mode, NetworkEnabled: s.spec.NetworkEnabled,
		BindMounts:      make([]BindMount, len(s.spec.BindMounts)),
		EgressAllowlist: append([]string{}, s.spec.EgressAllowlist...),
		GuestWorkdir:    s.spec.GuestWorkdir,
		Network:         handleNetwork(s.backend, s.spec.NetworkEnabled)}
	for i, b := range s.spec.BindMounts {
		b.ReadOnly = b.ReadOnly || ReadOnlyMode(s.spec.Mode)
		h.BindMounts[i] = b
	}
	if s.r != nil {
		h.Details = maps.Clone(s.r.details())
	}
	if h.Details == nil {
		h.Details = map[string]any{}
	}
	h.Credentials = s.spec.Credentials.Redacted()
	h.Details["mode"] = string(s.spec.Mode)
	h.Details["execs"] = len(s.execs)
	return h
}

// setLocked moves to state to, or returns a *TransitionError, and
// publishes the change on the sandbox's stream: created → warm is ready,
// → suspended is suspended, suspended → warm or active is resumed, →
// error is error (with s.err); warm ⇄ active is no event. Destroy
// publishes destroyed itself.
func (s *session) setLocked(to State) error {
	if s.state == to {
		return nil
	}
	if err := checkTransition(s.state, to); err != nil {
		return err
	}
	s.rt.log.Debug("sandbox state", "session", s.id, "backend", string(s.backend), "from", string(s.state), "to", string(to))
	from := s.state
	s.state = to
	switch {
	case from == StateCreated && to == StateWarm:
		s.ev.publish(Event{Type: EventReady})
	case to == StateSuspended:
		s.ev.publish(Event{Type: EventSuspended})
	case from == StateSuspended && (to == StateWarm || to == StateActive):
		s.ev.publish(Event{Type: EventResumed})
	case to == StateError:
		s.ev.publish(Event{Type: EventError, Error: s.err})
	}
	return nil
}

// fail moves a live session to StateError (the sandbox died under us).
func (s *session) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == StateDestroyed || s.state == StateError {
		return
	}
	s.err = err.Error()
	s.setLocked(StateError)
}

// Subscribe implements EventSubscriber.
func (s *session) Subscribe(ctx context.Context, afterSeq uint64) (<-chan Event, error) {
	return s.ev.subscribe(ctx, afterSeq)
}

// StreamTag implements EventSubscriber.
func (s *session) StreamTag() string { return s.ev.tag }

// SetAgent implements AgentBinder.
func (s *session) SetAgent(agentID string) error {
	if err := checkID("agentId", agentID, false); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == StateDestroyed {
		return fmt.Errorf("%w: sandbox %q is destroyed", ErrIllegalTransition, s.id)
	}
	s.agent = agentID
	s.ev.publish(Event{Type: EventAgent, AgentID: agentID})
	return nil
}

// Exec implements Sandbox. Events: starting, ready (the command runs),
// stdout/stderr as they come, violation when a policy refuses something
// while it runs, then exactly one exit or killed, after which the channel
// is closed. A command that cannot start gives starting, a stderr line
// saying why, and exit 126 or 127.
//
// Output is read as the consumer takes events: a consumer that stops
// reading stops the command at its next write (back-pressure), nothing is
// dropped. ctx ending kills the command (killed, reason "manual") and
// stops the delivery of events, so cancel it only when no longer reading.
func (s *session) Exec(ctx context.Context, req ExecRequest) (<-chan Event, error) {
	if err := CheckExec(req); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.state == StateWarm {
		if err := s.setLocked(StateActive); err != nil {
			s.mu.Unlock()
			return nil, err
		}
	} else if s.state != StateActive {
		err := checkTransition(s.state, StateActive)
		s.mu.Unlock()
		if err == nil {
			err = &TransitionError{s.state, StateActive}
		}
		return nil, err
	}
	s.nextID++
	id := strconv.FormatUint(s.nextID, 10)
	x := &execRun{id: id, s: s, q: newQueue(ctx), kill: make(chan string, 1), end: make(chan struct{})}
	// The exec's end is an event of the sandbox's stream too, whatever
	// the exec's reader does.
	x.q.tee = func(ev Event) {
		ev.ExecID = id
		s.ev.publish(ev)
	}
	s.execs[id] = x
	s.mu.Unlock()

	ok := false
	defer func() {
		if !ok {
			s.endExec(x)
			close(x.end)
		}
	}()
	var stdin *os.File
	var stdinW *os.File
	var err error
	if req.Stdin == nil {
		if stdin, err = os.Open(os.DevNull); err != nil {
			return nil, err
		}
	} else if stdin, stdinW, err = os.Pipe(); err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		stdin.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		stdin.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	x.oomBefore = oomKills(s.r)
	p, err := s.r.start(command{argv: req.Argv, env: req.Env, dir: req.Cwd, stdin: stdin, stdout: outW, stderr: errW})
	stdin.Close()
	outW.Close()
	errW.Close()
	var se *startError
	switch {
	case errors.As(err, &se):
		outR.Close()
		errR.Close()
		if stdinW != nil {
			stdinW.Close()
		}
		x.q.push(Event{Type: EventStarting, ExecID: id}, false)
		x.q.push(Event{Type: EventStderr, Data: []byte("srt: " + se.msg + "\n")}, false)
		code := se.code
		x.q.push(Event{Type: EventExit, ExitCode: &code}, false)
		x.q.close()
		ok = false // endExec runs
		return x.q.ch, nil
	case err != nil:
		outR.Close()
		errR.Close()
		if stdinW != nil {
			stdinW.Close()
		}
		return nil, err
	}
	ok = true
	x.p = p
	x.q.push(Event{Type: EventStarting, ExecID: id}, false)
	x.q.push(Event{Type: EventReady, ExecID: id, Pid: p.pid()}, false)
	if stdinW != nil {
		go func() {
			io.Copy(stdinW, req.Stdin)
			stdinW.Close()
		}()
	}
	go x.run(ctx, req.Timeout, outR, errR)
	return x.q.ch, nil
}

// endExec forgets x and moves active → warm after the last exec.
func (s *session) endExec(x *execRun) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.execs, x.id)
	if len(s.execs) == 0 && s.state == StateActive {
		s.setLocked(StateWarm)
	}
}

// Kill ends a running exec: its process group gets SIGKILL and its stream
// ends with killed, reason "manual". It returns ErrUnknownExec when id is
// not running.
func (s *session) Kill(ctx context.Context, execID string) error {
	s.mu.Lock()
	x := s.execs[execID]
	s.mu.Unlock()
	if x == nil || x.p == nil {
		return fmt.Errorf("%w: %q", ErrUnknownExec, execID)
	}
	x.stop("manual")
	return nil
}

// Signal sends sig to a running exec's process group.
func (s *session) Signal(ctx context.Context, execID string, sig syscall.Signal) error {
	s.mu.Lock()
	x := s.execs[execID]
	s.mu.Unlock()
	if x == nil || x.p == nil {
		return fmt.Errorf("%w: %q", ErrUnknownExec, execID)
	}
	return x.p.signal(sig)
}

// ReportViolation delivers v to every running exec's stream as a violation
// event (bounded per exec: see queue.violation), to the sandbox's stream
// (bounded per subscriber: see eventLog) and to Options.OnViolation. It
// never blocks; it is the hook the backends' violation sources feed.
func (s *session) ReportViolation(v Violation) {
	if v.Raw == "" {
		v.Raw = v.Line()
	}
	s.mu.Lock()
	sev := Event{Type: EventViolation, Violation: &v}
	for _, x := range s.execs {
		x.q.violation(v)
		if len(s.execs) == 1 {
			sev.ExecID = x.id
		}
	}
	s.ev.publish(sev)
	s.mu.Unlock()
	if f := s.rt.opts.OnViolation; f != nil {
		f(s.id, v)
	}
}

func (s *session) procs() []proc {
	var out []proc
	for _, x := range s.execs {
		if x.p != nil {
			out = append(out, x.p)
		}
	}
	return out
}

// Suspend implements Sandbox: every process of the session is frozen
// (native: SIGSTOP to every process of the PID namespace from its PID 1;
// none: SIGSTOP to each exec's process group).
func (s *session) Suspend(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := checkTransition(s.state, StateSuspended); err != nil {
		return err
	}
	if err := s.r.freeze(ctx, s.procs()); err != nil {
		return err
	}
	return s.setLocked(StateSuspended)
}

// Resume implements Sandbox: back to active when execs are running, else
// warm.
func (s *session) Resume(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	to := StateWarm
	if len(s.execs) > 0 {
		to = StateActive
	}
	if s.state != StateSuspended {
		return &TransitionError{s.state, to}
	}
	if err := s.r.thaw(ctx, s.procs()); err != nil {
		return err
	}
	return s.setLocked(to)
}

// Destroy implements Sandbox. A session still starting has its start
// cancelled and waited for (bounded by ctx): what the start made is torn
// down before Destroy returns. destroyed is the stream's last event.
func (s *session) Destroy(ctx context.Context) error {
	s.mu.Lock()
	if s.state == StateDestroyed {
		s.mu.Unlock()
		return nil
	}
	s.state = StateDestroyed
	var execs []*execRun
	for _, x := range s.execs {
		execs = append(execs, x)
	}
	s.mu.Unlock()
	var err error
	if s.bootCancel != nil {
		s.bootCancel()
		select {
		case <-s.bootDone:
		case <-ctx.Done():
			// The start's goroutine tears down whatever it made itself.
			err = fmt.Errorf("destroy %q: waiting for its start to end: %w", s.id, ctx.Err())
		}
	}
	for _, x := range execs {
		x.stop("manual")
	}
	s.mu.Lock()
	r := s.r
	s.mu.Unlock()
	if r != nil {
		err = r.destroy(ctx)
	}
	for _, x := range execs {
		select {
		case <-x.finished():
		case <-ctx.Done():
		}
	}
	s.mu.Lock()
	s.creds, s.credEnv = nil, nil
	s.mu.Unlock()
	s.ev.close(Event{Type: EventDestroyed})
	s.rt.forget(s.id, s)
	return err
}

// execRun is one running exec.
type execRun struct {
	id   string
	s    *session
	p    proc
	q    *queue
	kill chan string // a reason: "manual" or "timeout"
	once sync.Once
	end  chan struct{} // closed when run has delivered the last event
	// oomBefore is the runner's OOM-kill count before the command
	// started (oom.go).
	oomBefore uint64
}

func (x *execRun) finished() <-chan struct{} { return x.end }

// stop kills the command's process group with reason; the first reason
// wins.
func (x *execRun) stop(reason string) {
	x.once.Do(func() {
		x.kill <- reason
		if x.p != nil {
			x.p.signal(syscall.SIGKILL)
		}
	})
}

func (x *execRun) run(ctx context.Context, timeout time.Duration, outR, errR *os.File) {
	defer close(x.end)
	defer x.s.endExec(x)
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	exited := make(chan [2]int, 1)
	go func() {
		c, s := x.p.wait()
		exited <- [2]int{c, s}
	}()
	var readers sync.WaitGroup
	for _, r := range []struct {
		f *os.File
		t EventType
	}{{outR, EventStdout}, {errR, EventStderr}} {
		readers.Add(1)
		go func() {
			defer readers.Done()
			buf := make([]byte, 64<<10)
			for {
				n, err := r.f.Read(buf)
				if n > 0 {
					x.q.push(Event{Type: r.t, Data: append([]byte(nil), buf[:n]...)}, true)
				}
				if err != nil {
					return
				}
			}
		}()
	}
	var st [2]int
	for done := false; !done; {
		select {
		case st = <-exited:
			done = true
		case <-timer:
			timer = nil
			x.stop("timeout")
		case <-ctx.Done():
			x.stop("manual")
			ctx = context.Background()
		}
	}
	// The output the command wrote before it ended is still in the pipes:
	// read it all, unless something it left behind keeps them open.
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(exitGrace):
		outR.Close()
		errR.Close()
		<-drained
	}
	outR.Close()
	errR.Close()
	code := st[0]
	reason := ""
	select {
	case reason = <-x.kill:
	default:
	}
	if reason == "" && st[1] == int(syscall.SIGKILL) && oomKills(x.s.r) > x.oomBefore {
		reason = "oom"
	}
	if reason != "" && st[1] == int(syscall.SIGKILL) {
		x.q.push(Event{Type: EventKilled, Reason: reason, ExitCode: &code}, false)
	} else {
		x.q.push(Event{Type: EventExit, ExitCode: &code}, false)
	}
	x.q.close()
}

// atomicBool is sync/atomic.Bool, named for the runners' fields.
type atomicBool = atomic.Bool
