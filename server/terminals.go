package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/srt-go/srt/api"
	"github.com/srt-go/srt/port"
)

// Terminal sessions (seed 000, "Terminal hébergé par le serveur"): the
// default backend is none, the host shell; native when asked, under the
// fixed terminal profile (terminalSettings); microvm when asked, a shell
// in a fresh VM that shares only the workdir (terminals_microvm_linux.go).
// A terminal never falls back: when its backend cannot run, POST
// /v1/terminals fails (503), so a host shell never wears a sandbox badge.
//
// WebSocket protocol on GET /v1/terminals/{id}/ws (the text frames are
// api.TerminalMessage):
//
//	server → client  binary frame  output bytes of the PTY
//	server → client  text frame    {"type":"exit","exitCode":N}, then close 1000
//	client → server  binary frame  input bytes
//	client → server  text frame    {"type":"input","data":"…"}
//	                               {"type":"resize","cols":C,"rows":R}
//
// One WebSocket per terminal. When it drops, the terminal is killed:
// nothing stays running for a client that went away.

// terminal is one terminal session.
type terminal struct {
	id      string
	backend port.Backend
	network api.TerminalNetwork
	cwd     string
	proc    termProc
	details map[string]any
	// attached is set by the first WebSocket; a second is refused.
	attached atomic.Bool
	// exited is closed when the shell has exited; code is then set.
	exited chan struct{}
	code   int
	// killOnce guards kill.
	killOnce sync.Once
}

// termProc is a shell on a PTY, on some backend (terminal_pty.go).
type termProc interface {
	pid() int
	// wait waits for the shell to exit and returns its status (128+N
	// for signal N).
	wait() int
	// kill kills the shell and everything it started.
	kill()
	// resize sets the terminal size.
	resize(cols, rows int) error
	// input writes to the PTY.
	input(b []byte) error
	// pump copies output to out until every writer of the PTY is gone,
	// or until stop is closed and the output has been idle briefly.
	pump(out func([]byte) error, stop <-chan struct{})
	// close releases the PTY; call it after pump returned.
	close()
}

func (t *terminal) kill() { t.killOnce.Do(t.proc.kill) }

func (t *terminal) info() api.TerminalInfo {
	ti := api.TerminalInfo{ID: t.id, Backend: t.backend, Network: t.network, State: api.TerminalRunning, Pid: t.proc.pid(), Cwd: t.cwd,
		WebSocket: "/v1/terminals/" + t.id + "/ws", Details: t.details}
	select {
	case <-t.exited:
		ti.State = api.TerminalExited
		c := t.code
		ti.ExitCode = &c
	default:
	}
	return ti
}

// maxTermSize bounds a terminal's columns and rows (api.TerminalRequest,
// api.TerminalMessage).
const maxTermSize = 1000

// validSize is the one rule for a terminal's size, in a request and in a
// resize message: 1..maxTermSize columns and rows. (A request's 0 means
// the default, 80×24.)
func validSize(cols, rows int) bool {
	return cols > 0 && rows > 0 && cols <= maxTermSize && rows <= maxTermSize
}

func newID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (s *Server) newTerminal(w http.ResponseWriter, r *http.Request) {
	var req api.TerminalRequest
	if !decode(w, r, &req) {
		return
	}
	// The port's strict parse: docker is native, anything unknown a 400.
	// microvm is a shell in a fresh VM (terminals_microvm_linux.go);
	// never a silent fallback (seed 000): if no VM starts, the request
	// fails.
	backend, err := port.ParseRequestedBackend(string(req.Backend))
	if err != nil {
		s.writePortError(w, err)
		return
	}
	if backend == "" {
		backend = port.BackendNone // a terminal's default is the host shell
	}
	network, ok := terminalNetwork(w, backend, s.cfg.Terminal, req.Network)
	if !ok {
		return
	}
	if req.Cols == 0 {
		req.Cols = 80
	}
	if req.Rows == 0 {
		req.Rows = 24
	}
	if !validSize(req.Cols, req.Rows) {
		writeError(w, http.StatusBadRequest, "cols", "cols and rows: want 0..%d", maxTermSize)
		return
	}
	home := s.cfg.Terminal.home()
	if req.Cwd == "" {
		req.Cwd = home
	}
	if !filepath.IsAbs(req.Cwd) {
		writeError(w, http.StatusBadRequest, "cwd", "cwd %q: want an absolute path", req.Cwd)
		return
	}
	if st, err := os.Stat(req.Cwd); err != nil || !st.IsDir() {
		writeError(w, http.StatusBadRequest, "cwd", "cwd %q: not a directory", req.Cwd)
		return
	}
	// The request is valid. A sandboxed terminal is refused where a session on that backend
	// would be: the port's one rule (Choose: --sandbox off refuses native
	// and microvm, an unavailable backend is never replaced).
	if backend != port.BackendNone {
		if _, err := s.cfg.Port.Choose(r.Context(), backend); err != nil {
			s.log.Info("terminal refused", "backend", string(backend), "err", err)
			s.writePortError(w, err)
			return
		}
	}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "", "srtd is shutting down")
		return
	}
	if len(s.terminals) >= s.cfg.MaxTerminals {
		s.mu.Unlock()
		writeError(w, http.StatusTooManyRequests, "", "terminal limit reached (%d)", s.cfg.MaxTerminals)
		return
	}
	id := newID()
	s.terminals[id] = nil // reserved
	s.mu.Unlock()

	env := sanitizedEnv(home, s.cfg.Terminal.shell(), req.Env)
	var (
		proc    termProc
		details map[string]any
	)
	if backend == port.BackendMicroVM {
		proc, details, err = s.startMicroVMTerminal(id, req.Cwd, env, req.Cols, req.Rows)
	} else {
		tcfg := s.cfg.Terminal
		tcfg.Network = network
		proc, err = startTerminal(s.stop, backend, tcfg, req.Cwd, env, req.Cols, req.Rows)
	}
	if err != nil {
		s.mu.Lock()
		delete(s.terminals, id)
		s.mu.Unlock()
		s.log.Info("terminal refused", "backend", string(backend), "err", err)
		var ce *cwdError
		if errors.As(err, &ce) {
			writeError(w, http.StatusBadRequest, "cwd", "terminal on backend %s: %v", backend, err)
			return
		}
		writeError(w, http.StatusServiceUnavailable, "backend", "terminal on backend %s: %v", backend, err)
		return
	}
	t := &terminal{id: id, backend: backend, network: network, cwd: req.Cwd, proc: proc, details: details, exited: make(chan struct{})}
	s.mu.Lock()
	s.terminals[id] = t
	closed := s.closed
	s.mu.Unlock()
	if closed {
		t.kill()
	}
	s.wg.Go(func() {
		t.code = t.proc.wait()
		close(t.exited)
	})
	// A terminal nobody attaches to does not run forever.
	time.AfterFunc(s.cfg.AttachTimeout, func() {
		if !t.attached.Load() {
			s.endTerminal(t)
		}
	})
	s.log.Info("terminal", "id", id, "backend", string(backend), "network", string(network))
	writeJSON(w, http.StatusCreated, t.info())
}

// terminalNetwork is the network mode a terminal on backend gets for a
// request asking for req (empty: cfg's default), or a 400 written to w.
// A native shell has either mode; a microvm shell's proxies take
// allow-lists only, so it is baseline; a host shell is on the host's
// network. A mode a backend cannot give is refused, never narrowed or
// widened in silence — except the default, which a microvm or host
// shell simply does not apply (the answer says what is in force).
func terminalNetwork(w http.ResponseWriter, backend port.Backend, cfg TerminalConfig, req api.TerminalNetwork) (api.TerminalNetwork, bool) {
	if req != "" && !ValidTerminalNetwork(req) {
		writeError(w, http.StatusBadRequest, "network", "network %q: want open or baseline", req)
		return "", false
	}
	switch backend {
	case port.BackendNone:
		if req == api.TerminalNetworkBaseline {
			writeError(w, http.StatusBadRequest, "network", "network baseline needs a sandboxed terminal (backend native or microvm): a host shell (backend none) is on the host's network")
			return "", false
		}
		return api.TerminalNetworkHost, true
	case port.BackendMicroVM:
		if req == api.TerminalNetworkOpen {
			writeError(w, http.StatusBadRequest, "network", "network open is offered on backend native only: a microvm terminal's proxies enforce its allow-list (baseline)")
			return "", false
		}
		return api.TerminalNetworkBaseline, true
	}
	return cfg.networkMode(req), true
}

// endTerminal kills t, and releases its PTY unless a WebSocket owns it.
func (s *Server) endTerminal(t *terminal) {
	t.kill()
	s.mu.Lock()
	if s.terminals[t.id] == t {
		delete(s.terminals, t.id)
	}
	s.mu.Unlock()
	if t.attached.CompareAndSwap(false, true) {
		<-t.exited
		stop := make(chan struct{})
		close(stop)
		t.proc.pump(func([]byte) error { return nil }, stop)
		t.proc.close()
	}
}

func (s *Server) lookupTerminal(w http.ResponseWriter, r *http.Request) *terminal {
	id := r.PathValue("id")
	s.mu.Lock()
	t := s.terminals[id]
	s.mu.Unlock()
	if t == nil {
		writeError(w, http.StatusNotFound, "", "no terminal %q", id)
	}
	return t
}

func (s *Server) getTerminal(w http.ResponseWriter, r *http.Request) {
	if t := s.lookupTerminal(w, r); t != nil {
		writeJSON(w, http.StatusOK, t.info())
	}
}

func (s *Server) deleteTerminal(w http.ResponseWriter, r *http.Request) {
	t := s.lookupTerminal(w, r)
	if t == nil {
		return
	}
	t.kill()
	select {
	case <-t.exited:
	case <-time.After(5 * time.Second):
	}
	info := t.info()
	// Without a WebSocket, release the PTY here; with one, its handler does.
	s.endTerminal(t)
	writeJSON(w, http.StatusOK, info)
}

func (s *Server) attachTerminal(w http.ResponseWriter, r *http.Request) {
	t := s.lookupTerminal(w, r)
	if t == nil {
		return
	}
	if !t.attached.CompareAndSwap(false, true) {
		writeError(w, http.StatusConflict, "", "terminal %q already has a WebSocket", t.id)
		return
	}
	s.wg.Add(1)
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		if s.terminals[t.id] == t {
			delete(s.terminals, t.id)
		}
		s.mu.Unlock()
	}()
	// The Handler has checked Origin already (absent or this loopback
	// host); Accept checks it again, the same way.
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		t.kill()
		<-t.exited
		t.proc.close()
		return
	}
	defer c.CloseNow()
	ctx, cancel := context.WithCancel(s.stop)
	defer cancel()

	// Input: until the client goes away, which kills the terminal.
	go func() {
		defer t.kill()
		for {
			typ, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			if typ == websocket.MessageBinary {
				t.proc.input(b)
				continue
			}
			var m api.TerminalMessage
			if json.Unmarshal(b, &m) != nil {
				continue
			}
			switch m.Type {
			case api.TerminalInput:
				t.proc.input([]byte(m.Data))
			case api.TerminalResize:
				if validSize(m.Cols, m.Rows) {
					t.proc.resize(m.Cols, m.Rows)
				}
			}
		}
	}()

	// Output: every byte before the exit frame.
	stop := make(chan struct{})
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		t.proc.pump(func(b []byte) error { return c.Write(ctx, websocket.MessageBinary, b) }, stop)
	}()
	select {
	case <-t.exited:
	case <-ctx.Done():
		t.kill()
		<-t.exited
	}
	close(stop)
	<-pumped
	t.proc.close()
	code := t.code
	msg, _ := json.Marshal(api.TerminalMessage{Type: api.TerminalExit, ExitCode: &code})
	if err := c.Write(ctx, websocket.MessageText, msg); err == nil {
		c.Close(websocket.StatusNormalClosure, "exited")
	}
}

// cwdError is a session workdir a backend cannot honour (a 400 on cwd).
type cwdError struct{ msg string }

func (e *cwdError) Error() string { return e.msg }
