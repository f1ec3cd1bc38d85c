package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/srt-go/srt/api"
	"github.com/srt-go/srt/port"
)

// session is one launched sandbox.
type session struct {
	sb port.Sandbox
}

// sessionIDs keeps session ids usable in a URL path as they are.
var sessionIDs = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// parseRequestedBackend reads the backend of a request. Unlike a stored
// value (port.ParseBackend: unknown → none), a request naming a backend
// that does not exist is a client error: running it on none would be a
// silent downgrade.
func parseRequestedBackend(v port.Backend) (port.Backend, error) {
	switch v {
	case "":
		return "", nil
	case "none", "native", "docker", "microvm":
		return port.ParseBackend(string(v)), nil
	}
	return "", fmt.Errorf("unknown backend %q: want none, native or microvm", v)
}

func (s *Server) launch(w http.ResponseWriter, r *http.Request) {
	var req api.LaunchRequest
	if !decode(w, r, &req) {
		return
	}
	spec := req.Spec
	spec.NetworkEnabled = req.NetworkEnabled == nil || *req.NetworkEnabled
	if !sessionIDs.MatchString(spec.SessionID) {
		writeError(w, http.StatusBadRequest, "sessionId", "sessionId %q: want 1-128 characters of [A-Za-z0-9._-], starting with a letter or digit", spec.SessionID)
		return
	}
	if f, ok := exposesToken(s.cfg.TokenFile, spec); !ok {
		writeError(w, http.StatusBadRequest, f, "%s would show srtd's token file (%s) to the sandbox", f, s.cfg.TokenFile)
		return
	}
	backend, err := parseRequestedBackend(req.Backend)
	if err != nil {
		writeError(w, http.StatusBadRequest, "backend", "%v", err)
		return
	}
	if !s.cfg.Sandbox {
		// --sandbox off is an opt-out: the default runs on none; an
		// explicit sandbox cannot be honoured and must not be faked.
		if backend == port.BackendNative || backend == port.BackendMicroVM {
			writeError(w, http.StatusConflict, "backend", "backend %s refused: agent sandbox DISABLED by --sandbox off", backend)
			return
		}
		backend = port.BackendNone
	}

	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "", "srtd is shutting down")
		return
	case s.sessions[spec.SessionID] != nil:
		s.mu.Unlock()
		writeError(w, http.StatusConflict, "sessionId", "session %q exists", spec.SessionID)
		return
	case len(s.sessions) >= s.cfg.MaxSessions: // reserved entries count
		s.mu.Unlock()
		writeError(w, http.StatusTooManyRequests, "", "session limit reached (%d)", s.cfg.MaxSessions)
		return
	}
	s.sessions[spec.SessionID] = nil // reserved
	s.mu.Unlock()

	// The sandbox outlives this request: it ends with DELETE or Close,
	// not with the request's context.
	sb, err := s.cfg.Port.Launch(s.stop, spec, backend)

	s.mu.Lock()
	if err != nil || s.closed || r.Context().Err() != nil {
		delete(s.sessions, spec.SessionID)
		s.mu.Unlock()
		if err == nil {
			// The client or the server went away while launching: do not
			// leave a sandbox nobody knows about.
			sb.Destroy(context.WithoutCancel(r.Context()))
			writeError(w, http.StatusServiceUnavailable, "", "launch abandoned")
			return
		}
		s.log.Info("launch refused", "session", spec.SessionID, "backend", string(backend), "err", err)
		s.writePortError(w, err)
		return
	}
	s.sessions[spec.SessionID] = &session{sb: sb}
	s.mu.Unlock()
	h := sb.Handle()
	s.log.Info("launched", "session", h.SessionID, "backend", string(h.Backend))
	writeJSON(w, http.StatusCreated, h)
}

// lookup returns the session named in the path, or writes a 404.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) *session {
	id := r.PathValue("sessionId")
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	if ss == nil {
		writeError(w, http.StatusNotFound, "", "no session %q", id)
	}
	return ss
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	hs := make([]port.Handle, 0, len(s.sessions))
	for _, ss := range s.sessions {
		if ss != nil {
			hs = append(hs, ss.sb.Handle())
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, hs)
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	if ss := s.lookup(w, r); ss != nil {
		writeJSON(w, http.StatusOK, ss.sb.Handle())
	}
}

func (s *Server) suspend(w http.ResponseWriter, r *http.Request) {
	if ss := s.lookup(w, r); ss != nil {
		if err := ss.sb.Suspend(r.Context()); err != nil {
			s.writePortError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, ss.sb.Handle())
	}
}

func (s *Server) resume(w http.ResponseWriter, r *http.Request) {
	if ss := s.lookup(w, r); ss != nil {
		if err := ss.sb.Resume(r.Context()); err != nil {
			s.writePortError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, ss.sb.Handle())
	}
}

func (s *Server) destroy(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("sessionId")
	s.mu.Lock()
	ss := s.sessions[id]
	if ss != nil {
		delete(s.sessions, id)
	}
	s.mu.Unlock()
	if ss == nil {
		writeError(w, http.StatusNotFound, "", "no session %q", id)
		return
	}
	// Destroy runs to the end even if this client goes away.
	err := ss.sb.Destroy(context.WithoutCancel(r.Context()))
	if err != nil {
		s.log.Error("destroy", "session", id, "err", err)
		s.writePortError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ss.sb.Handle())
}

// exec runs a command and streams its events as server-sent events, one
// per port.Event, in the order the port delivers them:
//
//	id: <seq>
//	event: <type>
//	data: <the event as JSON>
//
// Writes block until the client reads (no buffer to overflow, so no event
// is dropped). The command is killed when the client goes away.
func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	var req api.ExecRequest
	if !decode(w, r, &req) {
		return
	}
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		writeError(w, http.StatusBadRequest, "argv", "argv: want a non-empty command")
		return
	}
	if req.Stdin != nil && req.StdinBase64 != nil {
		writeError(w, http.StatusBadRequest, "stdinBase64", "set stdin or stdinBase64, not both")
		return
	}
	if req.TimeoutMs < 0 {
		writeError(w, http.StatusBadRequest, "timeoutMs", "timeoutMs: want >= 0")
		return
	}
	preq := port.ExecRequest{Argv: req.Argv, Env: req.Env, Cwd: req.Cwd, Timeout: time.Duration(req.TimeoutMs) * time.Millisecond}
	switch {
	case req.Stdin != nil:
		preq.Stdin = bytes.NewReader([]byte(*req.Stdin))
	case req.StdinBase64 != nil:
		b, err := base64.StdEncoding.DecodeString(*req.StdinBase64)
		if err != nil {
			writeError(w, http.StatusBadRequest, "stdinBase64", "stdinBase64: %v", err)
			return
		}
		preq.Stdin = bytes.NewReader(b)
	}
	ss := s.lookup(w, r)
	if ss == nil {
		return
	}
	select {
	case s.execs <- struct{}{}:
		defer func() { <-s.execs }()
	default:
		writeError(w, http.StatusTooManyRequests, "", "concurrent exec limit reached (%d)", s.cfg.MaxExecs)
		return
	}
	s.wg.Add(1)
	defer s.wg.Done()

	// The command lives as long as the client listens. On shutdown,
	// Close destroys the sandbox, which ends the command and its stream
	// with a killed event the client still receives.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()

	events, err := ss.sb.Exec(ctx, preq)
	if err != nil {
		s.writePortError(w, err)
		return
	}
	defer func() {
		cancel()
		for range events { // let the port finish; nobody reads them now
		}
	}()
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc.Flush()
	var buf bytes.Buffer
	for ev := range events {
		buf.Reset()
		data, _ := json.Marshal(ev)
		fmt.Fprintf(&buf, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Type, data)
		if _, err := w.Write(buf.Bytes()); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// writePortError answers with the status a port error deserves: 400
// naming the field for a bad spec, 409 for an illegal state transition or
// an existing session, 422 for a policy the backend cannot enforce (the
// launch fails closed), 503 for a backend this host cannot run, else 500.
func (s *Server) writePortError(w http.ResponseWriter, err error) {
	status, field := classify(err)
	writeError(w, status, field, "%v", err)
}

// classify maps a port error to an HTTP status and, for a 400, a field.
func classify(err error) (status int, field string) {
	var se *port.SpecError
	switch {
	case errors.As(err, &se):
		return http.StatusBadRequest, se.Field
	case errors.Is(err, port.ErrIllegalTransition):
		return http.StatusConflict, ""
	case errors.Is(err, port.ErrSessionExists):
		return http.StatusConflict, "sessionId"
	case errors.Is(err, port.ErrUnenforceable):
		return http.StatusUnprocessableEntity, ""
	case errors.Is(err, port.ErrBackendUnavailable):
		return http.StatusServiceUnavailable, "backend"
	}
	return http.StatusInternalServerError, ""
}

// exposesToken reports the first bind or runner state directory whose
// host path holds srtd's token file: a session that could read the token
// could drive srtd and launch an unsandboxed session (adversarial
// review; escape class 21). ok is true when none does.
func exposesToken(tokenFile string, spec port.Spec) (field string, ok bool) {
	if tokenFile == "" {
		return "", true
	}
	tok := resolvedPath(tokenFile)
	holds := func(p string) bool {
		r := resolvedPath(p)
		return tok == r || strings.HasPrefix(tok, strings.TrimSuffix(r, "/")+"/")
	}
	for i, b := range spec.BindMounts {
		if holds(b.HostPath) {
			return fmt.Sprintf("bindMounts[%d].hostPath", i), false
		}
	}
	for i, d := range spec.RunnerStateDirs {
		if holds(d) {
			return fmt.Sprintf("runnerStateDirs[%d]", i), false
		}
	}
	return "", true
}

// resolvedPath is p with symlinks resolved where it exists, cleaned.
func resolvedPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}
