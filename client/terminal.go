package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/coder/websocket"
	"github.com/srt-go/srt/api"
)

// TerminalRequest is the body of POST /v1/terminals, api.TerminalRequest.
type TerminalRequest = api.TerminalRequest

// TerminalInfo describes a terminal session, api.TerminalInfo.
type TerminalInfo = api.TerminalInfo

// Terminal is an attached terminal session. Read returns the PTY's
// output; Write types; Wait returns the shell's exit code.
type Terminal struct {
	Info TerminalInfo
	conn *websocket.Conn
	ctx  context.Context

	pr   *io.PipeReader
	pw   *io.PipeWriter
	done chan struct{}
	mu   sync.Mutex
	code int
	err  error
}

// OpenTerminal starts a terminal and attaches to it. The terminal is
// killed when ctx ends or Close is called.
func (c *Client) OpenTerminal(ctx context.Context, req TerminalRequest) (*Terminal, error) {
	var info TerminalInfo
	if err := c.call(ctx, "POST", "/v1/terminals", req, http.StatusCreated, &info); err != nil {
		return nil, err
	}
	return c.AttachTerminal(ctx, info)
}

// AttachTerminal opens the WebSocket of a terminal made by POST
// /v1/terminals.
func (c *Client) AttachTerminal(ctx context.Context, info TerminalInfo) (*Terminal, error) {
	u := "ws" + strings.TrimPrefix(c.BaseURL, "http") + info.WebSocket
	h := http.Header{}
	h.Set("Authorization", "Bearer "+c.Token)
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: h, HTTPClient: c.HTTP})
	if err != nil {
		if resp != nil {
			return nil, &Error{Status: resp.StatusCode, Message: err.Error()}
		}
		return nil, err
	}
	conn.SetReadLimit(1 << 20)
	pr, pw := io.Pipe()
	t := &Terminal{Info: info, conn: conn, ctx: ctx, pr: pr, pw: pw, done: make(chan struct{}), code: -1}
	go t.read()
	return t, nil
}

func (t *Terminal) read() {
	defer close(t.done)
	for {
		typ, b, err := t.conn.Read(t.ctx)
		if err != nil {
			if websocket.CloseStatus(err) == websocket.StatusNormalClosure {
				err = nil
			}
			t.mu.Lock()
			t.err = err
			t.mu.Unlock()
			t.pw.CloseWithError(io.EOF)
			return
		}
		if typ == websocket.MessageBinary {
			if _, err := t.pw.Write(b); err != nil {
				return
			}
			continue
		}
		var m api.TerminalMessage
		if json.Unmarshal(b, &m) == nil && m.Type == api.TerminalExit && m.ExitCode != nil {
			t.mu.Lock()
			t.code = *m.ExitCode
			t.mu.Unlock()
		}
	}
}

// Read reads the terminal's output. It returns io.EOF after the exit.
// Output must be read for the session to progress.
func (t *Terminal) Read(p []byte) (int, error) { return t.pr.Read(p) }

// Write types p into the terminal.
func (t *Terminal) Write(p []byte) (int, error) {
	if err := t.conn.Write(t.ctx, websocket.MessageBinary, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Resize sets the terminal's size.
func (t *Terminal) Resize(cols, rows int) error {
	b, _ := json.Marshal(api.TerminalMessage{Type: api.TerminalResize, Cols: cols, Rows: rows})
	return t.conn.Write(t.ctx, websocket.MessageText, b)
}

// Wait waits for the shell to exit (output must be read meanwhile) and
// returns its exit code.
func (t *Terminal) Wait() (int, error) {
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return t.code, t.err
	}
	if t.code < 0 {
		return t.code, errors.New("srtd: terminal closed without an exit")
	}
	return t.code, nil
}

// Close drops the WebSocket, which kills the terminal.
func (t *Terminal) Close() error {
	t.pr.Close()
	return t.conn.CloseNow()
}
