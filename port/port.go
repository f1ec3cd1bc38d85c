// Package port is the sandbox port of an agent server (seed 000, "Port de
// bac à sable"): a probe run once at start-up, three backends (none,
// native, microvm), and SandboxPort.launch(SandboxSpec) → SandboxHandle
// with states and events. The names of types, fields, states and events
// are the seed's.
//
// The native backend reuses the policy, proxies and bubblewrap launcher of
// the srt command line; nothing here forks them.
package port

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/srt-go/srt/microvm"
	"github.com/srt-go/srt/violation"
)

// Backend is where a session's processes run (seed 000, "SandboxBackend").
type Backend string

const (
	// BackendNone runs on the host, unsandboxed.
	BackendNone Backend = "none"
	// BackendNative runs under the OS's own sandbox (bubblewrap on Linux,
	// Seatbelt on macOS).
	BackendNative Backend = "native"
	// BackendMicroVM runs in a virtual machine: the only backend with a
	// kernel boundary.
	BackendMicroVM Backend = "microvm"
)

// ParseBackend reads a stored backend value: null (empty) or unknown →
// none; "docker" → native (seed 000: the old name of the native backend).
func ParseBackend(s string) Backend {
	switch s {
	case "native", "docker":
		return BackendNative
	case "microvm":
		return BackendMicroVM
	}
	return BackendNone
}

// ParseRequestedBackend reads the backend a request names: "" (the
// default), none, native, "docker" (native's old name, as ParseBackend) or
// microvm. Unlike a stored value, an unknown name is a *SpecError for the
// field "backend": running it on none would be a silent downgrade.
func ParseRequestedBackend(s string) (Backend, error) {
	switch s {
	case "":
		return "", nil
	case "none", "native", "docker", "microvm":
		return ParseBackend(s), nil
	}
	return "", &SpecError{"backend", fmt.Sprintf("unknown backend %q; one of none, native, microvm", s)}
}

// Mode is the agent's mode, which decides what a bind mount may write.
type Mode string

const (
	ModeChat        Mode = "chat"        // writable binds stay writable
	ModeReview      Mode = "review"      // every bind read-only
	ModePlan        Mode = "plan"        // every bind read-only
	ModeOrchestrate Mode = "orchestrate" // every bind read-only
)

// BindMount shares one host path with the sandbox.
type BindMount struct {
	HostPath  string `json:"hostPath"`
	GuestPath string `json:"guestPath"`
	ReadOnly  bool   `json:"readOnly"`
}

// Spec is seed 000's SandboxSpec: what a launch receives.
type Spec struct {
	SessionID   string      `json:"sessionId"`
	WorkspaceID string      `json:"workspaceId"`
	AgentID     string      `json:"agentId"`
	BindMounts  []BindMount `json:"bindMounts"`
	// NetworkEnabled false still starts the session's proxies, with an
	// empty allow-list.
	NetworkEnabled bool `json:"networkEnabled"`
	// EgressAllowlist adds host patterns to the baseline allow-list. Nil
	// means the baseline only, never "allow all".
	EgressAllowlist []string `json:"egressAllowlist"`
	GuestWorkdir    string   `json:"guestWorkdir"`
	Mode            Mode     `json:"mode"`
	// ProtectedPaths are never writable, in any mode.
	ProtectedPaths []string `json:"protectedPaths"`
	// RunnerStateDirs are writable in every mode.
	RunnerStateDirs []string `json:"runnerStateDirs"`
	// ExecGrantRoots only matter on macOS; accepted and ignored on Linux.
	ExecGrantRoots []string `json:"execGrantRoots"`
}

// State is seed 000's SandboxState. It is microvm.State: the seed names
// one set of states for a session on any backend and for a VM, declared
// once, in the lower package.
type State = microvm.State

// The states; port/state.go holds the legal transitions.
const (
	StateCreated   = microvm.StateCreated   // launched, not ready yet
	StateWarm      = microvm.StateWarm      // ready, nothing running
	StateActive    = microvm.StateActive    // at least one exec running
	StateSuspended = microvm.StateSuspended // frozen by Suspend
	StateDestroyed = microvm.StateDestroyed // Destroy ran; the handle is dead
	StateError     = microvm.StateError     // the backend failed; Handle.Error says why
)

// Handle is seed 000's SandboxHandle: what a launch returns. Backend is
// the backend the session really runs on, never the one asked for.
type Handle struct {
	SessionID string            `json:"sessionId"`
	Backend   Backend           `json:"backend"`
	State     State             `json:"state"`
	Error     string            `json:"error,omitempty"`
	Details   map[string]any    `json:"details,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// Violation is seed 000's SandboxViolation: action, target and raw,
// with the time, the rule and, for filesystem and system-call refusals,
// the process. It is violation.Violation, the one type every source
// (proxies, seccomp supervisor, Seatbelt log) reports.
type Violation = violation.Violation

// EventType names an exec event (seed 000, "Événements du bac à sable").
// It is microvm.EventType, declared once in the lower package.
type EventType = microvm.EventType

// The event types.
const (
	EventStarting  = microvm.EventStarting
	EventReady     = microvm.EventReady
	EventStdout    = microvm.EventStdout
	EventStderr    = microvm.EventStderr
	EventExit      = microvm.EventExit
	EventKilled    = microvm.EventKilled
	EventViolation = microvm.EventViolation
)

// Event is one item of an exec's stream. Events of one exec are delivered
// in order and none is dropped.
type Event struct {
	Type EventType `json:"type"`
	// Seq numbers the events of one exec from 1.
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	// Data is the bytes of a stdout or stderr event.
	Data []byte `json:"data,omitempty"`
	// ExitCode is set on exit (128+N when killed by signal N).
	ExitCode *int `json:"exitCode,omitempty"`
	// Reason is set on killed: "oom", "timeout" or "manual".
	Reason    string     `json:"reason,omitempty"`
	Violation *Violation `json:"violation,omitempty"`
	// ExecID is set on starting and ready: the id that Kill and Signal
	// (see ExecController) take. Added for srtd; unique per sandbox.
	ExecID string `json:"execId,omitempty"`
	// Pid is set on ready: the command's pid as the sandbox sees it
	// (inside the native sandbox's PID namespace).
	Pid int `json:"pid,omitempty"`
}

// ExecRequest runs one command in a warm sandbox.
type ExecRequest struct {
	Argv []string `json:"argv"`
	// Env is added to the sanitised base environment.
	Env   map[string]string `json:"env,omitempty"`
	Cwd   string            `json:"cwd,omitempty"`
	Stdin io.Reader         `json:"-"`
	// Timeout kills the command (event killed, reason "timeout"). Zero
	// means no limit.
	Timeout time.Duration `json:"-"`
}

// Probe is the host probe's result (seed 000, "Sonde"). The microvm
// fields come from a test boot that finishes after start-up: while
// MicroVMState is MicroVMProbing, MicroVMAvailable is false and
// MicroVMNote is "probing".
type Probe struct {
	Platform         string       `json:"platform"`
	Available        bool         `json:"available"`
	Note             string       `json:"note"`
	RequiresInstall  bool         `json:"requiresInstall"`
	InstallHint      string       `json:"installHint,omitempty"`
	MicroVMAvailable bool         `json:"microvmAvailable"`
	MicroVMNote      string       `json:"microvmNote,omitempty"`
	MicroVMState     MicroVMState `json:"microvmState"`
}

// Sandbox is one launched session.
type Sandbox interface {
	Handle() Handle
	// Exec runs a command; events arrive on the returned channel, which is
	// closed after the exit or killed event.
	Exec(ctx context.Context, req ExecRequest) (<-chan Event, error)
	Suspend(ctx context.Context) error
	Resume(ctx context.Context) error
	// Destroy tears down every process, both proxies and every temporary
	// file. It is idempotent.
	Destroy(ctx context.Context) error
}

// Port launches sandboxes on the backends this host offers and keeps the
// one registry of the live ones (srtd keeps none of its own).
type Port interface {
	Probe() Probe
	// Launch validates spec and starts a sandbox on backend ("" means the
	// default). An explicit microvm on a host that cannot start a VM is an
	// error; only the default falls back to native, with a log line. The
	// errors are typed (see HTTPStatus): a *SpecError, ErrSessionExists,
	// ErrTooManySessions, ErrClosed, ErrBackendUnavailable (with
	// ErrSandboxDisabled under --sandbox off), ErrUnenforceable.
	Launch(ctx context.Context, spec Spec, backend Backend) (Sandbox, error)
	// Lookup returns the live sandbox named id: launched (Launch has
	// returned it) and not destroyed.
	Lookup(id string) (Sandbox, bool)
	// List returns the live sandboxes, in no particular order.
	List() []Sandbox
	// Close refuses every later launch (ErrClosed), including those in
	// progress, and destroys every live sandbox. ctx bounds the destroys.
	Close(ctx context.Context) error
}
