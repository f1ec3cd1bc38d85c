package linux

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/srt-go/srt/sandbox/linux/wire"
	"golang.org/x/sys/unix"
)

// Warm is a sandbox that stays up and runs many commands: bubblewrap with
// srt's PID 1 in agent mode (sandbox/linux/inside's agent_linux.go). Its mounts, namespaces and
// proxies are set up once, by StartWarm; each Exec costs one fork inside.
//
// Its methods are safe for concurrent use.
type Warm struct {
	proc *Process
	conn *net.UnixConn
	// stderr collects bubblewrap's and PID 1's own messages, for errors.
	stderr *lockedBuffer
	done   chan struct{} // closed when the sandbox has ended and been cleaned up
	code   int
	err    error

	wmu sync.Mutex // serialises writes to conn
	mu  sync.Mutex // guards the fields below
	// next is the last exec id handed out.
	next uint64
	// execs are the commands started and not yet reported ended, by id.
	execs map[uint64]*WarmExec
	// acks wait for "frozen" / "thawed", by id.
	acks map[uint64]chan struct{}
	// closed is set once the channel to PID 1 is gone; every pending exec
	// has then been ended with ErrSandboxEnded.
	closed bool
}

// ErrSandboxEnded is the error of an exec whose sandbox ended under it,
// and of calls on a sandbox that has ended.
var ErrSandboxEnded = errors.New("sandbox ended")

// ErrExecTooLarge is wrapped by Exec's error when the command's argv and
// environment do not fit one packet of the agent channel
// (wire.MaxAgentMsg, or the host's socket buffer cap): the command did
// not start, and the sandbox goes on.
var ErrExecTooLarge = errors.New("argv and environment too large for the sandbox's exec channel")

// WarmExec is one command running in a Warm sandbox.
type WarmExec struct {
	// ID identifies the command in Signal.
	ID uint64
	// Started receives the command's pid inside the sandbox, or is closed
	// without a value when it could not start (see Done).
	Started chan int
	// Done is closed when the command has ended; Status is then set.
	Done   chan struct{}
	Status WarmStatus
}

// WarmStatus is how a command ended.
type WarmStatus struct {
	// Code is the exit status, 128+N when killed by signal N, 126 or 127
	// when it could not be started (not executable, not found).
	Code int
	// Signal is N when a signal killed it, else 0.
	Signal int
	// Err says why the command did not run or was lost: a start failure,
	// or ErrSandboxEnded.
	Err error
}

// StartWarm starts a warm sandbox under cfg (cfg.Argv must be empty) and
// returns once its PID 1 is ready for Exec. ctx bounds the start only;
// the sandbox lives until Kill. Errors are *SetupError.
func StartWarm(ctx context.Context, cfg Config) (*Warm, error) {
	if len(cfg.Argv) != 0 {
		return nil, setupErr("a warm sandbox runs no command of its own")
	}
	cfg.Agent = true
	w := &Warm{stderr: &lockedBuffer{}, done: make(chan struct{}), execs: map[uint64]*WarmExec{}, acks: map[uint64]chan struct{}{}}
	cfg.Stdin = nil
	cfg.Stdout = w.stderr
	cfg.Stderr = w.stderr
	p, err := Start(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	w.proc = p
	c, err := net.FileConn(p.agent)
	p.agent.Close()
	if err != nil {
		p.Signal(syscall.SIGKILL)
		p.Wait()
		return nil, setupErr("agent channel: %w", err)
	}
	w.conn = c.(*net.UnixConn)
	// A packet must fit the send buffer whole (else EMSGSIZE): make room
	// for wire.MaxAgentMsg (the kernel doubles the value, capped by
	// net.core.wmem_max; a smaller cap leaves Exec's ErrExecTooLarge).
	w.conn.SetWriteBuffer(wire.MaxAgentMsg)
	ready := make(chan struct{})
	go w.read(ready)
	go func() {
		w.code, w.err = p.Wait()
		w.conn.Close()
		close(w.done)
	}()
	select {
	case <-ready:
		return w, nil
	case <-w.done:
		msg := strings.TrimSpace(w.stderr.String())
		if w.err != nil {
			return nil, setupErr("%w: %s", w.err, msg)
		}
		return nil, setupErr("sandbox ended before it was ready (status %d): %s", w.code, msg)
	case <-ctx.Done():
		w.Kill()
		return nil, setupErr("starting the sandbox: %w", ctx.Err())
	}
}

// read dispatches PID 1's messages until the channel closes.
func (w *Warm) read(ready chan struct{}) {
	buf := make([]byte, wire.MaxAgentMsg)
	once := sync.Once{}
	for {
		n, err := w.conn.Read(buf)
		if err != nil || n == 0 {
			break
		}
		var m wire.AgentMsg
		if json.Unmarshal(buf[:n], &m) != nil {
			continue
		}
		w.mu.Lock()
		e := w.execs[m.ID]
		switch m.Op {
		case wire.AgentReady:
			once.Do(func() { close(ready) })
		case wire.AgentStarted:
			if e != nil {
				e.Started <- m.Pid
			}
		case wire.AgentFailed, wire.AgentExit:
			if e != nil {
				delete(w.execs, m.ID)
				e.Status = WarmStatus{Code: m.Code, Signal: m.Signal}
				if m.Op == wire.AgentFailed {
					e.Status.Err = errors.New(m.Error)
					close(e.Started)
				}
				close(e.Done)
			}
		case wire.AgentFrozen, wire.AgentThawed:
			if ch := w.acks[m.ID]; ch != nil {
				delete(w.acks, m.ID)
				close(ch)
			}
		}
		w.mu.Unlock()
	}
	w.mu.Lock()
	w.closed = true
	for id, e := range w.execs {
		delete(w.execs, id)
		e.Status = WarmStatus{Code: wire.ExitSignalShift + int(unix.SIGKILL), Signal: int(unix.SIGKILL), Err: ErrSandboxEnded}
		select {
		case <-e.Started:
		default:
			close(e.Started)
		}
		close(e.Done)
	}
	for id, ch := range w.acks {
		delete(w.acks, id)
		close(ch)
	}
	w.mu.Unlock()
}

// WarmCommand is one command for Exec.
type WarmCommand struct {
	// Argv[0] is looked up in Env's PATH inside the sandbox.
	Argv []string
	// Env ("K=V") overrides PID 1's environment (Config.Env plus the
	// proxy variables, TMPDIR and SANDBOX_RUNTIME) for this command.
	Env []string
	// Dir is the working directory inside the sandbox; empty means the
	// sandbox's.
	Dir string
	// Stdin, Stdout and Stderr are the sandbox's ends of the command's
	// stdio, passed to PID 1 and closed by Exec's caller afterwards.
	Stdin, Stdout, Stderr *os.File
	// TTY says Stdin is a terminal to make the controlling terminal.
	TTY bool
}

// Exec starts a command. The returned WarmExec reports its pid and its
// end. It fails with ErrSandboxEnded when the sandbox is gone.
func (w *Warm) Exec(c WarmCommand) (*WarmExec, error) {
	if len(c.Argv) == 0 || c.Stdin == nil || c.Stdout == nil || c.Stderr == nil {
		return nil, errors.New("exec: argv and the three stdio files are required")
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil, ErrSandboxEnded
	}
	w.next++
	e := &WarmExec{ID: w.next, Started: make(chan int, 1), Done: make(chan struct{})}
	w.execs[e.ID] = e
	w.mu.Unlock()
	b, _ := json.Marshal(wire.AgentMsg{Op: wire.AgentExec, ID: e.ID, Argv: c.Argv, Env: c.Env, Dir: c.Dir, TTY: c.TTY})
	if len(b) > wire.MaxAgentMsg {
		w.forget(e.ID)
		return nil, fmt.Errorf("exec: %w: %d bytes encoded, more than %d", ErrExecTooLarge, len(b), wire.MaxAgentMsg)
	}
	rights := unix.UnixRights(int(c.Stdin.Fd()), int(c.Stdout.Fd()), int(c.Stderr.Fd()))
	w.wmu.Lock()
	_, _, err := w.conn.WriteMsgUnix(b, rights, nil)
	w.wmu.Unlock()
	if errors.Is(err, syscall.EMSGSIZE) {
		w.forget(e.ID)
		return nil, fmt.Errorf("exec: %w: %d bytes encoded, more than the socket buffer takes (%w)", ErrExecTooLarge, len(b), err)
	}
	if err != nil {
		w.forget(e.ID)
		return nil, fmt.Errorf("exec: %w (%w)", ErrSandboxEnded, err)
	}
	return e, nil
}

func (w *Warm) forget(id uint64) {
	w.mu.Lock()
	delete(w.execs, id)
	w.mu.Unlock()
}

// Signal sends sig to the process group of exec id.
func (w *Warm) Signal(id uint64, sig syscall.Signal) error {
	return w.send(wire.AgentMsg{Op: wire.AgentSignal, ID: id, Sig: int(sig)})
}

func (w *Warm) send(m wire.AgentMsg) error {
	b, _ := json.Marshal(m)
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if _, err := w.conn.Write(b); err != nil {
		return fmt.Errorf("%w (%w)", ErrSandboxEnded, err)
	}
	return nil
}

// Freeze stops every process in the sandbox but PID 1 (SIGSTOP through
// kill(-1) from inside the PID namespace) and returns once PID 1 has done
// it. Thaw resumes them (SIGCONT).
func (w *Warm) Freeze(ctx context.Context) error { return w.freeze(ctx, wire.AgentFreeze) }

// Thaw resumes what Freeze stopped.
func (w *Warm) Thaw(ctx context.Context) error { return w.freeze(ctx, wire.AgentThaw) }

func (w *Warm) freeze(ctx context.Context, op string) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrSandboxEnded
	}
	w.next++
	id := w.next
	ack := make(chan struct{})
	w.acks[id] = ack
	w.mu.Unlock()
	if err := w.send(wire.AgentMsg{Op: op, ID: id}); err != nil {
		return err
	}
	select {
	case <-ack:
		if w.isClosed() {
			return ErrSandboxEnded
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *Warm) isClosed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}

// Pid1 returns the host pid of the sandbox's PID 1, or 0 if unknown.
func (w *Warm) Pid1() int {
	w.proc.mu.Lock()
	defer w.proc.mu.Unlock()
	if w.proc.pid1 == 0 {
		select {
		case pid, ok := <-w.proc.initPID:
			if ok {
				w.proc.pid1 = pid
			}
		case <-time.After(time.Second):
		}
	}
	return w.proc.pid1
}

// BwrapPID returns the host pid of bubblewrap.
func (w *Warm) BwrapPID() int { return w.proc.cmd.Process.Pid }

// Done is closed once the sandbox has ended and been cleaned up (proxies
// closed, placeholders removed).
func (w *Warm) Done() <-chan struct{} { return w.done }

// Kill ends the sandbox: every process in it, its proxies and its
// placeholders; it returns once all are gone. It is idempotent. Its error
// is the *SetupError of a failed placeholder cleanup, else nil.
func (w *Warm) Kill() error {
	// SIGKILL to bubblewrap: PID 1 has PR_SET_PDEATHSIG from
	// --die-with-parent, and the kernel kills the whole PID namespace
	// with it.
	w.proc.cmd.Process.Kill()
	if pid := w.Pid1(); pid > 0 {
		unix.Kill(pid, unix.SIGKILL)
	}
	<-w.done
	// Only a failed cleanup is the caller's business once it kills the
	// sandbox: how the sandbox ended is not.
	if errors.Is(w.err, errPlaceholderCleanup) {
		return w.err
	}
	return nil
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes, bounded so
// that a chatty sandbox cannot grow it without end.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() < 64<<10 {
		l.b.Write(p)
	}
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
