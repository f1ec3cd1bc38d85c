package wire

// AgentMsg is one message of the exec agent's protocol, either direction:
// one JSON object per SOCK_SEQPACKET packet (see the package comment).
// Which fields an Op uses is noted beside them.
type AgentMsg struct {
	Op string `json:"op"` // one of the Agent* ops
	ID uint64 `json:"id,omitempty"`
	// exec
	Argv []string `json:"argv,omitempty"`
	Env  []string `json:"env,omitempty"`
	Dir  string   `json:"dir,omitempty"`
	// TTY makes the stdin descriptor (a terminal) the command's
	// controlling terminal.
	TTY bool `json:"tty,omitempty"`
	// signal
	Sig int `json:"sig,omitempty"`
	// started
	Pid int `json:"pid,omitempty"`
	// failed, exit
	Code   int    `json:"code,omitempty"`
	Signal int    `json:"signal,omitempty"`
	Error  string `json:"error,omitempty"`
}

// The agent's ops: srt → PID 1 exec, signal, freeze, thaw; PID 1 → srt
// ready (once), started, failed, exit, frozen, thawed.
const (
	AgentExec    = "exec"    // with AgentExecFDs descriptors: stdin, stdout, stderr
	AgentSignal  = "signal"  // Sig to exec ID's process group
	AgentFreeze  = "freeze"  // SIGSTOP to every process but PID 1
	AgentThaw    = "thaw"    // SIGCONT to every process but PID 1
	AgentReady   = "ready"   // PID 1 serves requests
	AgentStarted = "started" // exec ID runs as Pid
	AgentFailed  = "failed"  // exec ID did not start: Code, Error
	AgentExit    = "exit"    // exec ID ended: Code, Signal
	AgentFrozen  = "frozen"  // freeze ID done
	AgentThawed  = "thawed"  // thaw ID done
)

// AgentExecFDs is how many descriptors an exec request carries.
const AgentExecFDs = 3

// MaxAgentMsg bounds one packet, in bytes; an exec request's argv and env
// must fit.
const MaxAgentMsg = 256 << 10
