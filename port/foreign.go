package port

import (
	"context"
	"fmt"
	"sync"
)

// foreignSandbox is a sandbox of an external MicroVMLauncher (one that
// keeps its own sessions), registered like the port's own: its Destroy
// also forgets it. The port keeps its event stream (EventSubscriber) and
// its agent (AgentBinder), from what passes through it.
type foreignSandbox struct {
	Sandbox
	rt *Runtime
	id string
	ev *eventLog
	// spec is what was launched: Handle fills in the fields an external
	// launcher may not know (EgressAllowlist, GuestWorkdir, Network).
	spec Spec

	mu    sync.Mutex
	agent string // guarded by mu
}

// launchForeign launches spec on the external microVM backend, before
// returning (Start cannot show it starting).
func (rt *Runtime) launchForeign(ctx context.Context, spec Spec) (Sandbox, error) {
	if err := rt.reserve(spec.SessionID, nil); err != nil {
		return nil, err
	}
	f := &foreignSandbox{rt: rt, id: spec.SessionID, ev: newEventLog(), agent: spec.AgentID, spec: spec}
	f.ev.publish(Event{Type: EventStarting})
	sb, err := rt.opts.MicroVM.Launch(ctx, spec, rt.egressLists(spec))
	if err != nil {
		rt.release(spec.SessionID)
		return nil, err
	}
	f.Sandbox = sb
	f.ev.publish(Event{Type: EventReady})
	if err := rt.publish(spec.SessionID, f); err != nil {
		// Close started while this sandbox was starting: nobody would
		// destroy it.
		f.Destroy(context.WithoutCancel(ctx))
		return nil, err
	}
	rt.log.Debug("sandbox launched", "session", spec.SessionID, "backend", string(BackendMicroVM))
	return f, nil
}

// Handle implements Sandbox: the launcher's, with the agent re-bound
// here and what the spec said where the launcher left it out.
func (f *foreignSandbox) Handle() Handle {
	h := f.Sandbox.Handle()
	if h.EgressAllowlist == nil {
		h.EgressAllowlist = append([]string{}, f.spec.EgressAllowlist...)
	}
	if h.GuestWorkdir == "" {
		h.GuestWorkdir = f.spec.GuestWorkdir
	}
	if h.Network == "" {
		h.Network = handleNetwork(BackendMicroVM, f.spec.NetworkEnabled)
	}
	f.mu.Lock()
	h.AgentID = f.agent
	f.mu.Unlock()
	return h
}

// Exec implements Sandbox: the request is checked here, as for the
// port's own sessions, whatever the launcher checks; the exec's exit,
// killed and violation events go to the sandbox's stream too.
func (f *foreignSandbox) Exec(ctx context.Context, req ExecRequest) (<-chan Event, error) {
	if err := CheckExec(req); err != nil {
		return nil, err
	}
	in, err := f.Sandbox.Exec(ctx, req)
	if err != nil {
		return nil, err
	}
	out := make(chan Event)
	go func() {
		defer close(out)
		execID := ""
		for ev := range in {
			if ev.ExecID != "" {
				execID = ev.ExecID
			}
			switch ev.Type {
			case EventExit, EventKilled, EventViolation:
				sev := ev
				sev.ExecID, sev.Data = execID, nil
				f.ev.publish(sev)
			}
			out <- ev
		}
	}()
	return out, nil
}

// Suspend implements Sandbox.
func (f *foreignSandbox) Suspend(ctx context.Context) error {
	if err := f.Sandbox.Suspend(ctx); err != nil {
		return err
	}
	f.ev.publish(Event{Type: EventSuspended})
	return nil
}

// Resume implements Sandbox.
func (f *foreignSandbox) Resume(ctx context.Context) error {
	if err := f.Sandbox.Resume(ctx); err != nil {
		return err
	}
	f.ev.publish(Event{Type: EventResumed})
	return nil
}

// Destroy implements Sandbox.
func (f *foreignSandbox) Destroy(ctx context.Context) error {
	err := f.Sandbox.Destroy(ctx)
	f.ev.close(Event{Type: EventDestroyed})
	f.rt.forget(f.id, f)
	return err
}

// Subscribe implements EventSubscriber.
func (f *foreignSandbox) Subscribe(ctx context.Context, afterSeq uint64) (<-chan Event, error) {
	return f.ev.subscribe(ctx, afterSeq)
}

// StreamTag implements EventSubscriber.
func (f *foreignSandbox) StreamTag() string { return f.ev.tag }

// SetAgent implements AgentBinder.
func (f *foreignSandbox) SetAgent(agentID string) error {
	if err := checkID("agentId", agentID, false); err != nil {
		return err
	}
	if f.Sandbox.Handle().State == StateDestroyed {
		return fmt.Errorf("%w: sandbox %q is destroyed", ErrIllegalTransition, f.id)
	}
	f.mu.Lock()
	f.agent = agentID
	f.mu.Unlock()
	f.ev.publish(Event{Type: EventAgent, AgentID: agentID})
	return nil
}
