package port

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/srt-go/srt/internal/envlist"
	"github.com/srt-go/srt/proxy"
	"github.com/srt-go/srt/sandbox/darwin"
)

// launchNative starts a native macOS session for s (seed 000, "Backend
// natif", macOS): the session's proxy pair on the host's loopback (the
// sandbox shares it, so the profile allows those two ports and DNS
// only), and each exec under sandbox-exec with seed 000's agent profile
// generated from the Spec (seatbeltSpec) at its start, so that symbolic
// links a command planted between runs are resolved afresh. Binds are
// seen at their host paths: a guestPath that differs is refused
// (ErrUnenforceable).
//
// There is no warm sandbox to keep: each exec is a sandbox-exec process
// of its own, leading a process group that signals, suspend and destroy
// address. A process that leaves its group (setsid) escapes those, and
// nothing kills the session's processes if srtd itself is killed with
// SIGKILL (macOS has no cgroups and no parent-death signal).
func launchNative(ctx context.Context, rt *Runtime, s *session) (runner, error) {
	start := time.Now()
	spec := s.spec
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, fmt.Errorf("%w: the home directory, under which the secret paths are denied: %v", ErrBackendUnavailable, err)
	}
	pol, err := compileRules(EgressRules(rt.baseline, spec.NetworkEnabled, spec.EgressAllowlist))
	if err != nil {
		return nil, fmt.Errorf("egress policy: %w", err)
	}
	lg := rt.log.With("session", spec.SessionID)
	r := &seatbeltRunner{spec: spec, log: lg, procs: map[int]*seatbeltProc{}}
	ok := false
	defer func() {
		if !ok {
			r.release()
		}
	}()
	if r.dir, err = os.MkdirTemp("", "srtd-seatbelt-"); err != nil {
		return nil, fmt.Errorf("session directory: %w", err)
	}
	tmpdir := filepath.Join(r.dir, "tmp")
	if err := os.Mkdir(tmpdir, 0o700); err != nil {
		return nil, fmt.Errorf("session TMPDIR: %w", err)
	}
	if r.srv, err = proxy.New(proxy.Config{Policy: pol, OnViolation: s.ReportViolation, Logger: lg}); err != nil {
		return nil, err
	}
	var sctx context.Context
	sctx, r.cancel = context.WithCancel(context.Background())
	if r.httpPort, err = r.listen(sctx, func(ctx context.Context, ln net.Listener) { r.srv.HTTP().Serve(ctx, ln) }); err != nil {
		return nil, err
	}
	if r.socksPort, err = r.listen(sctx, func(ctx context.Context, ln net.Listener) { r.srv.SOCKS5().Serve(ctx, ln) }); err != nil {
		return nil, err
	}
	tag := darwin.NewTag("srtd session " + spec.SessionID)
	if r.ds, err = seatbeltSpec(spec, rt.nameGlobs, home, tmpdir, tag, darwin.Egress{HTTPProxyPort: r.httpPort, SOCKSProxyPort: r.socksPort}); err != nil {
		return nil, err
	}
	// Every Seatbelt denial of the session, from the unified log; without
	// the monitor the profile still enforces, only unreported.
	if r.mon, err = darwin.StartMonitor(sctx, tag, s.ReportViolation, lg); err != nil {
		lg.Info("violation monitor not started; Seatbelt denials are not reported", "err", err)
		r.mon = nil
	}
	env := proxy.ScrubEnv(SanitizedEnv(hostEnv(), nil), nil)
	env = envlist.Set(env, "SANDBOX_RUNTIME", "1")
	env = envlist.Set(env, "TMPDIR", tmpdir)
	for _, kv := range proxy.Env(r.httpPort, r.socksPort) {
		k, v, _ := strings.Cut(kv, "=")
		env = envlist.Set(env, k, v)
	}
	env = envlist.Set(env, "JAVA_TOOL_OPTIONS", proxy.MergeJavaToolOptions("", r.httpPort))
	// macOS's nc speaks HTTP CONNECT: ssh goes through the HTTP proxy
	// with no helper, wherever srtd is installed.
	env = envlist.Set(env, "GIT_SSH_COMMAND", "ssh -o ProxyCommand='nc -X connect -x 127.0.0.1:"+strconv.Itoa(r.httpPort)+" %h %p'")
	r.env = env
	r.launched = time.Since(start)
	ok = true
	return r, nil
}

// seatbeltRunner runs a session's commands, each under sandbox-exec.
type seatbeltRunner struct {
	spec                Spec
	ds                  darwin.Spec
	log                 *slog.Logger
	dir                 string // session directory: profiles and TMPDIR
	env                 []string
	srv                 *proxy.Server
	httpPort, socksPort int
	mon                 *darwin.Monitor
	cancel              context.CancelFunc
	wg                  sync.WaitGroup
	launched            time.Duration
	n                   atomic.Int64 // profiles written

	mu         sync.Mutex
	procs      map[int]*seatbeltProc // by process group
	destroying bool
}

// listen serves one proxy on 127.0.0.1 at a port the kernel picks.
func (r *seatbeltRunner) listen(ctx context.Context, serve func(context.Context, net.Listener)) (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("proxy listener: %w", err)
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		serve(ctx, ln)
	}()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (r *seatbeltRunner) start(c command) (proc, error) {
	// The profile is generated for this exec: hostSpellings resolves the
	// symbolic links on the paths as they are now.
	profile, err := darwin.AgentProfile(r.ds)
	if err != nil {
		return nil, fmt.Errorf("%w: seatbelt profile: %v", ErrUnenforceable, err)
	}
	// Outside the writable TMPDIR, so no command rewrites a later exec's
	// profile; a file because sandbox-exec -p would bound it by ARG_MAX.
	path := filepath.Join(r.dir, fmt.Sprintf("profile-%d.sb", r.n.Add(1)))
	if err := os.WriteFile(path, []byte(profile), 0o600); err != nil {
		return nil, fmt.Errorf("writing the profile: %w", err)
	}
	dir := c.dir
	if dir == "" {
		dir = r.spec.GuestWorkdir
	}
	if dir == "" {
		dir = "/"
	}
	env := slices.Clone(r.env)
	keys := make([]string, 0, len(c.env))
	for k := range c.env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = envlist.Set(env, k, c.env[k])
	}
	// "--" ends sandbox-exec's options, so a command starting with '-'
	// is not read as one.
	cmd := exec.Command(darwin.SandboxExec, append([]string{"-f", path, "--"}, c.argv...)...)
	cmd.Env, cmd.Dir = env, dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.stdin, c.stdout, c.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.destroying {
		return nil, errors.New("the session is being destroyed")
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting sandbox-exec: %w", err)
	}
	p := &seatbeltProc{cmd: cmd, done: make(chan struct{})}
	r.procs[cmd.Process.Pid] = p
	go func() {
		p.code, p.sig = waitStatus(cmd.Wait())
		close(p.done)
		os.Remove(path)
		r.mu.Lock()
		delete(r.procs, cmd.Process.Pid)
		r.mu.Unlock()
	}()
	return p, nil
}

// waitStatus is exec.Cmd.Wait's error as an exit code (128+N for signal
// N) and N.
func waitStatus(err error) (code, sig int) {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), int(ws.Signal())
		}
		return ee.ExitCode(), 0
	}
	return 125, 0
}

// signalAll sends sig to the process group of every running exec.
func (r *seatbeltRunner) signalAll(sig syscall.Signal) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for pg := range r.procs {
		if err := syscall.Kill(-pg, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("signal %v to process group %d: %w", sig, pg, err))
		}
	}
	return errors.Join(errs...)
}

func (r *seatbeltRunner) freeze(context.Context, []proc) error { return r.signalAll(syscall.SIGSTOP) }
func (r *seatbeltRunner) thaw(context.Context, []proc) error   { return r.signalAll(syscall.SIGCONT) }

func (r *seatbeltRunner) destroy(ctx context.Context) error {
	r.mu.Lock()
	r.destroying = true
	r.mu.Unlock()
	err := r.signalAll(syscall.SIGKILL)
	r.signalAll(syscall.SIGCONT) // a frozen group dies only once running
	r.release()
	return err
}

// release stops the monitor and the proxies and removes the session
// directory.
func (r *seatbeltRunner) release() {
	if r.mon != nil {
		r.mon.Stop()
	}
	if r.cancel != nil {
		r.cancel()
	}
	if r.srv != nil {
		r.srv.Close()
	}
	r.wg.Wait()
	if r.dir != "" {
		os.RemoveAll(r.dir)
	}
}

func (r *seatbeltRunner) details() map[string]any {
	return map[string]any{
		"workdir":        r.spec.GuestWorkdir,
		"sandbox":        "sandbox-exec (Seatbelt) with seed 000's agent profile, one per exec",
		"httpProxy":      fmt.Sprintf("127.0.0.1:%d (the host's loopback, shared on macOS)", r.httpPort),
		"socksProxy":     fmt.Sprintf("127.0.0.1:%d (the host's loopback, shared on macOS)", r.socksPort),
		"launchMillis":   r.launched.Milliseconds(),
		"execGrantRoots": "honoured: binaries under them may run although writable",
	}
}

// seatbeltProc is one exec: sandbox-exec, leading its process group.
type seatbeltProc struct {
	cmd       *exec.Cmd
	done      chan struct{}
	code, sig int
}

func (p *seatbeltProc) pid() int { return p.cmd.Process.Pid }

func (p *seatbeltProc) signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	return syscall.Kill(-p.cmd.Process.Pid, sig)
}

func (p *seatbeltProc) wait() (int, int) {
	<-p.done
	return p.code, p.sig
}

// precheckLaunch: what the Seatbelt translation refuses from the spec
// alone (seatbeltBinds) and host paths reached through a symbolic link a
// session or another user could have made (writtenTrees.checkLinks) are
// refused before Start answers, as on Linux.
func precheckLaunch(rt *Runtime, spec Spec, b Backend) error {
	if b != BackendNative {
		return nil
	}
	if err := rt.written.checkLinks(spec); err != nil {
		return err
	}
	return seatbeltBinds(spec)
}
