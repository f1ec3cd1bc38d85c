// Package api holds the JSON bodies of srtd's HTTP API, declared once for
// the server (package server) and its Go client (package client); the
// document that describes them is api/openapi.json, beside this file, and
// server/openapi_test.go holds real responses to it.
//
// The sandbox port's own types are already the wire types of seed 000
// (SandboxSpec, SandboxHandle, the exec events, the probe): they are
// declared in package port and named here by alias, so a port.Handle is an
// api.Handle. What the HTTP layer adds (the launch and exec requests, the
// terminal bodies and WebSocket messages, errors) is declared here.
//
// This package imports port only: never server or client.
package api

import (
	"time"

	"github.com/srt-go/srt/port"
)

// The port's types, which travel as they are.
type (
	// Spec is seed 000's SandboxSpec, the body of a launch (inside
	// LaunchRequest).
	Spec = port.Spec
	// BindMount is one entry of Spec.BindMounts.
	BindMount = port.BindMount
	// Mode is Spec.Mode: chat, review, plan or orchestrate.
	Mode = port.Mode
	// Backend is none, native or microvm (in a request also "docker",
	// the old name of native).
	Backend = port.Backend
	// Handle is seed 000's SandboxHandle, the answer of every
	// /v1/sandboxes operation (a list of them for GET /v1/sandboxes).
	Handle = port.Handle
	// State is Handle.State, seed 000's SandboxState.
	State = port.State
	// Event is one server-sent event of POST /v1/sandboxes/{id}/exec and
	// of GET /v1/sandboxes/{id}/events (the "data:" line, as JSON).
	Event = port.Event
	// EventType is Event.Type, also the SSE "event:" line.
	EventType = port.EventType
	// Violation is Event.Violation, seed 000's SandboxViolation.
	Violation = port.Violation
	// Probe is the answer of GET /v1/probe: the host probe run once at
	// start-up.
	Probe = port.Probe
)

// Health is the answer of GET /healthz: Status is always "ok".
type Health struct {
	Status string `json:"status"`
}

// Error is the body of every error answer. The status says the kind: 400
// a bad request (Field names the field), 401 a missing or bad token, 403 a
// refused Host or Origin, 404 an unknown session or terminal, 409 an
// illegal state transition or a conflict, 413 a body over the limit, 422
// a policy the backend cannot enforce, 429 a limit reached (sessions,
// execs, terminals, subscribers to one sandbox's events), 503 a backend
// this host cannot run or srtd shutting down.
type Error struct {
	Error string `json:"error"`
	// Field names the request field at fault, for a 400 (a JSON member
	// name, "bindMounts[2].hostPath" for an element); empty otherwise.
	Field string `json:"field,omitempty"`
}

// LaunchRequest is the body of POST /v1/sandboxes: a SandboxSpec (seed
// 000) plus the backend asked for.
type LaunchRequest struct {
	Spec
	// NetworkEnabled shadows Spec.NetworkEnabled so that an absent (or
	// null) field means true (seed 000, "SandboxSpec": networkEnabled
	// defaults to true). A client sends the Spec's value by pointing here.
	NetworkEnabled *bool `json:"networkEnabled,omitempty"`
	// Backend is "none", "native", "microvm" or "docker" (the old name of
	// native). Absent, null or "" means srtd's default: native when the
	// host offers it and --sandbox is on, else none. An explicit backend
	// that cannot run here is an error (503, or 409 with --sandbox off),
	// never a fallback; any other value is a 400.
	Backend Backend `json:"backend,omitempty"`
	// Wait false answers at once, 202 with the handle in state created,
	// while the backend starts in the background: GET shows created, then
	// warm, or error with the handle's error set (a failure found while
	// starting: a policy the backend cannot enforce, a sandbox that does
	// not start), which stays until DELETE. Absent, null or true: the
	// answer waits for warm (201), and such a failure is the error
	// answer, leaving no sandbox. Either way the spec, the backend, the
	// id and the session limit are checked before the answer.
	Wait *bool `json:"wait,omitempty"`
}

// PatchRequest is the body of PATCH /v1/sandboxes/{sessionId}: it
// re-binds the agent of a live sandbox (port.AgentBinder). AgentID is
// required and checked like Spec.AgentID ("" unbinds); any other member
// is a 400 naming it, since a live sandbox's policy cannot change.
type PatchRequest struct {
	AgentID *string `json:"agentId"`
}

// ExecRequest is the body of POST /v1/sandboxes/{sessionId}/exec: one
// command in a warm sandbox, answered by a stream of Events.
type ExecRequest struct {
	// Argv is the command and its arguments; Argv[0] is searched in the
	// PATH of the command's environment. Required, non-empty.
	Argv []string `json:"argv"`
	// Env is added to the sanitised base environment (port.SanitizedEnv)
	// and wins over it. A name must be non-empty without '=' or NUL.
	Env map[string]string `json:"env,omitempty"`
	// Cwd is the working directory, a guest path. Empty means the Spec's
	// GuestWorkdir.
	Cwd string `json:"cwd,omitempty"`
	// Stdin is the command's standard input as text; StdinBase64 as bytes
	// (standard base64). At most one may be set; neither means the null
	// device.
	Stdin       *string `json:"stdin,omitempty"`
	StdinBase64 *string `json:"stdinBase64,omitempty"`
	// TimeoutMs kills the command after so many milliseconds (event
	// killed, reason "timeout"). Zero means no limit; negative is a 400.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
}

// TerminalRequest is the body of POST /v1/terminals (seed 000, "Terminal
// hébergé par le serveur").
type TerminalRequest struct {
	// Backend is "none" (also absent or "": the host shell), "native" (or
	// "docker") or "microvm". A terminal never falls back: a backend that
	// cannot run here is a 503.
	Backend Backend `json:"backend,omitempty"`
	// Cwd is the session workdir, absolute. Empty means $HOME.
	Cwd string `json:"cwd,omitempty"`
	// Cols and Rows are the initial size in character cells, 0..1000.
	// Zero means 80×24.
	Cols int `json:"cols,omitempty"`
	Rows int `json:"rows,omitempty"`
	// Env is added to the sanitised environment.
	Env map[string]string `json:"env,omitempty"`
	// Network is a native terminal's egress: "open" (every host name
	// through the terminal's proxies, the fixed deny list and srtd's own
	// addresses still refused) or "baseline" (the allow-list). Absent
	// means srtd's --terminal-network (default open, seed 000). A
	// microvm terminal has the allow-list only ("open" is a 400); a host
	// shell (backend none) has the host's network ("baseline" is a 400).
	Network TerminalNetwork `json:"network,omitempty"`
}

// TerminalNetwork is TerminalRequest.Network and TerminalInfo.Network.
type TerminalNetwork string

const (
	// TerminalNetworkOpen: every host name, the deny list winning.
	TerminalNetworkOpen TerminalNetwork = "open"
	// TerminalNetworkBaseline: the terminal's allow-list.
	TerminalNetworkBaseline TerminalNetwork = "baseline"
	// TerminalNetworkHost (TerminalInfo only): a host shell, on the
	// host's network, unfiltered.
	TerminalNetworkHost TerminalNetwork = "host"
)

// TerminalState is TerminalInfo.State.
type TerminalState string

const (
	TerminalRunning TerminalState = "running" // the shell runs
	TerminalExited  TerminalState = "exited"  // the shell exited; ExitCode is set
)

// TerminalInfo is what POST /v1/terminals, GET and DELETE
// /v1/terminals/{id} answer.
type TerminalInfo struct {
	// ID names the terminal in the paths below /v1/terminals.
	ID string `json:"id"`
	// Backend is the backend the shell really runs on.
	Backend Backend `json:"backend"`
	// State is running or exited.
	State TerminalState `json:"state"`
	// Pid is the host shell's process id; absent for a sandboxed shell.
	Pid int `json:"pid,omitempty"`
	// Cwd is the shell's working directory.
	Cwd string `json:"cwd"`
	// Network is the egress in force: open, baseline, or host (backend
	// none). See TerminalRequest.Network.
	Network TerminalNetwork `json:"network"`
	// ExitCode is set once exited (128+N for a kill by signal N).
	ExitCode *int `json:"exitCode,omitempty"`
	// WebSocket is the path to attach to (GET, one WebSocket per
	// terminal; the terminal is killed when it drops).
	WebSocket string `json:"websocket"`
	// Details describe a sandboxed shell's confinement (microvm: the
	// VM's shares, what is not shared and why, accelerator, QEMU pid).
	Details map[string]any `json:"details,omitempty"`
}

// TerminalMessage is a text frame on a terminal's WebSocket; binary
// frames carry the PTY's bytes, output from srtd and input to it.
//
//	client → srtd  {"type":"input","data":"…"}         typed text
//	               {"type":"resize","cols":C,"rows":R}  1..1000 each
//	srtd → client  {"type":"exit","exitCode":N}         then close 1000
//
// Any other type, or a text frame that is not such JSON, is ignored.
type TerminalMessage struct {
	Type string `json:"type"`
	// Data is the text of an input message.
	Data string `json:"data,omitempty"`
	// Cols and Rows are the size of a resize message, in character cells.
	Cols int `json:"cols,omitempty"`
	Rows int `json:"rows,omitempty"`
	// ExitCode is the shell's status in an exit message (128+N for a kill
	// by signal N). It is sent even when zero.
	ExitCode *int `json:"exitCode,omitempty"`
}

// The TerminalMessage types.
const (
	TerminalInput  = "input"
	TerminalResize = "resize"
	TerminalExit   = "exit"
)

// ExecRecord is one exec in the answer of GET
// /v1/sandboxes/{sessionId}/execs: what srtd keeps of a sandbox's last
// ExecHistoryLimit execs, for the web console. Env and stdin are never
// kept (they may carry secrets); argv and output are capped.
type ExecRecord struct {
	// ExecID is the exec's id (Event.ExecID); empty until it started.
	ExecID string `json:"execId,omitempty"`
	// Argv is the command as asked, its first elements kept up to
	// ExecHistoryArgvBytes in all (each counting its length plus one)
	// and ExecHistoryArgvElems of them; ArgvTruncated says some were
	// dropped.
	Argv          []string `json:"argv"`
	ArgvTruncated bool     `json:"argvTruncated,omitempty"`
	// Cwd is the working directory asked for (empty: the workdir).
	Cwd       string     `json:"cwd,omitempty"`
	StartedAt time.Time  `json:"startedAt"`
	EndedAt   *time.Time `json:"endedAt,omitempty"`
	// State is running, exited or killed.
	State ExecState `json:"state"`
	// ExitCode is set once exited or killed (128+N for signal N).
	ExitCode *int `json:"exitCode,omitempty"`
	// Reason is a kill's reason (Event.Reason: oom, timeout, manual).
	Reason string `json:"reason,omitempty"`
	// Output is stdout and stderr in the order they came, adjacent
	// chunks of one stream merged, at most ExecHistoryOutputBytes in
	// all; OutputTruncated counts the bytes past it, not kept.
	Output          []ExecOutput `json:"output"`
	OutputTruncated int64        `json:"outputTruncated,omitempty"`
	// Violations counts the exec's violation events (a folded event by
	// its Count), dropped ones (lost) included.
	Violations uint64 `json:"violations,omitempty"`
}

// ExecOutput is a chunk of ExecRecord.Output.
type ExecOutput struct {
	// Stream is stdout or stderr.
	Stream EventType `json:"stream"`
	// Data is the bytes (base64 in JSON, as Event.Data).
	Data []byte `json:"data"`
}

// ExecState is ExecRecord.State.
type ExecState string

const (
	ExecRunning ExecState = "running" // no exit or killed event yet
	ExecExited  ExecState = "exited"  // exit event: ExitCode set
	ExecKilled  ExecState = "killed"  // killed event: Reason set
)

// The bounds of a sandbox's exec history (GET
// /v1/sandboxes/{sessionId}/execs): at most ExecHistoryLimit records,
// each with at most ExecHistoryOutputBytes of output and
// ExecHistoryArgvBytes of argv (an element counting its length plus
// one), in at most ExecHistoryArgvElems elements — some 16 KiB a
// record, 320 KiB a sandbox.
const (
	ExecHistoryLimit       = 20
	ExecHistoryOutputBytes = 16 << 10
	ExecHistoryArgvBytes   = 4 << 10
	ExecHistoryArgvElems   = 256
)
