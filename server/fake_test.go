package server

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srt-go/srt/port"
)

// fakePort is a Port for the server-mechanics tests only (auth, limits,
// Origin, stream order, disconnects, the status of each port error): it
// sandboxes nothing, and its registry is the least that gives the port's
// errors (port/runtime_test.go tests the real one). The real port's
// behaviour is tested end to end in e2e/srtd_test.go.
type fakePort struct {
	probe port.Probe
	// sandboxOff is --sandbox off; max is the session limit (0: none).
	sandboxOff bool
	max        int
	// running counts execs in progress, over all sandboxes.
	running atomic.Int64
	mu      sync.Mutex
	alive   map[string]*fakeSandbox
	closed  bool
}

func newFakePort(available bool) *fakePort {
	p := port.Probe{Platform: "linux", Available: available, Note: "fake", MicroVMNote: "fake: no VM", MicroVMState: port.MicroVMUnavailable}
	if !available {
		p.RequiresInstall, p.InstallHint = true, "apt-get install bubblewrap"
	}
	return &fakePort{probe: p, alive: map[string]*fakeSandbox{}}
}

func (f *fakePort) Probe() port.Probe { return f.probe }

// Start is Launch with the handle in created; the sandbox is warm a
// moment later, or, for an agentId of "fail", in error.
func (f *fakePort) Start(ctx context.Context, spec port.Spec, b port.Backend) (port.Sandbox, error) {
	sb, err := f.Launch(ctx, spec, b)
	if err != nil {
		return nil, err
	}
	fs := sb.(*fakeSandbox)
	fs.mu.Lock()
	fs.h.State = port.StateCreated
	fs.mu.Unlock()
	go func() {
		time.Sleep(50 * time.Millisecond)
		fs.mu.Lock()
		defer fs.mu.Unlock()
		if fs.h.State != port.StateCreated {
			return
		}
		if spec.AgentID == "fail" {
			fs.h.State, fs.h.Error = port.StateError, "fake start failure"
			fs.publishLocked(port.Event{Type: port.EventError, Error: fs.h.Error})
			return
		}
		fs.h.State = port.StateWarm
		fs.publishLocked(port.Event{Type: port.EventReady})
	}()
	return sb, nil
}

func (f *fakePort) Launch(ctx context.Context, spec port.Spec, b port.Backend) (port.Sandbox, error) {
	if err := port.Validate(spec); err != nil {
		return nil, err
	}
	if spec.WorkspaceID == "" {
		return nil, &port.SpecError{Field: "workspaceId", Reason: "required"}
	}
	switch {
	case f.sandboxOff && (b == port.BackendNative || b == port.BackendMicroVM):
		return nil, fmt.Errorf("%w: %s: %w", port.ErrBackendUnavailable, b, port.ErrSandboxDisabled)
	case f.sandboxOff:
		b = port.BackendNone
	case b == "":
		b = port.BackendNone
		if f.probe.Available {
			b = port.BackendNative
		}
	case b == port.BackendMicroVM:
		return nil, fmt.Errorf("microvm: %w", port.ErrBackendUnavailable)
	case b == port.BackendNative && !f.probe.Available:
		return nil, fmt.Errorf("native: %w", port.ErrBackendUnavailable)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.closed:
		return nil, port.ErrClosed
	case f.alive[spec.SessionID] != nil:
		return nil, port.ErrSessionExists
	case f.max > 0 && len(f.alive) >= f.max:
		return nil, port.ErrTooManySessions
	}
	spec.Mode = port.ModeChat
	sb := &fakeSandbox{f: f, h: port.Handle{SessionID: spec.SessionID, WorkspaceID: spec.WorkspaceID, AgentID: spec.AgentID,
		Backend: b, State: port.StateWarm, Mode: spec.Mode, BindMounts: append([]port.BindMount{}, spec.BindMounts...),
		NetworkEnabled: spec.NetworkEnabled, EgressAllowlist: append([]string{}, spec.EgressAllowlist...), GuestWorkdir: spec.GuestWorkdir,
		Network: fakeNetwork(b, spec.NetworkEnabled), Credentials: spec.Credentials.Redacted()}, gone: make(chan struct{}), changed: make(chan struct{})}
	sb.events = []port.Event{{Type: port.EventStarting, Seq: 1, Time: time.Now()}, {Type: port.EventReady, Seq: 2, Time: time.Now()}}
	f.alive[spec.SessionID] = sb
	return sb, nil
}

// fakeNetwork is port's Handle.Network rule: host for none, off without
// network, else the allow-list.
func fakeNetwork(b port.Backend, on bool) port.HandleNetwork {
	switch {
	case b == port.BackendNone:
		return port.NetworkHost
	case !on:
		return port.NetworkOff
	}
	return port.NetworkAllowlist
}

// Choose accepts every backend the fake's probe offers.
func (f *fakePort) Choose(ctx context.Context, b port.Backend) (port.Backend, error) {
	if b == "" {
		b = port.BackendNative
	}
	return b, nil
}

func (f *fakePort) Lookup(id string) (port.Sandbox, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb, ok := f.alive[id]
	return sb, ok
}

func (f *fakePort) List() []port.Sandbox {
	f.mu.Lock()
	defer f.mu.Unlock()
	var all []port.Sandbox
	for _, sb := range f.alive {
		all = append(all, sb)
	}
	return all
}

func (f *fakePort) Close(ctx context.Context) error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	for _, sb := range f.List() {
		sb.Destroy(ctx)
	}
	return nil
}

func (f *fakePort) aliveCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.alive)
}

type fakeSandbox struct {
	f  *fakePort
	mu sync.Mutex
	h  port.Handle
	// gone is closed by Destroy, which kills the running execs.
	gone     chan struct{}
	goneOnce sync.Once
	// events is the sandbox stream, all of it (guarded by mu); changed
	// is closed and replaced at each new event.
	events  []port.Event
	changed chan struct{}
}

func (s *fakeSandbox) publishLocked(ev port.Event) {
	ev.Seq, ev.Time = uint64(len(s.events)+1), time.Now()
	s.events = append(s.events, ev)
	close(s.changed)
	s.changed = make(chan struct{})
}

// StreamTag implements port.EventSubscriber: the fake's is its session
// id's hex, so a re-created fake has the same one (tests re-create with
// another id to see another tag).
func (s *fakeSandbox) StreamTag() string { return fmt.Sprintf("%x", s.h.SessionID) }

// Subscribe implements port.EventSubscriber, without its bounds (the
// port's tests hold those), with its reset of a stale after.
func (s *fakeSandbox) Subscribe(ctx context.Context, after uint64) (<-chan port.Event, error) {
	ch := make(chan port.Event)
	s.mu.Lock()
	reset := after > uint64(len(s.events))
	s.mu.Unlock()
	go func() {
		defer close(ch)
		if reset {
			after = 0
			select {
			case ch <- port.Event{Type: port.EventLost, Reason: port.LostReset, Time: time.Now()}:
			case <-ctx.Done():
				return
			}
		}
		for next := after; ; {
			s.mu.Lock()
			evs, changed := s.events, s.changed
			s.mu.Unlock()
			for ; next < uint64(len(evs)); next++ {
				select {
				case ch <- evs[next]:
				case <-ctx.Done():
					return
				}
				if evs[next].Type == port.EventDestroyed {
					return
				}
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, nil
}

// SetAgent implements port.AgentBinder.
func (s *fakeSandbox) SetAgent(id string) error {
	if err := port.Validate(port.Spec{SessionID: "x", AgentID: id}); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.h.AgentID = id
	s.publishLocked(port.Event{Type: port.EventAgent, AgentID: id})
	return nil
}

func (s *fakeSandbox) Handle() port.Handle {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.h
}

func (s *fakeSandbox) transition(from, to port.State) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h.State != from {
		return &port.TransitionError{From: s.h.State, To: to}
	}
	s.h.State = to
	switch to {
	case port.StateSuspended:
		s.publishLocked(port.Event{Type: port.EventSuspended})
	case port.StateWarm:
		s.publishLocked(port.Event{Type: port.EventResumed})
	}
	return nil
}

func (s *fakeSandbox) Suspend(context.Context) error {
	return s.transition(port.StateWarm, port.StateSuspended)
}

func (s *fakeSandbox) Resume(context.Context) error {
	return s.transition(port.StateSuspended, port.StateWarm)
}

func (s *fakeSandbox) Destroy(context.Context) error {
	s.mu.Lock()
	if s.h.State != port.StateDestroyed {
		s.h.State = port.StateDestroyed
		s.publishLocked(port.Event{Type: port.EventDestroyed})
	}
	s.mu.Unlock()
	s.goneOnce.Do(func() { close(s.gone) })
	s.f.mu.Lock()
	if s.f.alive[s.h.SessionID] == s {
		delete(s.f.alive, s.h.SessionID)
	}
	s.f.mu.Unlock()
	return nil
}

// Exec understands two commands: "count N" prints N numbered lines, one
// event each; "sleep" blocks until its context ends.
func (s *fakeSandbox) Exec(ctx context.Context, req port.ExecRequest) (<-chan port.Event, error) {
	if err := port.CheckExec(req); err != nil {
		return nil, err
	}
	if st := s.Handle().State; st != port.StateWarm {
		return nil, &port.TransitionError{From: st, To: port.StateActive}
	}
	ch := make(chan port.Event)
	s.f.running.Add(1)
	go func() {
		defer close(ch)
		defer s.f.running.Add(-1)
		var seq uint64
		send := func(ev port.Event) bool {
			seq++
			ev.Seq, ev.Time = seq, time.Now()
			select {
			case ch <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		killed := func() {
			seq++
			ch <- port.Event{Type: port.EventKilled, Seq: seq, Time: time.Now(), Reason: "manual"}
		}
		if !send(port.Event{Type: port.EventStarting}) || !send(port.Event{Type: port.EventReady}) {
			killed()
			return
		}
		switch req.Argv[0] {
		case "count":
			n, _ := strconv.Atoi(req.Argv[1])
			for i := range n {
				if !send(port.Event{Type: port.EventStdout, Data: []byte(strconv.Itoa(i) + "\n")}) {
					killed()
					return
				}
			}
		case "flood":
			// What the port's bounded violations look like: one folded
			// violation with a count, then a lost event.
			v := port.Violation{Action: "network-outbound", Target: "h.example:443", Reason: "denied", Raw: "deny network-outbound h.example:443 (denied)"}
			if !send(port.Event{Type: port.EventViolation, Violation: &v, Count: 3}) || !send(port.Event{Type: port.EventLost, Lost: 7}) {
				killed()
				return
			}
		case "sleep":
			select {
			case <-ctx.Done():
			case <-s.gone:
			}
			killed()
			return
		}
		zero := 0
		send(port.Event{Type: port.EventExit, ExitCode: &zero})
		s.mu.Lock()
		s.publishLocked(port.Event{Type: port.EventExit, ExitCode: &zero, ExecID: "1"})
		s.mu.Unlock()
	}()
	return ch, nil
}
