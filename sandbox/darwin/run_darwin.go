package darwin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/srt-go/srt/internal/envlist"
	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/proxy"
	"github.com/srt-go/srt/violation"
)

// SandboxExec is sandbox-exec(1), present on every macOS install.
const SandboxExec = "/usr/bin/sandbox-exec"

// Probe reports whether sandbox-exec is there to run.
func Probe() error {
	if _, err := os.Stat(SandboxExec); err != nil {
		return fmt.Errorf("sandbox-exec: %w", err)
	}
	return nil
}

// Config is one command to run in a sandbox.
type Config struct {
	// Policy is the compiled policy. Required.
	Policy *policy.Policy
	// Argv is the command and its arguments, run as they are (no shell).
	Argv []string
	// Env is the environment; SANDBOX_RUNTIME=1, TMPDIR and the proxy
	// variables are set. Nil means os.Environ().
	Env []string
	// Dir is the working directory. Empty means the current one.
	Dir string
	// Stdin, Stdout and Stderr are as in os/exec.Cmd.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// KeepFDs are descriptors above 2 passed to the command at the same
	// numbers.
	KeepFDs []int
	// Logger receives debug lines (the profile among them). Nil discards.
	Logger *slog.Logger
	// OnViolation is called for each connection or request the proxies
	// refuse. Nil ignores them.
	OnViolation func(violation.Violation)
	// OnSandboxViolation is called for each Seatbelt denial of this run
	// read from the unified log (StartMonitor, ParseLogLine), from one
	// goroutine; it must not block. ignoreViolations is the caller's to
	// apply. Nil: no log stream is started.
	OnSandboxViolation func(violation.Violation)
}

// Process is a running sandbox.
type Process struct {
	cmd      *exec.Cmd
	srv      *proxy.Server
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	dir      string   // session directory: profile and TMPDIR
	mon      *Monitor // nil without Config.OnSandboxViolation
	waitOnce sync.Once
	code     int
	err      error
}

// Start runs cfg.Argv under sandbox-exec with a profile generated from
// cfg.Policy, and the session's proxies on 127.0.0.1 ports chosen by the
// kernel. On macOS the sandbox shares the host's loopback, so the
// proxies are reached directly and the profile allows those two ports
// only (seed 000, "Sortie réseau"). ctx bounds the whole run.
func Start(ctx context.Context, cfg Config) (_ *Process, err error) {
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	if cfg.Policy == nil || len(cfg.Argv) == 0 {
		return nil, errors.New("no policy or no command")
	}
	nw := cfg.Policy.Network
	p := &Process{}
	defer func() {
		if err != nil {
			p.cleanup()
		}
	}()
	if p.dir, err = os.MkdirTemp("", "srt-"); err != nil {
		return nil, fmt.Errorf("session directory: %w", err)
	}
	tmpdir := filepath.Join(p.dir, "tmp")
	if err := os.Mkdir(tmpdir, 0o700); err != nil {
		return nil, fmt.Errorf("session TMPDIR: %w", err)
	}

	// The proxies. A user-run proxy (httpProxyPort/socksProxyPort) on the
	// loopback is used as it is: the profile allows its port instead.
	var term *proxy.Terminate
	if nw.TLS != nil {
		term = nw.TLS.Terminate
	}
	if p.srv, err = proxy.New(proxy.Config{Policy: nw.Rules, OnViolation: cfg.OnViolation, Logger: lg, MaxConns: nw.MaxConns, Parent: nw.Parent, Terminate: term, Filtering: nw.Filter, Credentials: nw.Credentials}); err != nil {
		return nil, err
	}
	var sctx context.Context
	sctx, p.cancel = context.WithCancel(context.Background())
	httpPort, socksPort := nw.HTTPProxyPort, nw.SOCKSProxyPort
	if httpPort == 0 {
		if httpPort, err = p.listen(sctx, func(ctx context.Context, ln net.Listener) { p.srv.HTTP().Serve(ctx, ln) }); err != nil {
			return nil, err
		}
	}
	if socksPort == 0 {
		if socksPort, err = p.listen(sctx, func(ctx context.Context, ln net.Listener) { p.srv.SOCKS5().Serve(ctx, ln) }); err != nil {
			return nil, err
		}
	}

	tag := NewTag(strings.Join(cfg.Argv, " "))
	profile, err := Profile(Options{
		// Seatbelt cannot show a masked copy: a masked file is denied.
		Policy: cfg.Policy.MasksDenied(), Tag: tag,
		HTTPProxyPort: httpPort, SOCKSProxyPort: socksPort,
		WriteRoots: []string{tmpdir},
	})
	if err != nil {
		return nil, err
	}
	lg.Debug("seatbelt profile", "profile", profile)
	// The profile is a file outside the writable TMPDIR: sandbox-exec -p
	// would put it on the command line, where ARG_MAX bounds it.
	profilePath := filepath.Join(p.dir, "profile.sb")
	if err := os.WriteFile(profilePath, []byte(profile), 0o600); err != nil {
		return nil, fmt.Errorf("writing profile: %w", err)
	}

	// The monitor is attached before the command starts, so that its
	// first denials are read. Without it the command still runs:
	// violations are reporting, the profile is the enforcement.
	if cfg.OnSandboxViolation != nil {
		if p.mon, err = StartMonitor(sctx, tag, cfg.OnSandboxViolation, lg); err != nil {
			lg.Debug("violation monitor not started; Seatbelt denials are not reported", "error", err)
			p.mon, err = nil, nil
		}
	}

	env := cfg.Env
	if env == nil {
		env = os.Environ()
	}
	env = envlist.Set(env, "SANDBOX_RUNTIME", "1")
	env = envlist.Set(env, "TMPDIR", tmpdir)
	env = proxy.ScrubEnv(env, nw.Parent)
	for _, kv := range proxy.Env(httpPort, socksPort) {
		k, v, _ := strings.Cut(kv, "=")
		env = envlist.Set(env, k, v)
	}
	env = envlist.Set(env, "JAVA_TOOL_OPTIONS", proxy.MergeJavaToolOptions(getEnv(env, "JAVA_TOOL_OPTIONS"), httpPort))
	if nw.TLS != nil {
		if env, err = trustFiles(nw.TLS, p.dir, env); err != nil {
			return nil, err
		}
	}
	// macOS's nc speaks HTTP CONNECT (-X connect), so ssh goes through
	// the HTTP proxy with no helper of ours.
	env = envlist.Set(env, "GIT_SSH_COMMAND", "ssh -o ProxyCommand='nc -X connect -x 127.0.0.1:"+strconv.Itoa(httpPort)+" %h %p'")
	// Last, over everything srt set: masked and denied variables as the
	// policy says, and any real value elsewhere shown as its sentinel.
	env = nw.Credentials.Environ(env)

	// "--" ends sandbox-exec's options, so a command starting with '-'
	// is not read as one.
	p.cmd = exec.Command(SandboxExec, append([]string{"-f", profilePath, "--"}, cfg.Argv...)...)
	p.cmd.Env = env
	p.cmd.Dir = cfg.Dir
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = cfg.Stdin, cfg.Stdout, cfg.Stderr
	next := 3
	for _, fd := range cfg.KeepFDs {
		next = max(next, fd+1)
	}
	extra := make([]*os.File, next-3)
	for _, fd := range cfg.KeepFDs {
		extra[fd-3] = os.NewFile(uintptr(fd), "user")
	}
	p.cmd.ExtraFiles = extra
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting sandbox-exec: %w", err)
	}
	if ctx.Done() != nil {
		go func() {
			select {
			case <-ctx.Done():
				p.cmd.Process.Kill()
			case <-sctx.Done():
			}
		}()
	}
	return p, nil
}

// listen serves one proxy on 127.0.0.1 at a port the kernel picks.
func (p *Process) listen(ctx context.Context, serve func(context.Context, net.Listener)) (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("proxy listener: %w", err)
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		serve(ctx, ln)
	}()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Signal sends sig to the command.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Wait waits for the command, then stops the monitor and the proxies and
// removes the session directory. It returns the exit status (128+N when
// killed by signal N).
func (p *Process) Wait() (int, error) {
	p.waitOnce.Do(func() {
		err := p.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				p.code = 128 + int(ws.Signal())
			} else {
				p.code = ee.ExitCode()
			}
		default:
			p.err = err
		}
		p.cleanup()
	})
	return p.code, p.err
}

func (p *Process) cleanup() {
	// The monitor first: it waits for the stream to catch up with the
	// command's last denials, which cancelling the session would cut.
	if p.mon != nil {
		p.mon.Stop()
	}
	if p.cancel != nil {
		p.cancel()
	}
	if p.srv != nil {
		p.srv.Close()
	}
	p.wg.Wait()
	if p.dir != "" {
		os.RemoveAll(p.dir)
	}
}

func getEnv(env []string, k string) string {
	for _, kv := range env {
		if kk, v, _ := strings.Cut(kv, "="); kk == k {
			return v
		}
	}
	return ""
}
