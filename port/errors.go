package port

import (
	"errors"
	"fmt"

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
// The server answers 503 (or 409); the session does not start.
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
	return fmt.Sprintf("%v: %s -> %s", ErrIllegalTransition, e.From, e.To)
}

func (e *TransitionError) Unwrap() error { return ErrIllegalTransition }

// ErrSessionExists is returned by Launch for a sessionId that names a
// sandbox that is not destroyed yet. The server answers 409.
var ErrSessionExists = errors.New("a sandbox with this sessionId exists")

// ErrUnenforceable is policy.ErrUnenforceable: the launch policy holds a
// rule this backend cannot enforce, so the launch fails closed (seed 000,
// "Linux : bubblewrap": never a silently weaker policy). The server
// answers 422.
var ErrUnenforceable = policy.ErrUnenforceable

// ErrUnknownExec is returned by Kill and Signal for an exec id that is not
// running in the sandbox.
var ErrUnknownExec = errors.New("no such exec")
