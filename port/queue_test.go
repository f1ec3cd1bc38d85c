package port

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// pending returns how many events q holds and how many are violations.
func pending(q *queue) (items, viol int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, ev := range q.items {
		if ev.Type == EventViolation {
			viol++
		}
	}
	return len(q.items), viol
}

// TestQueueViolationFlood: an exec whose consumer does not read is
// flooded with distinct violations and interleaved output. The reports
// never wait, what the queue holds stays within ExecViolationLimit, no
// output is dropped, and once the consumer reads every report is either
// delivered or counted by a lost event, which comes before exit.
func TestQueueViolationFlood(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := newQueue(ctx)
	const reports, outputs = 50 * ExecViolationLimit, 100
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		q.push(Event{Type: EventStarting}, false)
		for i := range reports {
			q.violation(Violation{Action: "network-outbound", Target: fmt.Sprintf("h%d.denied.example:443", i), Raw: "deny"})
			if i%(reports/outputs) == 0 {
				q.push(Event{Type: EventStdout, Data: []byte{'x'}}, true)
			}
		}
	}()
	select {
	case <-flooded:
	case <-time.After(20 * time.Second):
		t.Fatal("a violation report waited for the consumer")
	}
	items, viol := pending(q)
	// The pump may hold one event taken from items (the first).
	if viol > ExecViolationLimit || items > ExecViolationLimit+outputs+2 {
		t.Fatalf("pending: %d events, %d violations; want at most %d violations", items, viol, ExecViolationLimit)
	}
	code := 0
	q.push(Event{Type: EventExit, ExitCode: &code}, false)
	q.close()
	var got, lost, out uint64
	var seq uint64
	var last EventType
	for ev := range q.ch {
		if ev.Seq != seq+1 {
			t.Fatalf("seq %d after %d", ev.Seq, seq)
		}
		seq = ev.Seq
		switch ev.Type {
		case EventViolation:
			got += max(ev.Count, 1)
		case EventLost:
			if ev.Lost == 0 {
				t.Error("lost event with no count")
			}
			lost += ev.Lost
		case EventStdout:
			out++
		}
		last = ev.Type
	}
	if last != EventExit {
		t.Errorf("last event %s, want exit", last)
	}
	if out != outputs {
		t.Errorf("%d output events, want %d (output is never dropped)", out, outputs)
	}
	if got+lost != reports || lost == 0 {
		t.Errorf("delivered %d + lost %d, want %d reports in all, some lost", got, lost, reports)
	}
}

// TestQueueViolationCoalesce: identical violations pending fold into one
// event with their count, also when others come in between; a different
// pid is another violation; once delivered, the next identical one is a
// new event.
func TestQueueViolationCoalesce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := newQueue(ctx)
	a := Violation{Action: "network-outbound", Target: "a.example:443", Raw: "deny a", Time: time.Now()}
	b := Violation{Action: "syscall", Target: "unshare", PID: 7, Raw: "deny b"}
	q.push(Event{Type: EventStarting}, false)
	next(t, q.ch)
	// The pump takes this one and holds it until it is read: the
	// violations after it stay pending.
	q.push(Event{Type: EventStdout, Data: []byte("x")}, true)
	for i := range 3 * ExecViolationLimit {
		a.Time = a.Time.Add(time.Millisecond)
		q.violation(a)
		if i%2 == 0 {
			q.violation(b)
		}
	}
	b.PID = 8
	q.violation(b)
	if _, viol := pending(q); viol != 3 {
		t.Fatalf("%d violation events pending, want 3 (a, b, b of pid 8)", viol)
	}
	if ev := next(t, q.ch); ev.Type != EventStdout {
		t.Fatalf("got %s, want stdout", ev.Type)
	}
	want := []struct {
		target string
		pid    int
		count  uint64
	}{{"a.example:443", 0, 3 * ExecViolationLimit}, {"unshare", 7, 3 * ExecViolationLimit / 2}, {"unshare", 8, 0}}
	for _, w := range want {
		ev := next(t, q.ch)
		if ev.Type != EventViolation || ev.Violation.Target != w.target || ev.Violation.PID != w.pid || ev.Count != w.count {
			t.Errorf("got %s %+v count %d; want %s pid %d count %d", ev.Type, ev.Violation, ev.Count, w.target, w.pid, w.count)
		}
	}
	q.violation(a)
	if ev := next(t, q.ch); ev.Type != EventViolation || ev.Count != 0 {
		t.Errorf("after delivery: %s count %d; want a new violation event", ev.Type, ev.Count)
	}
}

// TestQueueLostWhenCaughtUp: past the bound violations are dropped, also
// while the consumer has read less than half of what was pending; once it
// has, the lost event with their count is queued after what is pending,
// and the violations after it are queued again.
func TestQueueLostWhenCaughtUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := newQueue(ctx)
	q.push(Event{Type: EventStarting}, false)
	next(t, q.ch)
	report := func(prefix string, n int) {
		for i := range n {
			q.violation(Violation{Action: "network-outbound", Target: fmt.Sprintf("%s%d:443", prefix, i)})
		}
	}
	report("h", 2*ExecViolationLimit)
	read := func(n int) (h int) {
		for range n {
			ev := next(t, q.ch)
			if ev.Type != EventViolation || ev.Violation.Target[0] != 'h' {
				t.Fatalf("got %s %+v; want a violation of the first batch", ev.Type, ev.Violation)
			}
			h++
		}
		return h
	}
	h := read(10)
	report("y", 5) // dropped: the consumer has not caught up
	h += read(ExecViolationLimit/2 - 8)
	report("x", 5) // queued after the lost event
	var lost uint64
	x := 0
	for ev := range q.ch {
		switch {
		case ev.Type == EventLost:
			if lost != 0 || x != 0 {
				t.Fatalf("lost %+v after lost %d and %d violations after it", ev, lost, x)
			}
			lost = ev.Lost
		case ev.Type == EventViolation && lost == 0 && ev.Violation.Target[0] == 'h':
			h++
		case ev.Type == EventViolation && lost != 0 && ev.Violation.Target[0] == 'x':
			x++
		default:
			t.Fatalf("unexpected %s %+v (lost %d)", ev.Type, ev.Violation, lost)
		}
		if x == 5 {
			break
		}
	}
	if uint64(h)+lost != 2*ExecViolationLimit+5 {
		t.Errorf("%d delivered + %d lost, want %d", h, lost, 2*ExecViolationLimit+5)
	}
}
