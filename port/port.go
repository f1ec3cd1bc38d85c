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
	"math"
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
	// MemoryLimitBytes is the session's memory limit, bytes: at least
	// MinMemoryLimit and at most the server's (Options.MemoryLimit). Zero
	// means the server's. Added for srtd (issue 16); a native session on
	// Linux gets a memory cgroup, and a process its limit gets OOM-killed
	// ends its exec with killed, reason "oom".
	MemoryLimitBytes int64 `json:"memoryLimitBytes,omitempty"`
	// Credentials are the session's masked or withheld environment
	// variables (port/credentials.go; issue 18). Nil means none. Only the
	// native backend on Linux accepts them (422 otherwise).
	Credentials *Credentials `json:"credentials,omitempty"`
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
//
// WorkspaceID, AgentID, Mode, BindMounts and NetworkEnabled are what the
// Spec said, as launched: Mode with its default (chat), BindMounts as
// effective (guestPath filled in; readOnly true where the bind said so or
// the mode makes every bind read-only), AgentID as last re-bound
// (AgentBinder). Details["mode"] repeats Mode for older clients.
type Handle struct {
	SessionID      string      `json:"sessionId"`
	WorkspaceID    string      `json:"workspaceId,omitempty"`
	AgentID        string      `json:"agentId,omitempty"`
	Backend        Backend     `json:"backend"`
	State          State       `json:"state"`
	Error          string      `json:"error,omitempty"`
	Mode           Mode        `json:"mode"`
	BindMounts     []BindMount `json:"bindMounts"`
	NetworkEnabled bool        `json:"networkEnabled"`
	// EgressAllowlist is Spec.EgressAllowlist as launched: the host
	// patterns added to the baseline allow-list (empty, never nil, when
	// none). It is in force only where Network is NetworkAllowlist.
	EgressAllowlist []string `json:"egressAllowlist"`
	// GuestWorkdir is Spec.GuestWorkdir ("" when the spec had none).
	GuestWorkdir string `json:"guestWorkdir,omitempty"`
	// Network is the egress actually in force (HandleNetwork).
	Network HandleNetwork     `json:"network"`
	Details map[string]any    `json:"details,omitempty"`
	Labels  map[string]string `json:"labels,omitempty"`
	// Credentials is Spec.Credentials with every value RedactedValue:
	// names, modes and hosts only. Omitted when the Spec had none.
	Credentials *Credentials `json:"credentials,omitempty"`
}

// HandleNetwork is Handle.Network: the egress a session really has,
// which networkEnabled alone does not say (backend none ignores it).
type HandleNetwork string

const (
	// NetworkAllowlist: through the session's proxies, the baseline
	// allow-list plus Handle.EgressAllowlist, the deny list winning.
	NetworkAllowlist HandleNetwork = "allowlist"
	// NetworkOff: networkEnabled false; the proxies run with an empty
	// allow-list, so every host is refused.
	NetworkOff HandleNetwork = "off"
	// NetworkHost: backend none, unsandboxed; the host's network,
	// unfiltered, whatever networkEnabled said.
	NetworkHost HandleNetwork = "host"
)

// handleNetwork is the Network of a session on backend b.
func handleNetwork(b Backend, networkEnabled bool) HandleNetwork {
	switch {
	case b == BackendNone:
		return NetworkHost
	case !networkEnabled:
		return NetworkOff
	}
	return NetworkAllowlist
}

// Violation is seed 000's SandboxViolation: action, target and raw,
// with the time, the rule and, for filesystem and system-call refusals,
// the process. It is violation.Violation, the one type every source
// (proxies, seccomp supervisor, Seatbelt log) reports.
type Violation = violation.Violation

// EventType names an exec or sandbox event (seed 000, "Événements du bac
// à sable"). It is microvm.EventType, declared once in the lower package.
type EventType = microvm.EventType

// The event types of an exec's stream (seed 000). starting, ready,
// violation, exit and killed are also events of the sandbox's stream
// (EventSubscriber): starting when the launch begins, ready when the
// sandbox is warm, and each exec's exit or killed, with its ExecID.
const (
	EventStarting  = microvm.EventStarting
	EventReady     = microvm.EventReady
	EventStdout    = microvm.EventStdout
	EventStderr    = microvm.EventStderr
	EventExit      = microvm.EventExit
	EventKilled    = microvm.EventKilled
	EventViolation = microvm.EventViolation
)

// The event types of the sandbox's stream only (EventSubscriber), added
// for srtd: the seed names none for these state changes.
const (
	// EventSuspended: Suspend froze the sandbox.
	EventSuspended EventType = "suspended"
	// EventResumed: Resume thawed it.
	EventResumed EventType = "resumed"
	// EventError: the backend failed (the launch, or the sandbox died);
	// Error says why. Only destroyed follows.
	EventError EventType = "error"
	// EventDestroyed: Destroy ran. Always the last event: the stream ends.
	EventDestroyed EventType = "destroyed"
	// EventAgent: the sandbox was re-bound to AgentID (AgentBinder).
	EventAgent EventType = "agent"
	// EventLost: this subscriber missed Lost events (it fell
	// SubscriberBuffer behind, or asked for events older than
	// HistoryLimit, or resumed with another stream's seq: Reason
	// LostReset). Seq is the last event it received before the gap. A
	// lost event that is not the first of a sandbox stream is its last.
	//
	// On an exec's stream (added for srtd, issue 16) it is an event of
	// its own, with its own Seq, and the stream goes on: Lost violations
	// were dropped before it because ExecViolationLimit events (or
	// ExecViolationBytes) were pending (the consumer read too slowly);
	// it is queued once the consumer has caught up, and always before
	// exit or killed.
	EventLost EventType = "lost"
)

// LostReset is the Reason of the lost event that starts a sandbox stream
// subscribed to with a seq it never published (a cursor from another
// stream: see EventSubscriber).
const LostReset = "reset"

// ResetSeq, as Subscribe's afterSeq, says the caller's cursor is from
// another stream (srtd: a Last-Event-ID whose tag is not StreamTag's). Any
// afterSeq past the last event published is treated the same.
const ResetSeq = math.MaxUint64

// Event is one item of an exec's stream or of a sandbox's. Events of one
// exec are delivered in order and none is dropped but violations past
// ExecViolationLimit, counted by a lost event; a sandbox's are delivered
// in order, and a gap is always a lost event.
type Event struct {
	Type EventType `json:"type"`
	// Seq numbers the events of one exec from 1, or those of one sandbox
	// from 1 (the sandbox's stream has its own numbering).
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	// Data is the bytes of a stdout or stderr event.
	Data []byte `json:"data,omitempty"`
	// ExitCode is set on exit (128+N when killed by signal N).
	ExitCode *int `json:"exitCode,omitempty"`
	// Reason is set on killed: "oom", "timeout" or "manual"; and on the
	// sandbox stream's lost event that answers a stale cursor: LostReset.
	Reason    string     `json:"reason,omitempty"`
	Violation *Violation `json:"violation,omitempty"`
	// ExecID is set on an exec's starting and ready: the id that Kill and
	// Signal (see ExecController) take. Added for srtd; unique per
	// sandbox. On the sandbox's stream it is set on exit and killed, and
	// on violation when exactly one exec was running (the one whose
	// stream shows it too); the sandbox's own starting and ready have
	// none.
	ExecID string `json:"execId,omitempty"`
	// Pid is set on ready: the command's pid as the sandbox sees it
	// (inside the native sandbox's PID namespace).
	Pid int `json:"pid,omitempty"`
	// Error is set on error: why the backend failed.
	Error string `json:"error,omitempty"`
	// AgentID is set on agent: the agent now bound (absent: none).
	AgentID string `json:"agentId,omitempty"`
	// Lost is set on lost: how many events the subscriber missed; on an
	// exec's stream, how many violations it dropped (see EventLost).
	Lost uint64 `json:"lost,omitempty"`
	// Count is set on an exec's violation event that stands for more than
	// one report: how many identical ones (all fields but time) the
	// stream folded into it while it was pending. Absent means one.
	// Added for srtd (issue 16).
	Count uint64 `json:"count,omitempty"`
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

// EventSubscriber is implemented by every Sandbox the port returns: the
// sandbox's own event stream, besides each exec's. Its events are
// starting, ready, violation, each exec's exit and killed (with ExecID;
// killed with Reason), suspended, resumed, error, agent and, last,
// destroyed; Seq numbers them from 1 per sandbox.
type EventSubscriber interface {
	// Subscribe returns the events with Seq > afterSeq (0: from the
	// first), in order: first those still kept (the last HistoryLimit;
	// older ones missed are one lost event), then the live ones. The
	// channel is closed after destroyed, when ctx ends, or after a lost
	// event that ends a subscriber SubscriberBuffer events behind (resume
	// with afterSeq = that event's Seq). Publishing never waits for a
	// subscriber. An afterSeq past the last event published (ResetSeq,
	// or a seq of a former sandbox of the same id) is never silence: the
	// stream starts with a lost event, Seq 0 and Reason LostReset (Lost:
	// how many events left the history before the first kept one), then
	// replays from the first kept event. Errors: ErrTooManySubscribers at
	// MaxSubscribers.
	Subscribe(ctx context.Context, afterSeq uint64) (<-chan Event, error)
	// StreamTag returns the tag of this sandbox's stream: 12 lower-case
	// hex digits, random, fixed for the sandbox's life, so that a
	// sandbox re-created with the same id has another (issue 16). srtd's
	// SSE ids are "<tag>.<seq>": a Last-Event-ID with another tag is a
	// cursor from another stream (ResetSeq).
	StreamTag() string
}

// AgentBinder is implemented by every Sandbox the port returns: it
// re-binds the agent of a live sandbox (its policy stays as launched).
type AgentBinder interface {
	// SetAgent sets Handle.AgentID and publishes an agent event. agentID
	// is checked like Spec.AgentID ("" unbinds): a bad one is a
	// *SpecError for "agentId"; a destroyed sandbox wraps
	// ErrIllegalTransition.
	SetAgent(agentID string) error
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
	// ErrSandboxDisabled under --sandbox off), ErrUnenforceable. It
	// returns once the sandbox is warm; a start that fails leaves none.
	Launch(ctx context.Context, spec Spec, backend Backend) (Sandbox, error)
	// Start is Launch without the wait. The spec, the backend, the id and
	// the session limit are checked before it returns, with Launch's
	// errors, and the sandbox comes back in StateCreated, already seen by
	// Lookup; its backend starts in the background, bounded by ctx, and
	// it moves to StateWarm, or to StateError with Handle.Error set (what
	// only the start finds: an unenforceable policy, a backend that does
	// not start), where it stays until Destroy. Destroy while created
	// cancels the start and leaves nothing behind.
	Start(ctx context.Context, spec Spec, backend Backend) (Sandbox, error)
	// Choose returns the backend a launch naming requested runs on, or
	// the error Launch would give (see Runtime.Choose): the one backend
	// rule, which srtd's terminals follow too. It may wait, bounded by
	// ctx, for the microvm probe.
	Choose(ctx context.Context, requested Backend) (Backend, error)
	// Lookup returns the sandbox named id that is not destroyed, starting
	// (StateCreated) and failed (StateError) ones included.
	Lookup(id string) (Sandbox, bool)
	// List returns the sandboxes Lookup finds, in no particular order.
	List() []Sandbox
	// Close refuses every later launch (ErrClosed), including those in
	// progress, and destroys every sandbox Lookup finds (those still
	// starting too). ctx bounds the destroys.
	Close(ctx context.Context) error
}
