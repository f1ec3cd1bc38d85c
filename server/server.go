// Package server is srtd's HTTP API (issue 6): the sandbox port of seed 000
// over JSON on loopback, exec event streams as server-sent events, and
// terminal sessions (a PTY over WebSocket).
//
// Every request but GET /healthz carries the bearer token generated at
// start-up, or is a call of srtd's own web console (package console: its
// session cookie); every request whose Origin is not absent or a loopback
// origin of this very host is refused, so no other web page can drive the
// server. The API is described by api/openapi.json.
package server

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	jsonv2 "github.com/go-json-experiment/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/srt-go/srt/api"
	"github.com/srt-go/srt/port"
	"github.com/srt-go/srt/server/console"
)

// Config configures a Server. Limits say what zero means.
type Config struct {
	// Port launches the sandboxes and keeps the one registry of them:
	// the session rules (ids, the session limit, --sandbox, the backend
	// table) are its own. Close closes it. Required.
	Port port.Port
	// Token is the bearer token every request but /healthz must carry.
	// Empty refuses every such request.
	Token string
	// TokenFile is where the token is stored. Sessions and terminals
	// never see it: a bind that would show it is refused, and native
	// terminals read-deny and write-deny its directory. Empty: unknown.
	TokenFile string
	// Logger receives the server's log lines. Nil discards them.
	Logger *slog.Logger
	// Console is the web console served under /console/, whose logged-in
	// pages may call the API with their session cookie instead of Token.
	// Nil serves no console.
	Console *console.Console

	// MaxBodyBytes bounds a request body. Zero means 1 MiB.
	MaxBodyBytes int64
	// MaxExecs bounds the execs running at once, over all sessions. Zero
	// means 64.
	MaxExecs int
	// MaxTerminals bounds the terminal sessions alive at once. Zero
	// means 16.
	MaxTerminals int
	// AttachTimeout is how long a new terminal waits for its WebSocket
	// before it is killed. Zero means 30s.
	AttachTimeout time.Duration
	// Terminal configures native terminals; see TerminalConfig.
	Terminal TerminalConfig
}

// Server is the srtd API. Create it with New; serve Handler; call Close
// on shutdown to destroy every sandbox and terminal.
type Server struct {
	cfg  Config
	log  *slog.Logger
	mux  *http.ServeMux
	stop context.Context // done when Close starts
	halt context.CancelFunc

	// history keeps each sandbox's last execs (exechistory.go).
	history execHistories

	mu        sync.Mutex
	terminals map[string]*terminal // guarded by mu
	execs     chan struct{}        // semaphore of MaxExecs
	// closed is set by Close; it refuses new terminals (the port refuses
	// new sandboxes itself). Guarded by mu.
	closed bool
	wg     sync.WaitGroup // execs and terminals in flight
}

// New returns a Server. It does not listen.
func New(cfg Config) (*Server, error) {
	if cfg.Port == nil {
		return nil, errors.New("server: no port")
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.MaxExecs == 0 {
		cfg.MaxExecs = 64
	}
	if cfg.MaxTerminals == 0 {
		cfg.MaxTerminals = 16
	}
	if cfg.AttachTimeout == 0 {
		cfg.AttachTimeout = 30 * time.Second
	}
	if cfg.TokenFile != "" {
		// A native terminal's $HOME is writable: it must neither read the
		// token nor plant anything where srtd keeps it.
		cfg.Terminal.HiddenFiles = append(cfg.Terminal.HiddenFiles, cfg.TokenFile)
		cfg.Terminal.ReadOnlyDirs = append(cfg.Terminal.ReadOnlyDirs, filepath.Dir(cfg.TokenFile))
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:       cfg,
		log:       lg,
		mux:       http.NewServeMux(),
		terminals: map[string]*terminal{},
		execs:     make(chan struct{}, cfg.MaxExecs),
	}
	s.stop, s.halt = context.WithCancel(context.Background())
	s.routes()
	return s, nil
}

func (s *Server) routes() {
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /v1/probe", s.probe)
	s.mux.HandleFunc("POST /v1/sandboxes", s.launch)
	s.mux.HandleFunc("GET /v1/sandboxes", s.list)
	s.mux.HandleFunc("GET /v1/sandboxes/{sessionId}", s.get)
	s.mux.HandleFunc("PATCH /v1/sandboxes/{sessionId}", s.patch)
	s.mux.HandleFunc("GET /v1/sandboxes/{sessionId}/events", s.events)
	s.mux.HandleFunc("POST /v1/sandboxes/{sessionId}/exec", s.exec)
	s.mux.HandleFunc("GET /v1/sandboxes/{sessionId}/execs", s.listExecs)
	s.mux.HandleFunc("POST /v1/sandboxes/{sessionId}/suspend", s.suspend)
	s.mux.HandleFunc("POST /v1/sandboxes/{sessionId}/resume", s.resume)
	s.mux.HandleFunc("DELETE /v1/sandboxes/{sessionId}", s.destroy)
	s.mux.HandleFunc("POST /v1/terminals", s.newTerminal)
	s.mux.HandleFunc("GET /v1/terminals/{id}", s.getTerminal)
	s.mux.HandleFunc("DELETE /v1/terminals/{id}", s.deleteTerminal)
	s.mux.HandleFunc("GET /v1/terminals/{id}/ws", s.attachTerminal)
}

// Handler returns the API handler: Host and Origin checks, then the
// console's pages (their own login), then the token or the console's
// cookie (except /healthz), then the routes.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// No answer is ever to be read as another type than it says (an
		// exec's output in JSON taken for HTML or script).
		w.Header().Set("X-Content-Type-Options", "nosniff")
		// A DNS-rebinding page reaches us under its own host name; a
		// loopback Host is all a local client ever sends.
		if !loopbackHost(r.Host) {
			writeError(w, http.StatusForbidden, "", "Host %q is not a loopback address", r.Host)
			return
		}
		// Browsers send Origin on every cross-origin request, on every
		// POST and on every WebSocket handshake; only a page served by
		// this very host, srtd's own console, can pass.
		if o := r.Header.Get("Origin"); o != "" && !sameLoopbackOrigin(o, r.Host) {
			writeError(w, http.StatusForbidden, "", "Origin %q refused: a web page may not drive srtd", o)
			return
		}
		if s.cfg.Console != nil && console.Owns(r) {
			s.cfg.Console.ServeHTTP(w, r)
			return
		}
		if r.URL.Path != "/healthz" && !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="srtd"`)
			writeError(w, http.StatusUnauthorized, "", "missing or bad bearer token")
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		}
		s.mux.ServeHTTP(w, r)
	})
}

// authorized compares the bearer token in constant time; without one, a
// logged-in console page's call is authorized by its cookie
// (console.Console.Authorizes). A request with an Authorization header
// is judged by that header alone.
func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	if h == "" && s.cfg.Console != nil {
		return s.cfg.Console.Authorizes(r)
	}
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || s.cfg.Token == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.Token)) == 1
}

// loopbackHost reports whether a Host header names this machine's loopback.
func loopbackHost(hostport string) bool {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.Trim(h, "[]"), ".")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// sameLoopbackOrigin reports whether origin is http(s)://<Host> with a
// loopback Host: a page of this server itself (the console).
func sameLoopbackOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return strings.EqualFold(u.Host, host) && loopbackHost(u.Host)
}

// Close closes the port (which destroys every sandbox and refuses later
// launches, 503) and kills every terminal, then waits for the execs and
// terminals in flight to end or ctx to be done. Terminals requested
// afterwards are refused with 503 too.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	terms := s.terminals
	s.terminals = map[string]*terminal{}
	s.mu.Unlock()
	s.halt()

	var errs []error
	var wg sync.WaitGroup
	for _, t := range terms {
		wg.Go(t.kill)
	}
	if err := s.cfg.Port.Close(context.WithoutCancel(ctx)); err != nil {
		errs = append(errs, err)
	}
	wg.Wait()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}

// apiError is the body of every error response.
type apiError = api.Error

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, field, format string, a ...any) {
	writeJSON(w, status, apiError{Error: fmt.Sprintf(format, a...), Field: field})
}

// decode reads a JSON body into v, refusing unknown fields, trailing data
// and bodies over the limit. It writes the error response itself.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(r.Body)
	if err == nil {
		// encoding/json matches member names case-insensitively and lets
		// a duplicate win: {"mode":"review","MODE":"chat"} would launch in
		// chat while a schema-checking proxy in front saw review. JSON v2
		// is case-sensitive and refuses duplicates: run it first.
		err = jsonv2.Unmarshal(body, reflect.New(reflect.TypeOf(v).Elem()).Interface(), jsonv2.RejectUnknownMembers(true))
		var se *jsonv2.SemanticError
		if err != nil && !errors.As(err, &se) {
			writeError(w, http.StatusBadRequest, "", "request body: %v", err)
			return false
		}
		if err != nil && se.JSONPointer != "" && errors.Is(err, jsonv2.ErrUnknownName) {
			writeError(w, http.StatusBadRequest, strings.TrimPrefix(string(se.JSONPointer), "/"), "unknown field %q (member names are case-sensitive)", strings.TrimPrefix(string(se.JSONPointer), "/"))
			return false
		}
		err = nil
	}
	// JSON v2 has refused every member the type does not know (and v1
	// knows no name v2 does not); DisallowUnknownFields only backs that
	// up, its error a plain 400.
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err == nil {
		err = dec.Decode(v)
	}
	if err == nil && dec.More() {
		err = errors.New("trailing data after the JSON object")
	}
	if err == nil {
		return true
	}
	var mbe *http.MaxBytesError
	var ute *json.UnmarshalTypeError
	switch {
	case errors.As(err, &mbe):
		writeError(w, http.StatusRequestEntityTooLarge, "", "request body over %d bytes", mbe.Limit)
	case errors.As(err, &ute):
		// Field is a dotted path; an embedded struct adds its type name.
		f := strings.TrimPrefix(ute.Field, "Spec.")
		writeError(w, http.StatusBadRequest, f, "field %q: want %s, got JSON %s", f, ute.Type, ute.Value)
	default:
		writeError(w, http.StatusBadRequest, "", "request body: %v", err)
	}
	return false
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) probe(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.cfg.Port.Probe())
}
