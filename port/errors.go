package port

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/srt-go/srt/policy"
)

// SpecError is a bad SandboxSpec or ExecRequest: the server answers 400
// and names Field. Field is the JSON spelling with an index where a list
// holds the bad entry, e.g. "bindMounts[1].hostPath", "egressAllowlist[0]",
// "argv", "backend".
type SpecError struct {
	Field  string
	Reason string
}

func (e *SpecError) Error() string { return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason) }

// ErrBackendUnavailable is wrapped by Launch's error when the requested
// backend cannot run here: an explicit microvm on a host that cannot start
// a VM (seed 000: "échoue bruyamment"), an explicit native without a
// native sandbox, or any sandbox while the port runs with --sandbox off.
// The server answers 503 (409 when the error also wraps
// ErrSandboxDisabled); the session does not start.
var ErrBackendUnavailable = errors.New("backend unavailable on this host")

// ErrIllegalTransition is wrapped by *TransitionError.
var ErrIllegalTransition = errors.New("illegal state transition")

// TransitionError is an operation the session's state does not allow
// (exec while suspended, resume while warm, anything after destroy). The
// server answers 409. errors.Is(err, ErrIllegalTransition) is true.
type TransitionError struct {
	From, To State
}

func (e *TransitionError) Error() string {
	msg := fmt.Sprintf("%v: %s -> %s", ErrIllegalTransition, e.From, e.To)
	switch e.From {
	case StateCreated:
		msg += " (the sandbox is still starting: wait until it is warm)"
	case StateSuspended:
		msg += " (the sandbox is suspended: resume it first)"
	case StateError:
		msg += " (the sandbox failed: its handle's error says why; destroy it)"
	}
	return msg
}

func (e *TransitionError) Unwrap() error { return ErrIllegalTransition }

// ErrSessionExists is returned by Launch for a sessionId that names a
// sandbox that is not destroyed yet, or one still launching. The server
// answers 409.
var ErrSessionExists = errors.New("a sandbox with this sessionId exists")

// ErrTooManySessions is returned by Launch when Options.MaxSessions
// sandboxes are alive or launching. The server answers 429.
var ErrTooManySessions = errors.New("session limit reached")

// ErrClosed is returned by Launch once Close has started, also for a
// launch that was in progress then (its sandbox is destroyed). The server
// answers 503: srtd is shutting down.
var ErrClosed = errors.New("the sandbox port is closed: srtd is shutting down")

// ErrSandboxDisabled is wrapped, with ErrBackendUnavailable, by Launch's
// error for an explicit native or microvm while the port runs with
// --sandbox off (seed 000: an opt-out the server must not fake). The
// server answers 409: the request conflicts with the server's setting.
var ErrSandboxDisabled = errors.New("agent sandbox DISABLED by --sandbox off")

// ErrUnenforceable is policy.ErrUnenforceable: the launch policy holds a
// rule this backend cannot enforce, so the launch fails closed (seed 000,
// "Linux : bubblewrap": never a silently weaker policy). The server
// answers 422.
var ErrUnenforceable = policy.ErrUnenforceable

// ErrUnknownExec is returned by Kill and Signal for an exec id that is not
// running in the sandbox.
var ErrUnknownExec = errors.New("no such exec")

// HTTPStatus maps an error of the port to srtd's HTTP status and, for a
// 400, the request field at fault (api.Error.Field); it is the one place
// where a port error becomes a status:
//
//	*SpecError             400, its Field
//	ErrIllegalTransition   409
//	ErrSessionExists       409, "sessionId"
//	ErrSandboxDisabled     409, "backend"
//	*policy.FieldError     422 (unenforceable) or 400, its Field
//	ErrUnenforceable       422
//	ErrTooManySessions     429
//	ErrTooManySubscribers  429
//	ErrBackendUnavailable  503, "backend"
//	ErrClosed              503
//	anything else          500
func HTTPStatus(err error) (status int, field string) {
	var se *SpecError
	var fe *policy.FieldError
	switch {
	case errors.As(err, &se):
		return http.StatusBadRequest, se.Field
	case errors.As(err, &fe):
		if errors.Is(fe, ErrUnenforceable) {
			return http.StatusUnprocessableEntity, fe.Field
		}
		return http.StatusBadRequest, fe.Field
	case errors.Is(err, ErrIllegalTransition):
		return http.StatusConflict, ""
	case errors.Is(err, ErrSessionExists):
		return http.StatusConflict, "sessionId"
	case errors.Is(err, ErrSandboxDisabled):
		return http.StatusConflict, "backend"
	case errors.Is(err, ErrUnenforceable):
		return http.StatusUnprocessableEntity, ""
	case errors.Is(err, ErrTooManySessions), errors.Is(err, ErrTooManySubscribers):
		return http.StatusTooManyRequests, ""
	case errors.Is(err, ErrBackendUnavailable):
		return http.StatusServiceUnavailable, "backend"
	case errors.Is(err, ErrClosed):
		return http.StatusServiceUnavailable, ""
	}
	return http.StatusInternalServerError, ""
}
