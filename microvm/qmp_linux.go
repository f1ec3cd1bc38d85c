package microvm

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// qmp is a minimal QEMU Machine Protocol client (docs/interop/qmp-spec):
// one command at a time, asynchronous events skipped.
type qmp struct {
	mu   sync.Mutex // one command at a time
	conn *net.UnixConn
	r    *bufio.Reader
}

func newQMP(c *net.UnixConn, timeout time.Duration) (*qmp, error) {
	q := &qmp{conn: c, r: bufio.NewReader(c)}
	c.SetDeadline(time.Now().Add(timeout))
	defer c.SetDeadline(time.Time{})
	var greeting map[string]json.RawMessage
	if err := q.readMsg(&greeting); err != nil {
		return nil, fmt.Errorf("QMP greeting: %w", err)
	}
	if _, err := q.exec("qmp_capabilities", nil, nil, timeout); err != nil {
		return nil, err
	}
	return q, nil
}

func (q *qmp) readMsg(v any) error {
	line, err := q.r.ReadBytes('\n')
	if err != nil {
		return err
	}
	return json.Unmarshal(line, v)
}

// QMPError is an error answer to a QMP command.
type QMPError struct {
	Command string
	Class   string
	Desc    string
}

func (e *QMPError) Error() string { return fmt.Sprintf("QMP %s: %s: %s", e.Command, e.Class, e.Desc) }

// exec runs cmd. With fd >= 0 the descriptor travels with the command
// (SCM_RIGHTS), as "getfd" needs.
func (q *qmp) exec(cmd string, args any, fd *int, timeout time.Duration) (json.RawMessage, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	req := map[string]any{"execute": cmd}
	if args != nil {
		req["arguments"] = args
	}
	b, _ := json.Marshal(req)
	b = append(b, '\n')
	if timeout > 0 {
		q.conn.SetDeadline(time.Now().Add(timeout))
		defer q.conn.SetDeadline(time.Time{})
	}
	var err error
	if fd != nil {
		_, _, err = q.conn.WriteMsgUnix(b, unix.UnixRights(*fd), nil)
	} else {
		_, err = q.conn.Write(b)
	}
	if err != nil {
		return nil, fmt.Errorf("QMP %s: %w", cmd, err)
	}
	for {
		var m struct {
			Return json.RawMessage `json:"return"`
			Error  *struct {
				Class string `json:"class"`
				Desc  string `json:"desc"`
			} `json:"error"`
			Event string `json:"event"`
		}
		if err := q.readMsg(&m); err != nil {
			return nil, fmt.Errorf("QMP %s: %w", cmd, err)
		}
		switch {
		case m.Event != "":
			continue
		case m.Error != nil:
			return nil, &QMPError{Command: cmd, Class: m.Error.Class, Desc: m.Error.Desc}
		case m.Return != nil:
			return m.Return, nil
		}
	}
}

func (q *qmp) status(timeout time.Duration) (string, error) {
	r, err := q.exec("query-status", nil, nil, timeout)
	if err != nil {
		return "", err
	}
	var s struct {
		Status string `json:"status"`
	}
	err = json.Unmarshal(r, &s)
	return s.Status, err
}

func (q *qmp) close() { q.conn.Close() }

// swapConn is the host end of the control channel, seen by yamux as one
// connection that survives a snapshot: when QEMU is replaced, the
// connection to the old process is detached and the new one attached,
// and reads and writes in between wait instead of failing.
type swapConn struct {
	mu       sync.Mutex
	cond     *sync.Cond
	c        net.Conn
	detached bool
	closed   bool
}

func newSwapConn(c net.Conn) *swapConn {
	s := &swapConn{c: c}
	s.cond = sync.NewCond(&s.mu)
	return s
}

var errSwapClosed = errors.New("control channel closed")

func (s *swapConn) current() (net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.detached && !s.closed {
		s.cond.Wait()
	}
	if s.closed {
		return nil, errSwapClosed
	}
	return s.c, nil
}

// retry reports whether an error on c is due to a detach, so the
// operation should wait for the next connection.
func (s *swapConn) retry(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.closed && (s.detached || s.c != c)
}

func (s *swapConn) Read(p []byte) (int, error) {
	for {
		c, err := s.current()
		if err != nil {
			return 0, err
		}
		n, err := c.Read(p)
		if n > 0 || err == nil {
			return n, nil
		}
		if !s.retry(c) {
			return 0, err
		}
	}
}

func (s *swapConn) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		c, err := s.current()
		if err != nil {
			return done, err
		}
		n, err := c.Write(p[done:])
		done += n
		if err != nil && !s.retry(c) {
			return done, err
		}
	}
	return done, nil
}

func (s *swapConn) detach() {
	s.mu.Lock()
	s.detached = true
	s.mu.Unlock()
}

func (s *swapConn) attach(c net.Conn) {
	s.mu.Lock()
	old := s.c
	s.c, s.detached = c, false
	s.cond.Broadcast()
	s.mu.Unlock()
	if old != nil && old != c {
		old.Close()
	}
}

func (s *swapConn) Close() error {
	s.mu.Lock()
	s.closed = true
	c := s.c
	s.cond.Broadcast()
	s.mu.Unlock()
	if c != nil {
		return c.Close()
	}
	return nil
}
