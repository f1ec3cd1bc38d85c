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
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/srt-go/srt/netrule"
	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/settings"
)

// Options configure a Manager.
type Options struct {
	// Logger receives debug lines. Nil discards them.
	Logger *slog.Logger
}

// Manager runs commands under one settings value. It is safe for
// concurrent use; each command gets a sandbox of its own.
type Manager struct {
	settings *settings.Settings
	log      *slog.Logger
	host     host
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
	return &Manager{settings: s, log: lg, host: h}, nil
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
	return &Cmd{m: m, ctx: ctx, Args: append([]string{name}, args...)}
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

	m    *Manager
	ctx  context.Context
	proc process
	// Policy is the compiled policy, set by Start.
	Policy *policy.Policy
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
	p, err := policy.Compile(c.m.settings, policy.Env{Cwd: c.Dir})
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

// UpdateNetwork replaces the network lists of the running command
// (allowedDomains, deniedDomains, deniedDomainReasons,
// allowlistDenyReason): connections and plain-HTTP requests that start
// after it returns are judged by them; open tunnels are not re-judged.
// The other network settings (proxy ports, unix sockets) are fixed at
// Start. This is what --control-fd delivers (srt-notes §2.5). It returns
// an error, and changes nothing, when the lists do not compile, when the
// command is not started, or when the backend cannot change them.
func (c *Cmd) UpdateNetwork(n settings.Network) error {
	pol, err := netrule.Compile(netrule.Rules{
		Allowed:             n.AllowedDomains,
		Denied:              n.DeniedDomains,
		DeniedReasons:       n.DeniedDomainReasons,
		AllowlistDenyReason: n.AllowlistDenyReason,
	})
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
