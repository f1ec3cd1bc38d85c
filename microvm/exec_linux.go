package microvm

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/yamux"
	"github.com/srt-go/srt/microvm/internal/wire"
)

// TTYSize is a terminal size in character cells.
type TTYSize = wire.TTYSize

// ExecRequest is one process to run in the guest.
type ExecRequest struct {
	// Argv is the command; Argv[0] is looked up in the guest's PATH.
	Argv []string
	// Env adds to or replaces the guest's default environment (PATH,
	// HOME, the proxy variables of proxy.Env). Nil adds nothing.
	Env []string
	// Dir is the working directory in the guest. Empty means /.
	Dir string
	// Stdin is copied to the process, then end-of-input is sent. Nil
	// means an empty input.
	Stdin io.Reader
	// Stdout and Stderr receive the output; nil discards it. With TTY,
	// everything arrives on Stdout. All writes come from one goroutine,
	// in the order the guest sent them; a slow writer slows the guest's
	// output (flow control), it loses nothing.
	Stdout, Stderr io.Writer
	// TTY, when not nil, runs the process on a new PTY of that size, as
	// a session leader with it as the controlling terminal.
	TTY *TTYSize
}

// Process is a process running in the guest.
type Process struct {
	// ID numbers the VM's processes from 1; events carry it.
	ID int
	// PID is the process id inside the guest.
	PID int

	vm      *VM
	st      *yamux.Stream
	wmu     sync.Mutex // one frame at a time
	done    chan struct{}
	code    int
	err     error
	killedB string // why the host killed it, or ""
	kmu     sync.Mutex
}

// Exec starts a process in the guest. It returns once the guest started
// it (an error if Argv[0] was not found or the VM is not warm or
// active). As with exec.CommandContext, ctx ending kills the process
// (SIGKILL to its process group) and Wait then reports 137 and a killed
// event.
func (v *VM) Exec(ctx context.Context, req ExecRequest) (*Process, error) {
	v.mu.Lock()
	if v.state != StateWarm && v.state != StateActive {
		st := v.state
		v.mu.Unlock()
		return nil, fmt.Errorf("exec in a %s VM: %w", st, ErrState)
	}
	sess := v.sess
	v.nextID++
	p := &Process{ID: v.nextID, vm: v, done: make(chan struct{})}
	v.active++
	v.setStateLocked(StateActive)
	v.mu.Unlock()
	ok := false
	defer func() {
		if !ok {
			v.execDone()
		}
	}()
	st, err := sess.OpenStream()
	if err != nil {
		return nil, fmt.Errorf("open exec stream: %w", err)
	}
	p.st = st
	st.SetDeadline(time.Now().Add(v.cfg.RequestTimeout))
	st.Write([]byte{byte(wire.KindExec)})
	if err := wire.WriteJSON(st, wire.ExecRequest{Argv: req.Argv, Env: req.Env, Dir: req.Dir, TTY: req.TTY, UnixTime: time.Now().UnixNano()}); err != nil {
		st.Close()
		return nil, fmt.Errorf("send exec request: %w", err)
	}
	var started wire.ExecStarted
	if err := wire.ReadJSON(st, &started); err != nil {
		st.Close()
		return nil, fmt.Errorf("exec: %w", err)
	}
	st.SetDeadline(time.Time{})
	if started.Error != "" {
		st.Close()
		return nil, &ExecError{Argv: req.Argv, Msg: started.Error, Code: started.Code}
	}
	p.PID = started.PID
	ok = true

	go p.copyStdin(req.Stdin)
	stopCtx := context.AfterFunc(ctx, func() {
		reason := "manual"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			reason = "timeout"
		}
		p.kill(reason)
	})
	go func() {
		defer stopCtx()
		p.readOutput(req)
	}()
	return p, nil
}

// ExecError is a process the guest could not start.
type ExecError struct {
	Argv []string
	Msg  string
	// Code is the exit status a shell gives for the failure: 127 command
	// not found, 126 not executable; 0 when the guest failed otherwise.
	Code int
}

func (e *ExecError) Error() string {
	return "exec " + strconv.Quote(e.Argv[0]) + " in the guest: " + e.Msg
}

func (v *VM) execDone() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.active--
	if v.active == 0 && v.state == StateActive {
		v.state = StateWarm
	}
}

func (p *Process) frame(typ byte, b []byte) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	return wire.WriteFrame(p.st, typ, b)
}

func (p *Process) copyStdin(r io.Reader) {
	if r != nil {
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 && p.frame(wire.FrameStdin, buf[:n]) != nil {
				return
			}
			if err != nil {
				break
			}
		}
	}
	p.frame(wire.FrameStdin, nil)
}

func (p *Process) readOutput(req ExecRequest) {
	v := p.vm
	defer v.execDone()
	defer close(p.done)
	defer p.st.Close()
	var buf []byte
	for {
		typ, b, err := wire.ReadFrame(p.st, buf)
		if err != nil {
			p.code, p.err = -1, fmt.Errorf("process %d: control channel: %w", p.ID, err)
			return
		}
		buf = b[:0]
		switch typ {
		case wire.FrameStdout, wire.FrameStderr:
			w, et := req.Stdout, EventStdout
			if typ == wire.FrameStderr {
				w, et = req.Stderr, EventStderr
			}
			if w != nil {
				w.Write(b)
			}
			if v.events != nil {
				v.events.emit(Event{Type: et, ExecID: p.ID, Data: append([]byte(nil), b...)})
			}
		case wire.FrameViolation:
			// A refusal the guest's supervisor saw in this process's
			// tree: the same event and callback as the proxies'.
			vi, err := wire.DecodeViolation(b)
			if err != nil {
				v.log.Debug("guest violation frame", "exec", p.ID, "error", err)
				continue
			}
			if v.events != nil {
				v.events.emit(Event{Type: EventViolation, ExecID: p.ID, Violation: &vi})
			}
			if v.cfg.OnViolation != nil {
				v.cfg.OnViolation(vi)
			}
		case wire.FrameExit:
			var es wire.ExitStatus
			if err := json.Unmarshal(b, &es); err != nil {
				p.code, p.err = -1, fmt.Errorf("process %d: bad exit frame: %w", p.ID, err)
				return
			}
			if es.ViolationsDropped > 0 {
				v.log.Warn("guest violations dropped", "exec", p.ID, "count", es.ViolationsDropped)
			}
			p.code = es.Code
			p.kmu.Lock()
			why := p.killedB
			p.kmu.Unlock()
			if es.Signal == int(syscall.SIGKILL) && why == "" {
				why = "signal 9 in the guest (OOM or kill)"
			}
			if es.Signal != 0 && why != "" {
				v.events.emit(Event{Type: EventKilled, ExecID: p.ID, ExitCode: es.Code, Reason: why})
			}
			v.events.emit(Event{Type: EventExit, ExecID: p.ID, ExitCode: es.Code})
			return
		}
	}
}

// Wait waits for the process to exit and returns its exit status, 128+N
// when a signal N killed it. The error is non-nil only when the status
// is unknown (the VM died or was closed); the code is then -1. Wait may
// be called more than once.
func (p *Process) Wait() (int, error) {
	<-p.done
	return p.code, p.err
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Signal sends sig to the process's process group in the guest.
func (p *Process) Signal(sig syscall.Signal) error {
	if sig <= 0 || sig > 64 {
		return fmt.Errorf("signal %d out of range", sig)
	}
	return p.frame(wire.FrameSignal, []byte{byte(sig)})
}

func (p *Process) kill(reason string) {
	p.kmu.Lock()
	if p.killedB == "" {
		p.killedB = reason
	}
	p.kmu.Unlock()
	p.Signal(syscall.SIGKILL)
}

// Kill kills the process group (SIGKILL); the killed event says "manual".
func (p *Process) Kill() error {
	p.kill("manual")
	return nil
}

// Resize changes the PTY's size; it does nothing without a TTY.
func (p *Process) Resize(sz TTYSize) error {
	var b [4]byte
	binary.BigEndian.PutUint16(b[:], sz.Rows)
	binary.BigEndian.PutUint16(b[2:], sz.Cols)
	return p.frame(wire.FrameResize, b[:])
}
