package port

import (
	"context"
	"sync"
	"time"
)

// The bounds of what violations can make one exec's stream hold while its
// consumer does not read (issue 16: a sandbox that floods refusals, e.g.
// CONNECTs its proxy denies, must not grow srtd's memory, which is outside
// every session's cgroup). A violation source is never blocked, so past
// these bounds the stream drops violations instead of waiting, and says
// how many with a lost event (see queue.violation).
const (
	// ExecViolationLimit is how many violation events one exec's stream
	// may have pending (queued, not yet taken by its consumer).
	ExecViolationLimit = 1024
	// ExecViolationBytes bounds the same pending events' size, bytes (see
	// violationSize).
	ExecViolationBytes = 1 << 20
)

// queue delivers one exec's events in order: push never reorders, and a
// pump goroutine hands them to the channel as the consumer reads. Output
// pushes wait while more than queueLimit bytes are pending (back-pressure
// on the command); other events never wait, so a violation source is
// never blocked.
//
// Violations are bounded instead (ExecViolationLimit, ExecViolationBytes):
// a violation identical to one still pending (all fields but Time) is
// folded into it (Event.Count), and past the bounds violations are
// dropped and counted until the consumer has caught up to half of them;
// then one lost event (Event.Lost: how many were dropped) is queued, and
// violations are queued again. The exit or killed event is always
// preceded by the lost event of drops before it. Output, starting, ready,
// exit and killed are never dropped.
type queue struct {
	ch chan Event
	// tee, when set, also receives the exit or killed event (before its
	// Seq is set), even once the consumer is gone. It must not block.
	tee    func(Event)
	mu     sync.Mutex
	cond   *sync.Cond
	items  []Event // items[i].Seq == items[0].Seq+i
	bytes  int     // output bytes pending
	seq    uint64
	closed bool // no more pushes
	gone   bool // the consumer's ctx ended: drop everything
	// viol, vbytes: the violation events pending and their size; pend:
	// the Seq of the pending violation event each violation (Time zeroed)
	// folds into; dropped: violations dropped since the last lost event.
	viol    int
	vbytes  int
	pend    map[Violation]uint64
	dropped uint64
}

const queueLimit = 1 << 20

func newQueue(ctx context.Context) *queue {
	q := &queue{ch: make(chan Event), pend: map[Violation]uint64{}}
	q.cond = sync.NewCond(&q.mu)
	go q.pump(ctx)
	return q
}

func (q *queue) push(ev Event, bounded bool) {
	if q.tee != nil && (ev.Type == EventExit || ev.Type == EventKilled) {
		q.tee(ev)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for bounded && q.bytes > queueLimit && !q.gone {
		q.cond.Wait()
	}
	if q.closed || q.gone {
		return
	}
	q.flushLostLocked(ev.Type == EventExit || ev.Type == EventKilled)
	q.appendLocked(ev)
	q.bytes += len(ev.Data)
}

// violation queues a violation event for v without ever waiting: folded
// into an identical pending one, dropped (and counted) past the bounds, or
// appended.
func (q *queue) violation(v Violation) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.gone {
		return
	}
	key := v
	key.Time = time.Time{}
	if seq, ok := q.pend[key]; ok {
		ev := &q.items[seq-q.items[0].Seq]
		ev.Count = max(ev.Count, 1) + 1
		return
	}
	size := violationSize(&v)
	if q.dropped > 0 || q.viol >= ExecViolationLimit || q.vbytes+size > ExecViolationBytes {
		q.dropped++
		return
	}
	q.appendLocked(Event{Type: EventViolation, Violation: &v})
	q.pend[key] = q.seq
	q.viol++
	q.vbytes += size
}

// flushLostLocked queues the lost event of the violations dropped so far
// once the consumer has caught up to half the bounds, or at once when
// force is set (the stream's last event comes next).
func (q *queue) flushLostLocked(force bool) {
	if q.dropped == 0 {
		return
	}
	if !force && (q.viol > ExecViolationLimit/2 || q.vbytes > ExecViolationBytes/2) {
		return
	}
	q.appendLocked(Event{Type: EventLost, Lost: q.dropped})
	q.dropped = 0
}

func (q *queue) appendLocked(ev Event) {
	q.seq++
	ev.Seq = q.seq
	ev.Time = time.Now()
	q.items = append(q.items, ev)
	q.cond.Broadcast()
}

// violationSize is what a pending violation event is counted as against
// ExecViolationBytes: its strings' lengths and a fixed 256 for the rest.
func violationSize(v *Violation) int {
	return 256 + len(v.Action) + len(v.Target) + len(v.Reason) + len(v.Exe) + len(v.Command) +
		len(v.Key) + len(v.Protocol) + len(v.Rule) + len(v.Raw)
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
}

// take removes the first pending event; q.mu is held and items is not
// empty.
func (q *queue) takeLocked() Event {
	ev := q.items[0]
	q.items[0] = Event{}
	q.items = q.items[1:]
	q.bytes -= len(ev.Data)
	if ev.Type == EventViolation {
		key := *ev.Violation
		key.Time = time.Time{}
		if q.pend[key] == ev.Seq {
			delete(q.pend, key)
		}
		q.viol--
		q.vbytes -= violationSize(ev.Violation)
		q.flushLostLocked(false)
	}
	q.cond.Broadcast()
	return ev
}

func (q *queue) pump(ctx context.Context) {
	defer close(q.ch)
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		q.gone = true
		q.cond.Broadcast()
		q.mu.Unlock()
	})
	defer stop()
	for {
		q.mu.Lock()
		for len(q.items) == 0 && !q.closed && !q.gone {
			q.cond.Wait()
		}
		if q.gone || len(q.items) == 0 {
			q.mu.Unlock()
			return
		}
		ev := q.takeLocked()
		q.mu.Unlock()
		select {
		case q.ch <- ev:
		case <-ctx.Done():
			q.mu.Lock()
			q.gone = true
			q.cond.Broadcast()
			q.mu.Unlock()
			return
		}
	}
}
