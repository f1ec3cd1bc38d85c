// Package sandbox runs commands under a settings file's policy: the Go
// library behind the srt command line. A Manager holds the settings and
// the host's backend; each Cmd is one command in a sandbox of its own.
//
//	m, err := sandbox.NewManager(s, sandbox.Options{})
//	if err != nil { ... }        // the host cannot enforce the settings
//	defer m.Close()
//	cmd := m.Command(ctx, "git", "status")
//	cmd.Stdout = os.Stdout
//	err = cmd.Run()               // *ExitError for a non-zero status
//
// A Cmd works like an os/exec.Cmd: set its fields, then Start and Wait (or
// Run). It is single-use.
//
// A program that starts sandboxes calls Main as the first statement of its
// main function (and a test binary from TestMain, before m.Run):
//
//	func main() {
//		sandbox.Main()
//		...
//	}
//
// On Linux the sandbox re-executes the running binary as its PID 1, its
// placeholder guardian and its Landlock stage, and Main is where that
// binary takes up the role. Without it Cmd.Start fails with a *SetupError
// (wrapping linux.ErrNoDispatch) instead of running the program's main in
// the role's place.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/srt-go/srt/netrule"
	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/policy/dirindex"
	"github.com/srt-go/srt/settings"
	"github.com/srt-go/srt/violation"
)

// Main runs this process as one of the sandbox's helper roles when the
// sandbox launched it as one, and then never returns (it exits with the
// role's status); it returns at once when this process is not a sandbox
// helper role. Call it first in main, before flags are parsed or anything
// else runs: the helper roles get their own arguments and descriptors.
// Until Main has been called, Cmd.Start refuses with a *SetupError. On
// macOS it only returns.
func Main() { dispatchRole() }

// Options configure a Manager.
type Options struct {
	// Logger receives debug lines. Nil discards them.
	Logger *slog.Logger
	// Violations receives every refusal of every command the Manager runs
	// (network, seccomp, and filesystem with ObserveFilesystem), each
	// attributed to its command (Cmd.Key) and filtered by the settings'
	// ignoreViolations. Nil means the Manager makes one of
	// violation.DefaultCapacity entries.
	Violations *violation.Store
	// ObserveFilesystem also records the writes (and reads of denyRead
	// paths) the filesystem rules refuse. Linux observes them with a
	// seccomp notification per write-intent call, which costs a round
	// trip to this process each (BENCHMARKS.md, "Violations"); false
	// records network and system-call refusals only.
	ObserveFilesystem bool
}

// Manager runs commands under one settings value. It is safe for
// concurrent use; each command gets a sandbox of its own.
type Manager struct {
	settings   *settings.Settings
	log        *slog.Logger
	host       host
	violations *violation.Store
	observeFS  bool
}

// NewManager checks that this host can enforce s and returns a Manager.
// A nil s means the built-in defaults. It returns an error wrapping
// errors.ErrUnsupported on a platform without a backend, or the backend's
// reason (bubblewrap missing, user namespaces refused) — never a Manager
// that would run commands with a weaker policy.
func NewManager(s *settings.Settings, opts Options) (*Manager, error) {
	if s == nil {
		s = settings.Default()
	}
	lg := opts.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	h, err := newHost(s, lg)
	if err != nil {
		return nil, err
	}
	store := opts.Violations
	if store == nil {
		store = violation.NewStore(0)
	}
	return &Manager{settings: s, log: lg, host: h, violations: store, observeFS: opts.ObserveFilesystem}, nil
}

// Violations returns the store that records the refusals of the
// Manager's commands.
func (m *Manager) Violations() *violation.Store { return m.violations }

// ViolationsForCommand returns the recorded violations of the command
// whose Cmd.Key is key, oldest first.
func (m *Manager) ViolationsForCommand(key string) []violation.Violation {
	return m.violations.ForCommand(key)
}

// AnnotateStderrWithSandboxFailures returns stderr with a
// <sandbox_violations> block listing the violations of the command whose
// Cmd.Key is key, one line each (violation.Store.Annotate); stderr
// unchanged when it has none.
func (m *Manager) AnnotateStderrWithSandboxFailures(key, stderr string) string {
	return m.violations.Annotate(key, stderr)
}

// Settings returns the settings the Manager enforces. Do not modify them.
func (m *Manager) Settings() *settings.Settings { return m.settings }

// Close releases the Manager's resources. Commands still running keep
// their sandbox until they exit.
func (m *Manager) Close() error { return nil }

// Command returns a Cmd that runs name with args in a sandbox. As with
// exec.CommandContext, ctx ending kills the sandbox and everything in it.
// The arguments are passed as they are: no shell parses them.
func (m *Manager) Command(ctx context.Context, name string, args ...string) *Cmd {
	return &Cmd{m: m, ctx: ctx, Args: append([]string{name}, args...), key: violation.NewKey()}
}

// Cmd is one command to run in a sandbox.
type Cmd struct {
	// Args is the command line, Args[0] the program (looked up in PATH
	// inside the sandbox).
	Args []string
	// Env is the environment. Nil means this process's environment.
	// SANDBOX_RUNTIME=1 and a private TMPDIR are always added.
	Env []string
	// Dir is the working directory, against which the settings' relative
	// paths and the mandatory denies are resolved. Empty means the current
	// directory.
	Dir string
	// Stdin, Stdout and Stderr are as in os/exec.Cmd: nil means the null
	// device. An *os.File that is a terminal gives the command a
	// pseudo-terminal of its own that relays to it.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// KeepFDs lists descriptors above 2 of this process that the command
	// inherits at the same numbers.
	KeepFDs []int
	// CommandID is the attribution key of this invocation's violations
	// (seed 003, "Attribution des violations"): pass an opaque ID per
	// invocation, such as a tool-use ID, to look them up later. Empty
	// means a fresh random key per Cmd (Key), never the command text, so
	// that commands sharing a long prefix are not mixed up and a re-run
	// does not inherit the previous run's violations.
	CommandID string
	// CommandText is the command this invocation stands for, when what
	// runs is a wrapper around it: each violation reports it as its
	// Command, and ignoreViolations patterns are matched against it.
	// Empty means Args joined with spaces.
	CommandText string

	key  string // the default attribution key
	m    *Manager
	ctx  context.Context
	proc process
	// Policy is the compiled policy, set by Start.
	Policy *policy.Policy
}

// Key returns the attribution key the command's violations are recorded
// under: CommandID, or a random key made for this Cmd.
func (c *Cmd) Key() string {
	if c.CommandID != "" {
		return c.CommandID
	}
	return c.key
}

// commandText is what violations report as Command and what
// ignoreViolations matches.
func (c *Cmd) commandText() string {
	if c.CommandText != "" {
		return c.CommandText
	}
	return strings.Join(c.Args, " ")
}

// report attributes v to the command and records it, unless the
// settings' ignoreViolations suppress it (reporting only). It never
// blocks.
func (c *Cmd) report(v violation.Violation) {
	v.Key, v.Command = c.Key(), c.commandText()
	if v.Raw == "" {
		v.Raw = v.Line()
	}
	if violation.Ignored(v, v.Command, c.m.settings.IgnoreViolations) {
		return
	}
	c.m.violations.Add(v)
}

// ExitError reports a command that ran and exited with a non-zero status.
type ExitError struct {
	// Code is the exit status; 128+N for a command killed by signal N.
	Code int
}

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// SetupError reports that the sandbox could not be set up, so the command
// did not run.
type SetupError struct{ Err error }

func (e *SetupError) Error() string { return e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// process is a running sandbox of some backend.
type process interface {
	Signal(os.Signal) error
	Wait() (int, error)
}

// host is a platform backend.
type host interface {
	start(ctx context.Context, c *Cmd) (process, error)
}

// Start compiles the policy for the command's directory and starts the
// sandbox. Errors are *SetupError; the command did not start.
func (c *Cmd) Start() error {
	if c.proc != nil {
		return errors.New("sandbox: already started")
	}
	if len(c.Args) == 0 {
		return &SetupError{errors.New("no command")}
	}
	p, err := policy.Compile(c.m.settings, policy.Env{Cwd: c.Dir, DirIndex: dirindex.DefaultPath()})
	if err != nil {
		return &SetupError{err}
	}
	for _, n := range p.Notes {
		c.m.log.Debug("policy", "note", n)
	}
	c.Policy = p
	ctx := c.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	proc, err := c.m.host.start(ctx, c)
	if err != nil {
		var se *SetupError
		if !errors.As(err, &se) {
			err = &SetupError{err}
		}
		return err
	}
	c.proc = proc
	return nil
}

// Wait waits for the command to exit and the sandbox to be cleaned up. It
// returns nil for status 0, an *ExitError for another status, or a
// *SetupError when the sandbox failed before the command ran.
func (c *Cmd) Wait() error {
	if c.proc == nil {
		return errors.New("sandbox: not started")
	}
	code, err := c.proc.Wait()
	if err != nil {
		var se *SetupError
		if !errors.As(err, &se) {
			err = &SetupError{err}
		}
		return err
	}
	if code != 0 {
		return &ExitError{Code: code}
	}
	return nil
}

// Run starts the command and waits for it.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}

// Signal sends sig to the command (through the sandbox's PID 1).
func (c *Cmd) Signal(sig os.Signal) error {
	if c.proc == nil {
		return errors.New("sandbox: not started")
	}
	return c.proc.Signal(sig)
}

// Resize sets the size of the command's terminal to rows by cols
// characters, and the command gets SIGWINCH. A caller whose own
// controlling terminal is the command's stdio need not call it: that
// terminal's resizes are relayed by themselves. It returns an error when
// the command is not started or has no terminal, and one wrapping
// errors.ErrUnsupported on a backend that gives the command no terminal
// of its own (macOS: the command then uses the caller's terminal, whose
// size is the caller's to set).
func (c *Cmd) Resize(rows, cols uint16) error {
	if c.proc == nil {
		return errors.New("sandbox: not started")
	}
	r, ok := c.proc.(interface{ Resize(rows, cols uint16) error })
	if !ok {
		return fmt.Errorf("sandbox: this backend gives the command no terminal of its own: %w", errors.ErrUnsupported)
	}
	return r.Resize(rows, cols)
}

// UpdateNetwork replaces the network lists of the running command
// (allowedDomains, deniedDomains, deniedDomainReasons,
// allowlistDenyReason, deniedResolvedAddresses): connections and plain-HTTP requests that start
// after it returns are judged by them; open tunnels are not re-judged.
// The other network settings (proxy ports, unix sockets) are fixed at
// Start. This is what --control-fd delivers (srt-notes §2.5). It returns
// an error, and changes nothing, when the lists do not compile, when the
// command is not started, or when the backend cannot change them.
func (c *Cmd) UpdateNetwork(n settings.Network) error {
	pol, err := netrule.Compile(policy.NetworkRules(n))
	if err != nil {
		return err
	}
	if c.proc == nil {
		return errors.New("sandbox: not started")
	}
	np, ok := c.proc.(interface{ SetNetworkPolicy(*netrule.Policy) })
	if !ok {
		return errors.New("sandbox: this backend cannot change the network rules of a running command")
	}
	np.SetNetworkPolicy(pol)
	return nil
}
