//go:build unix

package port

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/srt-go/srt/internal/execpath"
	"github.com/srt-go/srt/internal/pdeathsig"
)

// The none backend: processes run on the host, unsandboxed (seed 000,
// "Backend none"), still with the sanitised environment. guestPaths are
// translated back to their hostPath for working directories.
type noneRunner struct {
	spec Spec
	mu   sync.Mutex
	// procs are the running commands.
	procs map[*noneProc]bool
}

func launchNone(spec Spec) (runner, error) {
	return &noneRunner{spec: spec, procs: map[*noneProc]bool{}}, nil
}

// hostDir maps a guest path through the binds.
func (r *noneRunner) hostDir(g string) string {
	best, host := -1, g
	for _, b := range r.spec.BindMounts {
		if within(g, b.GuestPath) && len(b.GuestPath) > best {
			best = len(b.GuestPath)
			host = filepath.Join(b.HostPath, strings.TrimPrefix(g, b.GuestPath))
		}
	}
	return host
}

func (r *noneRunner) start(c command) (proc, error) {
	dir := c.dir
	if dir == "" {
		dir = r.spec.GuestWorkdir
	}
	if dir != "" {
		dir = r.hostDir(dir)
	}
	env := SanitizedEnv(hostEnv(), c.env)
	path, err := lookPath(c.argv[0], env, dir)
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{
		Path: path, Args: c.argv, Env: env, Dir: dir,
		Stdin: c.stdin, Stdout: c.stdout, Stderr: c.stderr,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	setPdeathsig(cmd.SysProcAttr)
	if err := pdeathsig.StartCmd(cmd); err != nil {
		code := 126
		if errors.Is(err, os.ErrNotExist) {
			code = 127
		}
		return nil, &startError{code, err.Error()}
	}
	p := &noneProc{cmd: cmd, r: r}
	r.mu.Lock()
	r.procs[p] = true
	r.mu.Unlock()
	return p, nil
}

func (r *noneRunner) freeze(ctx context.Context, procs []proc) error {
	for _, p := range procs {
		p.signal(syscall.SIGSTOP)
	}
	return nil
}

func (r *noneRunner) thaw(ctx context.Context, procs []proc) error {
	for _, p := range procs {
		p.signal(syscall.SIGCONT)
	}
	return nil
}

func (r *noneRunner) destroy(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for p := range r.procs {
		p.signal(syscall.SIGKILL)
	}
	return nil
}

func (r *noneRunner) details() map[string]any {
	return map[string]any{"workdir": r.spec.GuestWorkdir}
}

type noneProc struct {
	cmd *exec.Cmd
	r   *noneRunner
}

func (p *noneProc) pid() int { return p.cmd.Process.Pid }

// signal reaches the command's session (its process group).
func (p *noneProc) signal(sig syscall.Signal) error {
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil {
		return p.cmd.Process.Signal(sig)
	}
	return nil
}

func (p *noneProc) wait() (int, int) {
	p.cmd.Wait()
	p.r.mu.Lock()
	delete(p.r.procs, p)
	p.r.mu.Unlock()
	ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return 128 + int(ws.Signal()), int(ws.Signal())
	}
	return ws.ExitStatus(), 0
}

// lookPath finds argv0 in env's PATH (not the server's), relative to dir,
// as execvp would; a failure is a *startError with the shell's code.
func lookPath(argv0 string, env []string, dir string) (string, error) {
	p, err := execpath.Lookup(argv0, execpath.PathOf(env, defaultPath), dir, os.Stat)
	var e *execpath.Error
	if errors.As(err, &e) {
		return "", &startError{e.Code(), e.Error()}
	}
	return p, err
}
