package port

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// gatedVM is the port's own microvm backend as far as Runtime.Start can
// tell (a microVMRunner), whose start waits for release (or its ctx) and
// then returns err or a gatedRunner.
type gatedVM struct {
	release   chan struct{}
	err       error
	ignoreCtx bool // return a runner even when the start was cancelled
	cancelled atomic.Bool
	runners   atomic.Pointer[gatedRunner]
}

func (g *gatedVM) Probe(context.Context) (bool, string) { return true, "gated" }
func (g *gatedVM) Launch(context.Context, Spec, EgressLists) (Sandbox, error) {
	return nil, errors.New("not used: the port's own backend")
}

func (g *gatedVM) launchRunner(ctx context.Context, rt *Runtime, s *session, egress EgressLists) (runner, error) {
	select {
	case <-g.release:
	case <-ctx.Done():
		g.cancelled.Store(true)
		if !g.ignoreCtx {
			return nil, ctx.Err()
		}
		<-g.release
	}
	if g.err != nil {
		return nil, g.err
	}
	r := &gatedRunner{}
	g.runners.Store(r)
	return r, nil
}

type gatedRunner struct{ destroyed atomic.Bool }

func (r *gatedRunner) start(command) (proc, error)          { return nil, errors.New("gated: no commands") }
func (r *gatedRunner) freeze(context.Context, []proc) error { return nil }
func (r *gatedRunner) thaw(context.Context, []proc) error   { return nil }
func (r *gatedRunner) destroy(context.Context) error        { r.destroyed.Store(true); return nil }
func (r *gatedRunner) details() map[string]any              { return map[string]any{"gated": true} }

func gatedRuntime(t *testing.T, g *gatedVM) *Runtime {
	t.Helper()
	rt, err := newRuntime(context.Background(), Options{MicroVM: g}, &Probe{Platform: "test", MicroVMAvailable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

// next reads one event or fails after a while.
func next(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("event stream closed")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event in 5s")
	}
	return Event{}
}

func awaitState(t *testing.T, sb Sandbox, want State) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); sb.Handle().State != want; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("state %s, want %s", sb.Handle().State, want)
		}
	}
}

// TestStartStates: Start answers at once with the session created and
// registered; an exec on it is a TransitionError, not a wait; the start
// ending makes it warm, and the stream says starting then ready.
func TestStartStates(t *testing.T) {
	ctx := context.Background()
	g := &gatedVM{release: make(chan struct{})}
	rt := gatedRuntime(t, g)
	sb, err := rt.Start(ctx, Spec{SessionID: "s", WorkspaceID: "w", AgentID: "a1"}, BackendMicroVM)
	if err != nil {
		t.Fatal(err)
	}
	if h := sb.Handle(); h.State != StateCreated || h.WorkspaceID != "w" || h.AgentID != "a1" || h.Mode != ModeChat {
		t.Fatalf("handle after Start: %+v", h)
	}
	if got, ok := rt.Lookup("s"); !ok || got != sb || len(rt.List()) != 1 {
		t.Fatalf("Lookup/List do not see a starting session: %v %v %d", got, ok, len(rt.List()))
	}
	if _, err := rt.Start(ctx, Spec{SessionID: "s"}, BackendMicroVM); !errors.Is(err, ErrSessionExists) {
		t.Errorf("second Start of a starting id: %v", err)
	}
	var te *TransitionError
	if _, err := sb.Exec(ctx, ExecRequest{Argv: []string{"true"}}); !errors.As(err, &te) {
		t.Errorf("Exec while created: %v; want a TransitionError", err)
	}
	if err := sb.Suspend(ctx); !errors.As(err, &te) {
		t.Errorf("Suspend while created: %v; want a TransitionError", err)
	}
	evs, err := sb.(EventSubscriber).Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, evs); ev.Type != EventStarting || ev.Seq != 1 {
		t.Fatalf("first event %+v", ev)
	}
	close(g.release)
	if ev := next(t, evs); ev.Type != EventReady || ev.Seq != 2 {
		t.Fatalf("second event %+v", ev)
	}
	awaitState(t, sb, StateWarm)
	if err := sb.(AgentBinder).SetAgent("a2"); err != nil || sb.Handle().AgentID != "a2" {
		t.Fatalf("SetAgent: %v, handle %+v", err, sb.Handle())
	}
	if ev := next(t, evs); ev.Type != EventAgent || ev.AgentID != "a2" {
		t.Fatalf("after SetAgent: %+v", ev)
	}
	var se *SpecError
	if err := sb.(AgentBinder).SetAgent("a b"); !errors.As(err, &se) || se.Field != "agentId" {
		t.Errorf("SetAgent(bad) = %v", err)
	}
	if err := sb.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, evs); ev.Type != EventDestroyed {
		t.Fatalf("after Destroy: %+v", ev)
	}
	if _, ok := <-evs; ok {
		t.Error("stream goes on after destroyed")
	}
	if !g.runners.Load().destroyed.Load() {
		t.Error("the runner was not destroyed")
	}
}

// TestStartFails: a backend that fails leaves a Start's session in
// error, listed, with the reason, until Destroy; a Launch's returns the
// error itself and leaves nothing.
func TestStartFails(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("boom")
	g := &gatedVM{release: make(chan struct{}), err: boom}
	close(g.release)
	rt := gatedRuntime(t, g)
	sb, err := rt.Start(ctx, Spec{SessionID: "s"}, BackendMicroVM)
	if err != nil {
		t.Fatal(err)
	}
	awaitState(t, sb, StateError)
	if h := sb.Handle(); h.Error != "boom" {
		t.Errorf("error %q", h.Error)
	}
	if _, ok := rt.Lookup("s"); !ok {
		t.Error("a failed session is not listed until DELETE")
	}
	evs, _ := sb.(EventSubscriber).Subscribe(ctx, 0)
	var types []EventType
	for _, want := range []EventType{EventStarting, EventError} {
		ev := next(t, evs)
		types = append(types, ev.Type)
		if ev.Type != want || want == EventError && ev.Error != "boom" {
			t.Fatalf("events %v, last %+v", types, ev)
		}
	}
	if err := sb.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := rt.Lookup("s"); ok {
		t.Error("still listed after Destroy")
	}
	if _, err := rt.Launch(ctx, Spec{SessionID: "b"}, BackendMicroVM); !errors.Is(err, boom) {
		t.Errorf("Launch = %v; want boom", err)
	}
	if n := len(rt.List()); n != 0 {
		t.Errorf("%d sessions after a failed Launch", n)
	}
}

// TestDestroyWhileStarting: Destroy of a created session cancels its
// start and returns once what the start made is torn down, even when the
// backend finishes its start regardless.
func TestDestroyWhileStarting(t *testing.T) {
	ctx := context.Background()
	for _, ignore := range []bool{false, true} {
		g := &gatedVM{release: make(chan struct{}), ignoreCtx: ignore}
		rt := gatedRuntime(t, g)
		sb, err := rt.Start(ctx, Spec{SessionID: "s"}, BackendMicroVM)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- sb.Destroy(ctx) }()
		for !g.cancelled.Load() {
			time.Sleep(time.Millisecond)
		}
		if ignore {
			select {
			case err := <-done:
				t.Fatalf("Destroy returned (%v) while the start still ran", err)
			case <-time.After(20 * time.Millisecond):
			}
			close(g.release)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if r := g.runners.Load(); ignore && (r == nil || !r.destroyed.Load()) {
			t.Errorf("the runner a cancelled start made is not destroyed: %v", r)
		}
		if st := sb.Handle().State; st != StateDestroyed || len(rt.List()) != 0 {
			t.Errorf("after Destroy: %s, %d listed", st, len(rt.List()))
		}
	}
}

// TestCloseWhileStarting: Close destroys sessions still starting; a
// Launch waiting for one returns ErrClosed.
func TestCloseWhileStarting(t *testing.T) {
	ctx := context.Background()
	g := &gatedVM{release: make(chan struct{})}
	rt := gatedRuntime(t, g)
	started, err := rt.Start(ctx, Spec{SessionID: "a"}, BackendMicroVM)
	if err != nil {
		t.Fatal(err)
	}
	launched := make(chan error, 1)
	go func() {
		_, err := rt.Launch(ctx, Spec{SessionID: "b"}, BackendMicroVM)
		launched <- err
	}()
	for len(rt.List()) < 2 {
		time.Sleep(time.Millisecond)
	}
	if err := rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-launched; !errors.Is(err, ErrClosed) {
		t.Errorf("Launch during Close = %v; want ErrClosed", err)
	}
	if st := started.Handle().State; st != StateDestroyed {
		t.Errorf("started session after Close: %s", st)
	}
}

// TestSlowSubscriber: a subscriber that does not read never holds up
// publishing or another subscriber; it gets what it had pending, then a
// lost event with the exact count, then the end; resuming after it
// replays the history, a gap first.
func TestSlowSubscriber(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := newEventLog()
	slow, _ := l.subscribe(ctx, 0)
	fast, _ := l.subscribe(ctx, 0)
	const n, chunk = 3 * SubscriberBuffer, 64
	got := make(chan uint64)
	go func() {
		for ev := range fast {
			got <- ev.Seq
		}
		close(got)
	}()
	published := make(chan struct{})
	go func() {
		defer close(published)
		for i := 0; i < n; i += chunk {
			for range chunk {
				l.publish(Event{Type: EventViolation})
			}
			// The fast one keeps up: it has all so far.
			for want := uint64(i + 1); want <= uint64(i+chunk); want++ {
				if seq := <-got; seq != want {
					t.Errorf("fast subscriber: seq %d, want %d", seq, want)
					return
				}
			}
		}
	}()
	select {
	case <-published:
	case <-time.After(10 * time.Second):
		t.Fatal("publish blocked on a slow subscriber")
	}
	l.close(Event{Type: EventDestroyed})
	if seq := <-got; seq != n+1 {
		t.Errorf("fast subscriber's last: %d, want destroyed at %d", seq, n+1)
	}
	if _, ok := <-got; ok {
		t.Error("fast stream goes on after destroyed")
	}
	// The slow one had a full buffer (and the one event its pump held):
	// those, in order, then lost counting every other, then the end.
	var last uint64
	for {
		ev := next(t, slow)
		if ev.Type == EventLost {
			if last < SubscriberBuffer || last > SubscriberBuffer+1 || ev.Seq != last || ev.Lost != n+1-last {
				t.Fatalf("lost %+v after %d events; want lost %d", ev, last, n+1-last)
			}
			break
		}
		if ev.Seq != last+1 {
			t.Fatalf("slow: seq %d after %d", ev.Seq, last)
		}
		last = ev.Seq
	}
	if _, ok := <-slow; ok {
		t.Error("slow stream goes on after lost")
	}
	ev := Event{Seq: last}
	again, _ := l.subscribe(ctx, ev.Seq)
	first := next(t, again)
	oldest := uint64(n + 1 - HistoryLimit + 1)
	if first.Type != EventLost || first.Lost != oldest-last-1 {
		t.Fatalf("resume: first %+v; want lost %d", first, oldest-last-1)
	}
	c := 0
	for ev := range again {
		if c == 0 && ev.Seq != oldest {
			t.Errorf("resume starts at %d, want %d", ev.Seq, oldest)
		}
		c++
	}
	if c != HistoryLimit {
		t.Errorf("resume replayed %d, want %d", c, HistoryLimit)
	}
	live := newEventLog()
	for range MaxSubscribers {
		if _, err := live.subscribe(ctx, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := live.subscribe(ctx, 0); !errors.Is(err, ErrTooManySubscribers) {
		t.Errorf("subscriber %d: %v; want ErrTooManySubscribers", MaxSubscribers+1, err)
	}
}

// TestStaleCursor: a seq the stream never published (a former sandbox's
// of the same id, ResetSeq) is a lost event with reason reset, then the
// whole kept history, then the live events; never silence. Two streams'
// tags differ.
func TestStaleCursor(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	old, l := newEventLog(), newEventLog()
	if len(l.tag) != 12 || l.tag == old.tag || strings.Trim(l.tag, "0123456789abcdef") != "" {
		t.Errorf("tags %q, %q: want two different ones of 12 hex digits", old.tag, l.tag)
	}
	for _, after := range []uint64{5, 99999, ResetSeq} {
		l := newEventLog()
		l.publish(Event{Type: EventStarting})
		l.publish(Event{Type: EventReady})
		sub, err := l.subscribe(ctx, after)
		if err != nil {
			t.Fatal(err)
		}
		if ev := next(t, sub); ev.Type != EventLost || ev.Reason != LostReset || ev.Seq != 0 || ev.Lost != 0 {
			t.Errorf("after %d: first %+v; want lost, reason reset, seq 0", after, ev)
		}
		for want := uint64(1); want <= 2; want++ {
			if ev := next(t, sub); ev.Seq != want {
				t.Errorf("after %d: seq %d, want %d", after, ev.Seq, want)
			}
		}
		l.publish(Event{Type: EventAgent})
		if ev := next(t, sub); ev.Type != EventAgent || ev.Seq != 3 {
			t.Errorf("after %d: live %+v; want agent, seq 3", after, ev)
		}
	}
	for range 2 * HistoryLimit {
		l.publish(Event{Type: EventViolation})
	}
	sub, _ := l.subscribe(ctx, ResetSeq)
	oldest := l.seq - HistoryLimit + 1
	if ev := next(t, sub); ev.Type != EventLost || ev.Reason != LostReset || ev.Lost != oldest-1 {
		t.Errorf("reset past the history: %+v; want lost %d", ev, oldest-1)
	}
	if ev := next(t, sub); ev.Seq != oldest {
		t.Errorf("reset past the history: seq %d, want %d", ev.Seq, oldest)
	}
}
