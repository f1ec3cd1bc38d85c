package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/srt-go/srt/api"
	"github.com/srt-go/srt/port"
)

func (s *Server) launch(w http.ResponseWriter, r *http.Request) {
	var req api.LaunchRequest
	if !decode(w, r, &req) {
		return
	}
	spec := req.Spec
	spec.NetworkEnabled = req.NetworkEnabled == nil || *req.NetworkEnabled
	if f, ok := exposesToken(s.cfg.TokenFile, spec); !ok {
		writeError(w, http.StatusBadRequest, f, "%s would show srtd's token file (%s) to the sandbox", f, s.cfg.TokenFile)
		return
	}
	backend, err := port.ParseRequestedBackend(string(req.Backend))
	if err != nil {
		s.writePortError(w, err)
		return
	}
	// The sandbox outlives this request: it ends with DELETE or Close,
	// not with the request's context. "wait": false answers 202 with the
	// sandbox still created; GET then shows warm or error.
	// The backend is chosen under the request's context first: a wait
	// for the microvm probe ends with the request (503 "still probing"),
	// not with srtd. Start chooses again, at once.
	// (A bad spec's 400 comes first: launch reports it.)
	if port.Validate(spec) == nil {
		if _, err := s.cfg.Port.Choose(r.Context(), backend); err != nil {
			s.log.Info("launch refused", "session", spec.SessionID, "backend", string(backend), "err", err)
			s.writePortError(w, err)
			return
		}
	}
	launch, status := s.cfg.Port.Launch, http.StatusCreated
	if req.Wait != nil && !*req.Wait {
		launch, status = s.cfg.Port.Start, http.StatusAccepted
	}
	sb, err := launch(s.stop, spec, backend)
	if err != nil {
		s.log.Info("launch refused", "session", spec.SessionID, "backend", string(backend), "err", err)
		s.writePortError(w, err)
		return
	}
	if r.Context().Err() != nil {
		// The client went away while launching: do not leave a sandbox
		// nobody knows about.
		sb.Destroy(context.WithoutCancel(r.Context()))
		writeError(w, http.StatusServiceUnavailable, "", "launch abandoned")
		return
	}
	h := sb.Handle()
	s.log.Info("launched", "session", h.SessionID, "backend", string(h.Backend), "state", string(h.State))
	writeJSON(w, status, h)
}

// patch re-binds the agent of a live sandbox: the body is {"agentId":
// "..."} and nothing else, since a live sandbox's policy cannot change
// (any other member is a 400 naming it).
func (s *Server) patch(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, "", "request body over %d bytes", mbe.Limit)
		} else {
			writeError(w, http.StatusBadRequest, "", "request body: %v", err)
		}
		return
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(body, &members) == nil {
		for _, k := range slices.Sorted(maps.Keys(members)) {
			if k != "agentId" {
				writeError(w, http.StatusBadRequest, k, "%s cannot change on a live sandbox: its policy is fixed at launch; only agentId can be re-bound", k)
				return
			}
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req api.PatchRequest
	if !decode(w, r, &req) {
		return
	}
	if req.AgentID == nil {
		writeError(w, http.StatusBadRequest, "agentId", "agentId is required (the only field a live sandbox can change)")
		return
	}
	sb := s.lookup(w, r)
	if sb == nil {
		return
	}
	ab, ok := sb.(port.AgentBinder)
	if !ok {
		writeError(w, http.StatusInternalServerError, "", "sandbox cannot re-bind its agent")
		return
	}
	if err := ab.SetAgent(*req.AgentID); err != nil {
		s.writePortError(w, err)
		return
	}
	s.log.Info("agent re-bound", "session", sb.Handle().SessionID, "agent", *req.AgentID)
	writeJSON(w, http.StatusOK, sb.Handle())
}

// events streams the sandbox's own events (port.EventSubscriber) as
// server-sent events, framed as exec's but with ids "<tag>.<seq>" (tag:
// port.EventSubscriber.StreamTag, seq: the sandbox's), and a Last-Event-ID
// header resumes after one. An id with another tag (a former sandbox of
// the same id, or a plain decimal seq), or past the last seq, starts the
// stream again from what the history still holds, after a lost event
// with reason reset: never silence. The stream ends after destroyed, or
// after a lost event when this client fell port.SubscriberBuffer events
// behind (it reconnects with Last-Event-ID to replay what the history
// still holds).
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	var after uint64
	var tag string
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		t, seq, tagged := strings.Cut(v, ".")
		if !tagged {
			t, seq = "", v
		}
		n, err := strconv.ParseUint(seq, 10, 64)
		if err != nil || (tagged && t == "") {
			writeError(w, http.StatusBadRequest, "Last-Event-ID", "Last-Event-ID %q: want an event's id (<tag>.<seq>)", v)
			return
		}
		after, tag = n, t
		if !tagged {
			// An id of the plain seq form is another stream's.
			after = port.ResetSeq
		}
	}
	sb := s.lookup(w, r)
	if sb == nil {
		return
	}
	sub, ok := sb.(port.EventSubscriber)
	if !ok {
		writeError(w, http.StatusInternalServerError, "", "sandbox has no event stream")
		return
	}
	if tag != "" && tag != sub.StreamTag() {
		after = port.ResetSeq
	}
	s.wg.Add(1)
	defer s.wg.Done()
	events, err := sub.Subscribe(r.Context(), after)
	if err != nil {
		s.writePortError(w, err)
		return
	}
	writeSSE(w, events, sub.StreamTag()+".", nil)
}

// writeSSE writes events as server-sent events until the channel closes
// or the client goes away (the caller's context then ends the channel),
// handing each to seen first unless it is nil:
//
//	id: <idPrefix><seq>
//	event: <type>
//	data: <the event as JSON>
func writeSSE(w http.ResponseWriter, events <-chan port.Event, idPrefix string, seen func(port.Event)) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc.Flush()
	var buf bytes.Buffer
	for ev := range events {
		if seen != nil {
			seen(ev)
		}
		buf.Reset()
		data, _ := json.Marshal(ev)
		fmt.Fprintf(&buf, "id: %s%d\nevent: %s\ndata: %s\n\n", idPrefix, ev.Seq, ev.Type, data)
		if _, err := w.Write(buf.Bytes()); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// lookup returns the sandbox named in the path, or writes a 404.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) port.Sandbox {
	id := r.PathValue("sessionId")
	sb, ok := s.cfg.Port.Lookup(id)
	if !ok {
		writeError(w, http.StatusNotFound, "", "no session %q", id)
		return nil
	}
	return sb
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	all := s.cfg.Port.List()
	hs := make([]port.Handle, 0, len(all))
	for _, sb := range all {
		hs = append(hs, sb.Handle())
	}
	writeJSON(w, http.StatusOK, hs)
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	if sb := s.lookup(w, r); sb != nil {
		writeJSON(w, http.StatusOK, sb.Handle())
	}
}

func (s *Server) suspend(w http.ResponseWriter, r *http.Request) {
	if sb := s.lookup(w, r); sb != nil {
		if err := sb.Suspend(r.Context()); err != nil {
			s.writePortError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, sb.Handle())
	}
}

func (s *Server) resume(w http.ResponseWriter, r *http.Request) {
	if sb := s.lookup(w, r); sb != nil {
		if err := sb.Resume(r.Context()); err != nil {
			s.writePortError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, sb.Handle())
	}
}

func (s *Server) destroy(w http.ResponseWriter, r *http.Request) {
	sb := s.lookup(w, r)
	if sb == nil {
		return
	}
	// Destroy runs to the end even if this client goes away.
	if err := sb.Destroy(context.WithoutCancel(r.Context())); err != nil {
		s.log.Error("destroy", "session", sb.Handle().SessionID, "err", err)
		s.writePortError(w, err)
		return
	}
	s.history.drop(sb)
	writeJSON(w, http.StatusOK, sb.Handle())
}

// exec runs a command and streams its events as server-sent events, one
// per port.Event, in the order the port delivers them (see writeSSE).
//
// Writes block until the client reads (no buffer to overflow, so no event
// is dropped). The command is killed when the client goes away.
func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	var req api.ExecRequest
	if !decode(w, r, &req) {
		return
	}
	if req.Stdin != nil && req.StdinBase64 != nil {
		writeError(w, http.StatusBadRequest, "stdinBase64", "set stdin or stdinBase64, not both")
		return
	}
	// Argv, env, cwd and the timeout are the port's to check (Exec's
	// *SpecError); a timeout past time.Duration's range is no limit's
	// equal, not a negative one.
	timeout := time.Duration(req.TimeoutMs) * time.Millisecond
	if req.TimeoutMs > math.MaxInt64/int64(time.Millisecond) {
		timeout = math.MaxInt64
	}
	preq := port.ExecRequest{Argv: req.Argv, Env: req.Env, Cwd: req.Cwd, Timeout: timeout}
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
	sb := s.lookup(w, r)
	if sb == nil {
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

	events, err := sb.Exec(ctx, preq)
	if err != nil {
		s.writePortError(w, err)
		return
	}
	rec := s.history.start(sb, s.cfg.Port.List(), req)
	defer func() {
		cancel()
		for ev := range events { // let the port finish; nobody reads them now
			rec.add(ev)
		}
	}()
	writeSSE(w, events, "", rec.add)
}

// writePortError answers with the status port.HTTPStatus gives a port
// error (and, for a 400, the field at fault).
func (s *Server) writePortError(w http.ResponseWriter, err error) {
	status, field := port.HTTPStatus(err)
	writeError(w, status, field, "%v", err)
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
