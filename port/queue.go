package port

import (
	"context"
	"sync"
	"time"
)

// queue delivers one exec's events in order: push never reorders, and a
// pump goroutine hands them to the channel as the consumer reads. Output
// pushes wait while more than queueLimit bytes are pending (back-pressure
// on the command); other events never wait, so a violation source is
// never blocked.
type queue struct {
	ch chan Event
	// tee, when set, also receives the exit or killed event (before its
	// Seq is set), even once the consumer is gone. It must not block.
	tee    func(Event)
	mu     sync.Mutex
	cond   *sync.Cond
	items  []Event
	bytes  int
	seq    uint64
	closed bool // no more pushes
	gone   bool // the consumer's ctx ended: drop everything
}

const queueLimit = 1 << 20

func newQueue(ctx context.Context) *queue {
	q := &queue{ch: make(chan Event)}
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
	q.seq++
	ev.Seq = q.seq
	ev.Time = time.Now()
	q.items = append(q.items, ev)
	q.bytes += len(ev.Data)
	q.cond.Broadcast()
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
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
		ev := q.items[0]
		q.items = q.items[1:]
		q.bytes -= len(ev.Data)
		q.cond.Broadcast()
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
