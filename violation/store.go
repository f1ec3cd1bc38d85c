package violation

import (
	"strings"
	"sync"
)

// DefaultCapacity is the ring size of NewStore(0), as the reference's
// SandboxViolationStore keeps (srt-notes §3.1).
const DefaultCapacity = 100

// Store keeps the most recent violations in a bounded ring and fans them
// out to subscribers. It is safe for concurrent use; Add never blocks.
// The zero Store is not usable; call NewStore.
type Store struct {
	mu    sync.Mutex
	ring  []Violation // guarded by mu; len(ring) == capacity
	next  int         // guarded by mu; index the next Add writes
	count int         // guarded by mu; entries in the ring
	total int         // guarded by mu; entries ever added
	subs  map[*subscriber]struct{}
	drops int // guarded by mu; sends dropped because a subscriber was full
}

// subscriber is one Subscribe: Add appends to queue (never blocks), and
// its pump goroutine hands the queue to ch in order. The backlog grows as
// needed up to limit, so a large limit costs nothing until it is used
// (a channel of that size would be allocated whole at every srt start).
type subscriber struct {
	ch      chan Violation
	wake    chan struct{} // cap 1: the queue or closed changed
	queue   []Violation   // guarded by Store.mu; not yet taken by the pump
	pending int           // guarded by Store.mu; queued or taken, not yet received
	limit   int
	closed  bool // guarded by Store.mu
	drops   int
}

// NewStore returns a Store that keeps the last capacity violations.
// capacity <= 0 means DefaultCapacity.
func NewStore(capacity int) *Store {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	return &Store{ring: make([]Violation, capacity), subs: map[*subscriber]struct{}{}}
}

// Add records v, evicting the oldest entry when the ring is full, and
// offers it to every subscriber. It never blocks: a subscriber whose
// buffer is full misses v, and the miss is counted (Dropped).
func (s *Store) Add(v Violation) {
	if v.Raw == "" {
		v.Raw = v.Line()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ring[s.next] = v
	s.next = (s.next + 1) % len(s.ring)
	s.count = min(s.count+1, len(s.ring))
	s.total++
	for sub := range s.subs {
		if sub.pending >= sub.limit {
			sub.drops++
			s.drops++
			continue
		}
		sub.queue = append(sub.queue, v)
		sub.pending++
		sub.signal()
	}
}

// snapshotLocked returns the ring's entries, oldest first.
func (s *Store) snapshotLocked() []Violation {
	out := make([]Violation, 0, s.count)
	start := (s.next - s.count + len(s.ring)) % len(s.ring)
	for i := range s.count {
		out = append(out, s.ring[(start+i)%len(s.ring)])
	}
	return out
}

// Violations returns the ring's entries, oldest first: the last limit of
// them, or all when limit <= 0.
func (s *Store) Violations(limit int) []Violation {
	s.mu.Lock()
	all := s.snapshotLocked()
	s.mu.Unlock()
	if limit > 0 && len(all) > limit {
		all = all[len(all)-limit:]
	}
	return all
}

// Count returns how many violations the ring holds (at most its capacity).
func (s *Store) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// TotalCount returns how many violations were ever added, evicted ones
// included.
func (s *Store) TotalCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// Dropped returns how many deliveries to subscribers were dropped because
// a subscriber's buffer was full. The ring itself loses nothing but what
// it evicts.
func (s *Store) Dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.drops
}

// ForCommand returns the ring's violations whose Key is key, oldest
// first. Keys are compared whole (never on a prefix), so commands that
// share a long prefix are never mixed up. An empty key matches nothing.
func (s *Store) ForCommand(key string) []Violation {
	if key == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Violation
	for _, v := range s.snapshotLocked() {
		if v.Key == key {
			out = append(out, v)
		}
	}
	return out
}

// Clear empties the ring. TotalCount and subscriptions are kept.
func (s *Store) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.ring)
	s.next, s.count = 0, 0
}

// Subscribe returns a channel that receives each violation added from now
// on, in order, and a function that ends the subscription (safe to call
// more than once): the channel then receives what was already added and
// is closed, so the caller drains it. buf (at least 1) bounds how many
// violations may wait for the receiver; beyond it, Add drops the
// violation for this subscriber rather than wait, and counts the drop.
// The backlog's memory grows with use, not with buf.
func (s *Store) Subscribe(buf int) (<-chan Violation, func()) {
	sub := &subscriber{ch: make(chan Violation), wake: make(chan struct{}, 1), limit: max(buf, 1)}
	s.mu.Lock()
	s.subs[sub] = struct{}{}
	s.mu.Unlock()
	go s.pump(sub)
	var once sync.Once
	return sub.ch, func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.subs, sub)
			sub.closed = true
			sub.signal()
			s.mu.Unlock()
		})
	}
}

// signal wakes sub's pump without blocking.
func (sub *subscriber) signal() {
	select {
	case sub.wake <- struct{}{}:
	default:
	}
}

// pump hands sub's queue to its channel until the subscription ends and
// the queue is empty, then closes the channel.
func (s *Store) pump(sub *subscriber) {
	for {
		s.mu.Lock()
		batch, closed := sub.queue, sub.closed
		sub.queue = nil
		s.mu.Unlock()
		for _, v := range batch {
			sub.ch <- v
			s.mu.Lock()
			sub.pending--
			s.mu.Unlock()
		}
		if len(batch) > 0 {
			continue
		}
		if closed {
			close(sub.ch)
			return
		}
		<-sub.wake
	}
}

// Annotate returns stderr followed by a block listing the Raw line of
// each of key's violations in the ring, the form an agent harness feeds
// back to a model (the reference's annotateStderrWithSandboxFailures):
//
//	<stderr>
//	<sandbox_violations>
//	deny file-write-create /etc/x (outside the write roots)
//	</sandbox_violations>
//
// stderr is returned unchanged when key has no violations.
func (s *Store) Annotate(key, stderr string) string {
	vs := s.ForCommand(key)
	if len(vs) == 0 {
		return stderr
	}
	var b strings.Builder
	b.WriteString(stderr)
	b.WriteString("\n<sandbox_violations>\n")
	for _, v := range vs {
		b.WriteString(strings.ReplaceAll(v.Raw, "\n", " "))
		b.WriteString("\n")
	}
	b.WriteString("</sandbox_violations>")
	return b.String()
}
