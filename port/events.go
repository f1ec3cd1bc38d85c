package port

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// The bounds of a sandbox's event stream (EventSubscriber). Events of the
// sandbox stream carry no output, so a bound in events is a bound in
// memory: a few hundred bytes each (a violation's raw line the most).
const (
	// HistoryLimit is how many of a sandbox's latest events Subscribe can
	// still replay: a client that subscribes late, or resumes with
	// afterSeq (SSE Last-Event-ID), sees them; older ones are a lost
	// event.
	HistoryLimit = 256
	// SubscriberBuffer is how many events one subscriber may have pending
	// (published, not yet taken from its channel), replay included. One
	// more and the subscriber is dropped: it receives what it had
	// pending, then a lost event counting what it missed, and its channel
	// is closed. The sandbox and the other subscribers never wait for it.
	SubscriberBuffer = 512
	// MaxSubscribers bounds the subscriptions to one sandbox at once; one
	// more is ErrTooManySubscribers.
	MaxSubscribers = 8
)

// ErrTooManySubscribers is returned by Subscribe when MaxSubscribers
// subscriptions to the sandbox are open. The server answers 429.
var ErrTooManySubscribers = errors.New("too many subscribers to this sandbox's events")

// eventLog is one sandbox's event stream: it numbers the events, keeps
// the last HistoryLimit and hands them to each subscriber through a
// bounded queue of its own. publish never blocks.
type eventLog struct {
	// tag is the stream's tag (EventSubscriber.StreamTag), set once.
	tag  string
	mu   sync.Mutex // guards the fields below and every subscriber's
	seq  uint64
	hist []Event // oldest first; the last HistoryLimit are kept
	subs map[*subscriber]struct{}
	// closed is set after the destroyed event: no more events, and every
	// subscriber's stream ends once it has taken what is pending.
	closed bool
}

// subscriber is one Subscribe call's queue; its fields are guarded by the
// log's mu except last, which only its pump touches.
type subscriber struct {
	ch      chan Event
	wake    chan struct{} // capacity 1: something changed
	pending []Event
	// overflow is set when pending was full: lost counts the events not
	// queued since, and the pump ends the stream with a lost event once
	// pending is delivered.
	overflow bool
	lost     uint64
	last     uint64 // Seq of the last event delivered
}

func newEventLog() *eventLog {
	var b [6]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return &eventLog{tag: hex.EncodeToString(b[:]), subs: map[*subscriber]struct{}{}}
}

// publish numbers ev, keeps it in the history and queues it for every
// subscriber. It does nothing once the log is closed.
func (l *eventLog) publish(ev Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.publishLocked(ev)
}

func (l *eventLog) publishLocked(ev Event) {
	if l.closed {
		return
	}
	l.seq++
	ev.Seq = l.seq
	ev.Time = time.Now()
	l.hist = append(l.hist, ev)
	if len(l.hist) >= 2*HistoryLimit {
		l.hist = slices.Clone(l.hist[len(l.hist)-HistoryLimit:])
	}
	for sub := range l.subs {
		sub.offer(ev)
	}
}

// close publishes last (the destroyed event) and closes the log.
func (l *eventLog) close(last Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.publishLocked(last)
	l.closed = true
	for sub := range l.subs {
		sub.poke()
	}
}

func (sub *subscriber) offer(ev Event) {
	switch {
	case sub.overflow:
		sub.lost++
		return
	case len(sub.pending) >= SubscriberBuffer:
		sub.overflow = true
		sub.lost++
	default:
		sub.pending = append(sub.pending, ev)
	}
	sub.poke()
}

func (sub *subscriber) poke() {
	select {
	case sub.wake <- struct{}{}:
	default:
	}
}

// history returns the kept events, oldest first.
func (l *eventLog) history() []Event {
	return l.hist[max(0, len(l.hist)-HistoryLimit):]
}

// subscribe implements EventSubscriber.Subscribe for the log.
func (l *eventLog) subscribe(ctx context.Context, afterSeq uint64) (<-chan Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.subs) >= MaxSubscribers {
		return nil, fmt.Errorf("%w (%d)", ErrTooManySubscribers, MaxSubscribers)
	}
	h := l.history()
	var gap *Event
	switch {
	case afterSeq > l.seq:
		// A seq this stream never published: a cursor from another
		// stream (ResetSeq), e.g. of a sandbox that had this id
		// before. Start again from the first kept event, and say so.
		afterSeq = 0
		gap = &Event{Type: EventLost, Reason: LostReset}
		if len(h) > 0 {
			gap.Lost = h[0].Seq - 1
		}
	case len(h) > 0 && h[0].Seq > afterSeq+1:
		// Events past afterSeq left the history: say how many.
		gap = &Event{Type: EventLost, Seq: afterSeq, Lost: h[0].Seq - afterSeq - 1}
	}
	sub := &subscriber{ch: make(chan Event), wake: make(chan struct{}, 1), last: afterSeq}
	if gap != nil {
		gap.Time = time.Now()
		sub.pending = append(sub.pending, *gap)
	}
	for _, ev := range h {
		if ev.Seq > afterSeq {
			sub.pending = append(sub.pending, ev)
		}
	}
	if !l.closed {
		l.subs[sub] = struct{}{}
	}
	go l.pump(ctx, sub)
	return sub.ch, nil
}

// pump hands sub's pending events to its channel as the consumer reads.
func (l *eventLog) pump(ctx context.Context, sub *subscriber) {
	defer close(sub.ch)
	for {
		l.mu.Lock()
		if len(sub.pending) == 0 {
			_, live := l.subs[sub]
			switch {
			case sub.overflow:
				lost := sub.lost
				delete(l.subs, sub)
				l.mu.Unlock()
				// Seq is the last event delivered: resuming after it
				// (Last-Event-ID) replays what is still in the history.
				ev := Event{Type: EventLost, Seq: sub.last, Time: time.Now(), Lost: lost}
				select {
				case sub.ch <- ev:
				case <-ctx.Done():
				}
				return
			case l.closed || !live:
				delete(l.subs, sub)
				l.mu.Unlock()
				return
			}
			l.mu.Unlock()
			select {
			case <-sub.wake:
				continue
			case <-ctx.Done():
				l.unsubscribe(sub)
				return
			}
		}
		ev := sub.pending[0]
		sub.pending[0] = Event{}
		sub.pending = sub.pending[1:]
		if len(sub.pending) == 0 {
			sub.pending = nil
		}
		l.mu.Unlock()
		select {
		case sub.ch <- ev:
			sub.last = ev.Seq
		case <-ctx.Done():
			l.unsubscribe(sub)
			return
		}
	}
}

func (l *eventLog) unsubscribe(sub *subscriber) {
	l.mu.Lock()
	delete(l.subs, sub)
	l.mu.Unlock()
}
