package microvm

import (
	"sync"
	"time"

	"github.com/srt-go/srt/violation"
)

// State is a VM's lifecycle state: seed 000's SandboxState, the one set
// of states for a VM and for a port session (port.State is this type; a
// session on any backend moves through the same states, see
// port.CanTransition).
type State string

const (
	StateCreated   State = "created"   // launched, not booted (not ready) yet
	StateWarm      State = "warm"      // booted, agent ready, nothing running
	StateActive    State = "active"    // at least one Exec process running
	StateSuspended State = "suspended" // paused, maybe snapshotted to disk
	StateDestroyed State = "destroyed" // Close ran; the VM is gone
	StateError     State = "error"     // boot failed or QEMU died; see VM.Err
)

// EventType names an event (seed 000, "Événements du bac à sable"): the
// one set for a VM's stream and a port exec's (port.EventType is this
// type).
type EventType string

const (
	EventStarting  EventType = "starting"
	EventReady     EventType = "ready"
	EventStdout    EventType = "stdout"
	EventStderr    EventType = "stderr"
	EventExit      EventType = "exit"
	EventKilled    EventType = "killed"
	EventViolation EventType = "violation"
)

// Event is one entry of a VM's event stream. It is not port.Event: a VM
// numbers its processes (ExecID int, the Process.ID), always has an exit
// status, and reports the proxies' own Violation; port.Event is the wire
// form srtd sends (Seq, a string ExecID, an optional ExitCode).
type Event struct {
	Type EventType
	Time time.Time
	// ExecID is the Process.ID for stdout, stderr, exit, killed and a
	// refusal in the guest (wire.FrameViolation); 0 for VM-wide events
	// (the proxies' refusals).
	ExecID int
	// Data is the output for stdout and stderr.
	Data []byte
	// ExitCode is set for exit: the status, 128+N for signal N.
	ExitCode int
	// Reason says why for killed ("manual", "timeout", "signal N") and
	// for starting/ready gives the accelerator.
	Reason string
	// Violation is set for violation.
	Violation *violation.Violation
}

// eventQueue delivers events in order and without loss: emit appends to
// an unbounded slice and one goroutine feeds the channel. A consumer that
// stops reading makes the queue grow, never an emitter block.
type eventQueue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	q      []Event
	closed bool
	ch     chan Event
}

func newEventQueue() *eventQueue {
	e := &eventQueue{ch: make(chan Event, 64)}
	e.cond = sync.NewCond(&e.mu)
	go e.pump()
	return e
}

func (e *eventQueue) emit(ev Event) {
	if e == nil {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	e.mu.Lock()
	if !e.closed {
		e.q = append(e.q, ev)
		e.cond.Signal()
	}
	e.mu.Unlock()
}

// close delivers what is queued, then closes the channel.
func (e *eventQueue) close() {
	if e == nil {
		return
	}
	e.mu.Lock()
	e.closed = true
	e.cond.Signal()
	e.mu.Unlock()
}

func (e *eventQueue) pump() {
	for {
		e.mu.Lock()
		for len(e.q) == 0 && !e.closed {
			e.cond.Wait()
		}
		if len(e.q) == 0 && e.closed {
			e.mu.Unlock()
			close(e.ch)
			return
		}
		batch := e.q
		e.q = nil
		e.mu.Unlock()
		for _, ev := range batch {
			e.ch <- ev
		}
	}
}
