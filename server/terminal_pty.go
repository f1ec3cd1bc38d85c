//go:build linux || darwin

package server

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/srt-go/srt/internal/pdeathsig"
	"github.com/srt-go/srt/port"
	"github.com/srt-go/srt/sandbox"
	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// ptyProc is a shell on a PTY whose master srtd holds.
//
// The master is read with poll(2) before each read(2), never by a read
// left blocking: creack/pty opens it in blocking mode, and a blocked read
// is not interrupted by Close (creack/pty #167 reverted by #177). Polling
// lets pump stop on its own once the shell has exited, after which close
// really releases the descriptor.
type ptyProc struct {
	ptmx *os.File
	// tty is the slave srtd keeps open for a native shell: the sandbox
	// relays between it and a PTY of its own. Nil for a host shell.
	tty *os.File
	// sbx is a native shell's sandbox (resize goes through it); nil for
	// a host shell.
	sbx   *sandbox.Cmd
	pidv  int
	waitf func() int
	killf func()
}

func (p *ptyProc) pid() int  { return p.pidv }
func (p *ptyProc) wait() int { return p.waitf() }
func (p *ptyProc) kill()     { p.killf() }
func (p *ptyProc) input(b []byte) error {
	_, err := p.ptmx.Write(b)
	return err
}

func (p *ptyProc) resize(cols, rows int) error {
	if err := pty.Setsize(p.ptmx, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
		return err
	}
	if p.sbx != nil {
		// Our PTY has no foreground process group to signal: the
		// sandbox's relay holds our slave as plain stdin and gives the
		// shell a PTY of its own, which is the one to resize. A backend
		// without a PTY of its own (macOS) has the shell on ours, just
		// resized.
		if err := p.sbx.Resize(uint16(rows), uint16(cols)); err != nil && !errors.Is(err, errors.ErrUnsupported) {
			return err
		}
	}
	return nil
}

func (p *ptyProc) pump(out func([]byte) error, stop <-chan struct{}) {
	fd := int(p.ptmx.Fd())
	buf := make([]byte, 32<<10)
	var deadline time.Time
	writeOK := true
	for {
		wait := 100
		select {
		case <-stop:
			// The shell has exited: take what is left, then stop after a
			// short silence (a native shell's slave stays open in srtd,
			// so no EIO announces the end) or 2s in all.
			if deadline.IsZero() {
				deadline = time.Now().Add(2 * time.Second)
			}
			wait = 50
		default:
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, wait)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		if n == 0 {
			if !deadline.IsZero() {
				return
			}
			continue
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return
		}
		m, err := unix.Read(fd, buf)
		if m > 0 && writeOK {
			// A client that stops reading stops receiving, but the PTY is
			// still drained so that the shell never blocks on a full
			// buffer while being killed.
			writeOK = out(buf[:m]) == nil
		}
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		if err != nil || m == 0 {
			return // EIO: every slave is closed
		}
	}
}

func (p *ptyProc) close() {
	p.ptmx.Close()
	if p.tty != nil {
		p.tty.Close()
	}
}

// startTerminal starts the shell on backend. ctx ending kills it.
func startTerminal(ctx context.Context, backend port.Backend, cfg TerminalConfig, cwd string, env []string, cols, rows int) (termProc, error) {
	switch backend {
	case port.BackendNone:
		return startHostShell(cfg, cwd, env, cols, rows)
	case port.BackendNative:
		return startNativeShell(ctx, cfg, cwd, env, cols, rows)
	}
	return nil, errors.New("unsupported terminal backend " + string(backend))
}

func startHostShell(cfg TerminalConfig, cwd string, env []string, cols, rows int) (termProc, error) {
	cmd := exec.Command(cfg.shell())
	cmd.Dir = cwd
	cmd.Env = env
	// Setsid + Setctty: the shell leads a session of its own with the PTY
	// as controlling terminal, so job control works and killSession can
	// find everything it started.
	attrs := &syscall.SysProcAttr{Setsid: true, Setctty: true}
	setPdeathsig(attrs)
	var ptmx *os.File
	err := pdeathsig.Start(func() (int, error) {
		var err error
		if ptmx, err = pty.StartWithAttrs(cmd, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}, attrs); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	})
	if err != nil {
		return nil, err
	}
	pid := cmd.Process.Pid
	p := &ptyProc{ptmx: ptmx, pidv: pid}
	p.waitf = func() int {
		err := cmd.Wait()
		// What the shell left behind in its session (background jobs)
		// goes with it.
		killSession(pid)
		return exitCode(cmd.ProcessState, err)
	}
	p.killf = func() {
		killSession(pid)
		cmd.Process.Kill()
	}
	return p, nil
}

func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		if err != nil {
			return 127
		}
		return 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

func startNativeShell(ctx context.Context, cfg TerminalConfig, cwd string, env []string, cols, rows int) (termProc, error) {
	s, err := terminalSettings(cfg, cwd)
	if err != nil {
		return nil, err
	}
	// NewManager fails when this host cannot sandbox (no bubblewrap, user
	// namespaces refused): the terminal fails with it, never falls back.
	m, err := sandbox.NewManager(s, sandbox.Options{})
	if err != nil {
		return nil, err
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		return nil, err
	}
	pty.Setsize(ptmx, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)})
	// Our PTY only carries bytes to the sandbox's own PTY, whose line
	// discipline does the echo and the editing: ours must be raw, or
	// every keystroke is echoed twice. (srt does the same to the terminal
	// it runs in.)
	if _, err := term.MakeRaw(int(tty.Fd())); err != nil {
		ptmx.Close()
		tty.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	cmd := m.Command(ctx, cfg.shell())
	cmd.Dir = cwd
	cmd.Env = env
	// A terminal as stdio makes the sandbox give the shell a PTY of its
	// own and relay to ours (no TIOCSTI into ours).
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	if err := cmd.Start(); err != nil {
		cancel()
		ptmx.Close()
		tty.Close()
		return nil, err
	}
	p := &ptyProc{ptmx: ptmx, tty: tty, sbx: cmd, killf: cancel}
	p.waitf = func() int {
		err := cmd.Wait()
		cancel()
		var ee *sandbox.ExitError
		switch {
		case err == nil:
			return 0
		case errors.As(err, &ee):
			return ee.Code
		}
		return 125
	}
	return p, nil
}
