//go:build linux

package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/srt-go/srt/microvm"
	"github.com/srt-go/srt/port"
)

// A microvm terminal (issue 7) is a shell on a PTY of a fresh VM, one VM
// per terminal, booted by the port (port.Runtime.LaunchMicroVM) with the
// same shares, protected paths, creation-time rules in the guest and
// egress lists as a microvm session. The VM is destroyed when the shell
// exits, when the terminal is killed (DELETE, the client disconnecting,
// the attach timeout) and when srtd closes.
//
// The terminal profile (seed 000) makes $HOME and the workdir writable
// and refuses reads of the secret directories (TerminalDenyRead). The
// guest cannot hide a path inside a share yet, so $HOME is not shared:
// only the session workdir is, at the same path; a workdir that holds a
// secret directory (such as $HOME itself) or lies inside one is refused,
// and so is one that holds srtd's token file.
//
// The workdir is shared writable under the creation-time name rules,
// enforced in the guest (issue 20): the port passes the terminal's view
// as microvm.Config.Names, so the guest runs every process, the shell
// and all it starts, under the native backend's supervisor
// (sandbox/linux/supervisor), and a VM shell cannot create a new nested
// repository's .git/hooks/pre-commit, a .bashrc or .vscode/tasks.json at
// any depth (a writable share without those rules let it, and the host's
// next git commit ran the hook). A shell whose rules cannot be set up in
// the guest does not start. The response's details say so
// (workdirShare).

// microVMPort is the port's VM launcher for terminals (port.Runtime).
type microVMPort interface {
	LaunchMicroVM(ctx context.Context, spec port.Spec, egress *port.EgressLists) (*port.MicroVM, error)
}

// guestEnvSkip are variables of the host's sanitised environment that
// describe the host and would be wrong in the guest: the guest's own
// defaults (PATH with its tools, HOME) are kept.
var guestEnvSkip = map[string]bool{"PATH": true, "HOME": true, "SHELL": true, "USER": true, "LOGNAME": true}

func (s *Server) startMicroVMTerminal(id, cwd string, env []string, cols, rows int) (termProc, map[string]any, error) {
	mp, ok := s.cfg.Port.(microVMPort)
	if !ok {
		return nil, nil, fmt.Errorf("%w: microvm: this port cannot boot a VM for a terminal", port.ErrBackendUnavailable)
	}
	// While the microvm probe runs, LaunchMicroVM waits for its verdict.
	if pr := s.cfg.Port.Probe(); !pr.MicroVMAvailable && pr.MicroVMState != port.MicroVMProbing {
		return nil, nil, fmt.Errorf("%w: microvm requested, but this host cannot start a VM (%s); not falling back", port.ErrBackendUnavailable, pr.MicroVMNote)
	}
	home := s.cfg.Terminal.home()
	if err := checkMicroVMWorkdir(home, cwd); err != nil {
		return nil, nil, err
	}
	spec := port.Spec{
		SessionID:      "term-" + id,
		WorkspaceID:    "terminal",
		BindMounts:     []port.BindMount{{HostPath: cwd, GuestPath: cwd}},
		NetworkEnabled: true,
		GuestWorkdir:   cwd,
		Mode:           port.ModeChat,
	}
	// The native terminal hides srtd's token file (HiddenFiles); the
	// guest cannot hide a file inside a share, so a workdir that holds it
	// is refused, as a session's bind is (exposesToken).
	if _, ok := exposesToken(s.cfg.TokenFile, spec); !ok {
		return nil, nil, &cwdError{fmt.Sprintf("cwd %s: the microvm terminal shares the workdir into the VM, and it holds srtd's token file (%s), which the guest cannot hide; use a workdir that does not contain it", cwd, s.cfg.TokenFile)}
	}
	// A microvm terminal's network is its allow-list (terminalNetwork:
	// baseline only): the port's lists unless the operator configured
	// others, srtd's own addresses denied either way.
	var egress *port.EgressLists
	if s.cfg.Terminal.AllowedDomains != nil || s.cfg.Terminal.DeniedDomains != nil {
		eg := port.EgressLists{Allowed: s.cfg.Terminal.AllowedDomains, Denied: s.cfg.Terminal.DeniedDomains}
		if eg.Allowed == nil {
			eg.Allowed = DefaultTerminalAllowedDomains()
		}
		if eg.Denied == nil {
			eg.Denied = DefaultTerminalDeniedDomains()
		}
		eg.Denied = append(slices.Clone(eg.Denied), s.cfg.Terminal.SelfDeny...)
		egress = &eg
	}
	m, err := mp.LaunchMicroVM(s.stop, spec, egress)
	if err != nil {
		return nil, nil, err
	}
	var genv []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !guestEnvSkip[k] {
			genv = append(genv, kv)
		}
	}
	genv = append(genv, "SHELL=/bin/sh")
	p := &vmTermProc{m: m, out: newOutBuf()}
	inR, inW := io.Pipe()
	p.in = inW
	proc, err := m.VM().Exec(context.Background(), microvm.ExecRequest{
		Argv: []string{"/bin/sh", "-l"}, Env: genv, Dir: cwd,
		Stdin: inR, Stdout: p.out, TTY: &microvm.TTYSize{Cols: uint16(cols), Rows: uint16(rows)},
	})
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("microvm: start the shell: %w", err)
	}
	p.p = proc
	go func() {
		<-proc.Done()
		// Input after the exit fails instead of blocking.
		inR.CloseWithError(errors.New("the shell has exited"))
		p.out.finish()
	}()
	// srtd closing kills the shell and its VM.
	stop := context.AfterFunc(s.stop, p.kill)
	p.stopAfter = stop

	details := m.Details()
	details["home"] = "not shared: the microvm guest cannot hide " + strings.Join(TerminalDenyRead, ", ") +
		" inside a share, so of the terminal profile's writable $HOME and workdir only the workdir is shared"
	details["workdirShare"] = "writable, under the creation-time name rules in the guest (srt's supervisor: protected names such as .bashrc, .vscode and new repositories' hooks are refused at any depth)"
	details["shell"] = "/bin/sh (the host's, from its system directories shown read-only)"
	return p, details, nil
}

// checkMicroVMWorkdir refuses a workdir whose share would show a secret
// directory of the terminal profile (the workdir holds it, or lies inside
// it), in its literal and its symlink-resolved spelling.
func checkMicroVMWorkdir(home, cwd string) error {
	homes := []string{filepath.Clean(home)}
	if r, err := filepath.EvalSymlinks(home); err == nil && r != homes[0] {
		homes = append(homes, r)
	}
	cwds := []string{filepath.Clean(cwd)}
	if r, err := filepath.EvalSymlinks(cwd); err == nil && r != cwds[0] {
		cwds = append(cwds, r)
	}
	for _, h := range homes {
		for _, d := range TerminalDenyRead {
			secret := filepath.Join(h, d)
			for _, c := range cwds {
				if pathWithin(secret, c) || pathWithin(c, secret) {
					return &cwdError{fmt.Sprintf("cwd %s: the microvm terminal shares the workdir into the VM, and the guest cannot hide %s inside a share (the terminal profile refuses reading it); use a workdir that does not contain it", cwd, secret)}
				}
			}
		}
	}
	return nil
}

// pathWithin reports whether p is root or below it.
func pathWithin(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}

// vmTermProc is a shell on a PTY in a VM: input through a pipe to the
// exec's stdin, output into an outBuf that pump drains.
type vmTermProc struct {
	m         *port.MicroVM
	p         *microvm.Process
	in        *io.PipeWriter
	out       *outBuf
	stopAfter func() bool
	killOnce  sync.Once
}

func (p *vmTermProc) pid() int { return 0 } // a guest pid means nothing on the host

// wait waits for the shell, then destroys the VM: the terminal ends with
// its shell, and so does whatever it left running.
func (p *vmTermProc) wait() int {
	code, err := p.p.Wait()
	p.destroy()
	if err != nil {
		// The VM went away (killed, or QEMU died): the status is unknown.
		return 128 + 9
	}
	return code
}

// kill destroys the VM, and with it the shell and everything it started;
// the output buffer stops holding back the guest.
func (p *vmTermProc) kill() {
	p.killOnce.Do(func() {
		p.out.finish()
		p.p.Kill()
		p.destroy()
	})
}

func (p *vmTermProc) destroy() {
	p.stopAfter()
	p.m.Close()
	p.in.Close()
}

func (p *vmTermProc) resize(cols, rows int) error {
	return p.p.Resize(microvm.TTYSize{Cols: uint16(cols), Rows: uint16(rows)})
}

func (p *vmTermProc) input(b []byte) error {
	_, err := p.in.Write(b)
	return err
}

func (p *vmTermProc) pump(out func([]byte) error, stop <-chan struct{}) {
	writeOK := true
	for {
		b, more := p.out.next(stop)
		if len(b) > 0 && writeOK {
			writeOK = out(b) == nil
		}
		if !more {
			return
		}
	}
}

func (p *vmTermProc) close() { p.destroy() }

// outBuf holds the guest's output until pump sends it. It is bounded:
// a full buffer makes the guest wait (the exec channel's flow control),
// until finish, after which writes are dropped.
type outBuf struct {
	mu       sync.Mutex
	b        []byte
	finished bool
	ready    chan struct{} // a token when b or finished changed
	room     chan struct{} // a token when b was drained
}

const outBufMax = 1 << 20

func newOutBuf() *outBuf {
	return &outBuf{ready: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (o *outBuf) Write(b []byte) (int, error) {
	for {
		o.mu.Lock()
		if o.finished && len(o.b) >= outBufMax {
			o.mu.Unlock()
			return len(b), nil // nobody will read it
		}
		if len(o.b) < outBufMax {
			o.b = append(o.b, b...)
			o.mu.Unlock()
			notify(o.ready)
			return len(b), nil
		}
		o.mu.Unlock()
		<-o.room
	}
}

// finish says no more output will be waited for: the shell has exited or
// is being killed.
func (o *outBuf) finish() {
	o.mu.Lock()
	o.finished = true
	o.mu.Unlock()
	notify(o.ready)
	notify(o.room)
}

// next returns the buffered output, and false once nothing more will
// come: finished and drained, or stop closed and drained.
func (o *outBuf) next(stop <-chan struct{}) ([]byte, bool) {
	for {
		o.mu.Lock()
		b := o.b
		o.b = nil
		fin := o.finished
		o.mu.Unlock()
		if len(b) > 0 {
			notify(o.room)
			return b, true
		}
		if fin {
			return nil, false
		}
		select {
		case <-o.ready:
		case <-stop:
			// Drain what arrived meanwhile, then stop.
			o.mu.Lock()
			b, o.b = o.b, nil
			o.mu.Unlock()
			notify(o.room)
			return b, false
		}
	}
}
