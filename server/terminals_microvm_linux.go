//go:build linux

package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/srt-go/srt/microvm"
	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/port"
)

// A microvm terminal (issue 7) is a shell on a PTY of a fresh VM, one VM
// per terminal, booted by the port (port.Runtime.LaunchMicroVM) with the
// same shares, protected paths, creation-time rules in the guest and
// egress lists as a microvm session. The VM is destroyed when the shell
// exits, when the terminal is killed (DELETE, the client disconnecting,
// the attach timeout) and when srtd closes.
//
// It has the native terminal's profile (seed 000, "Terminal hébergé par
// le serveur"; terminalSettings): $HOME and the session workdir are
// shared writable at their own paths (the workdir alone when $HOME holds
// it), the secret directories and srtd's token file
// (TerminalConfig.denyRead) are hidden host-side, in QEMU's view
// (port.MicroVMProfile.DenyRead, microvm.Config.DenyRead: the guest
// kernel has no say), and srtd's token directory (ReadOnlyDirs) is a
// protected path, read-only in QEMU's view and to the guest's rules. A
// secret that cannot be hidden (a symbolic link on the way to it) fails
// the launch, never a terminal that shows it.
//
// The shares are writable under the creation-time name rules, enforced
// in the guest (issue 20): the port passes the terminal's view as
// microvm.Config.Names, so the guest runs every process, the shell and
// all it starts, under the native backend's supervisor
// (sandbox/linux/supervisor), and a VM shell cannot create a .bashrc, a
// new nested repository's .git/hooks/pre-commit or .vscode/tasks.json at
// any depth (a writable share without those rules let it, and the host's
// next git commit ran the hook). A guest that cannot run the rules fails
// the launch (port.ErrUnenforceable). The response's details say so
// (home, workdirShare, shell).

// microVMPort is the port's VM launcher for terminals (port.Runtime).
type microVMPort interface {
	LaunchMicroVM(ctx context.Context, spec port.Spec, prof port.MicroVMProfile) (*port.MicroVM, error)
}

// guestEnvSkip are variables of the host's sanitised environment that
// describe the host and would be wrong in the guest: the guest's own
// defaults (PATH with its tools) are kept, and SHELL is the guest's
// (vmShell). HOME is the host's: it is shared at its own path.
var guestEnvSkip = map[string]bool{"PATH": true, "SHELL": true, "USER": true, "LOGNAME": true}

func (s *Server) startMicroVMTerminal(id, cwd string, env []string, cols, rows int) (termProc, map[string]any, error) {
	mp, ok := s.cfg.Port.(microVMPort)
	if !ok {
		return nil, nil, fmt.Errorf("%w: microvm: this port cannot boot a VM for a terminal", port.ErrBackendUnavailable)
	}
	// While the microvm probe runs, LaunchMicroVM waits for its verdict.
	if pr := s.cfg.Port.Probe(); !pr.MicroVMAvailable && pr.MicroVMState != port.MicroVMProbing {
		return nil, nil, fmt.Errorf("%w: microvm requested, but this host cannot start a VM (%s); not falling back", port.ErrBackendUnavailable, pr.MicroVMNote)
	}
	home := filepath.Clean(s.cfg.Terminal.home())
	cwd = filepath.Clean(cwd)
	roots := terminalRoots(home, cwd)
	spec := port.Spec{
		SessionID:      "term-" + id,
		WorkspaceID:    "terminal",
		NetworkEnabled: true,
		GuestWorkdir:   cwd,
		Mode:           port.ModeChat,
	}
	for _, r := range roots {
		spec.BindMounts = append(spec.BindMounts, port.BindMount{HostPath: r, GuestPath: r})
	}
	// The native terminal's write-denies (srtd's token directory), where
	// a share shows them (elsewhere the guest cannot reach them).
	for _, d := range s.cfg.Terminal.ReadOnlyDirs {
		if slices.ContainsFunc(roots, func(r string) bool { return shows(r, d) }) {
			spec.ProtectedPaths = append(spec.ProtectedPaths, d)
		}
	}
	prof := port.MicroVMProfile{DenyRead: s.cfg.Terminal.denyRead()}
	// A microvm terminal's network is its allow-list (terminalNetwork:
	// baseline only): the port's lists unless the operator configured
	// others, srtd's own addresses denied either way.
	if s.cfg.Terminal.AllowedDomains != nil || s.cfg.Terminal.DeniedDomains != nil {
		eg := port.EgressLists{Allowed: s.cfg.Terminal.AllowedDomains, Denied: s.cfg.Terminal.DeniedDomains}
		if eg.Allowed == nil {
			eg.Allowed = DefaultTerminalAllowedDomains()
		}
		if eg.Denied == nil {
			eg.Denied = DefaultTerminalDeniedDomains()
		}
		eg.Denied = append(slices.Clone(eg.Denied), s.cfg.Terminal.SelfDeny...)
		prof.Egress = &eg
	}
	shell, shellWhy := vmShell(s.cfg.Terminal, roots)
	m, err := mp.LaunchMicroVM(s.stop, spec, prof)
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
	genv = append(genv, "SHELL="+shell)
	p := &vmTermProc{m: m, out: newOutBuf()}
	inR, inW := io.Pipe()
	p.in = inW
	proc, err := m.VM().Exec(context.Background(), microvm.ExecRequest{
		Argv: []string{shell, "-l"}, Env: genv, Dir: cwd,
		Stdin: inR, Stdout: p.out, TTY: &microvm.TTYSize{Cols: uint16(cols), Rows: uint16(rows)},
	})
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("microvm: start the shell %s: %w", shell, err)
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
	details["home"] = "shared writable at " + home + ", under the creation-time name rules in the guest; hidden host-side (QEMU's view): " +
		strings.Join(prof.DenyRead, ", ")
	if len(spec.ProtectedPaths) > 0 {
		details["home"] = details["home"].(string) + "; read-only: " + strings.Join(spec.ProtectedPaths, ", ")
	}
	details["workdirShare"] = "writable, under the creation-time name rules in the guest (srt's supervisor: protected names such as .bashrc, .vscode and new repositories' hooks are refused at any depth)"
	details["shell"] = shell + " (" + shellWhy + ")"
	return p, details, nil
}

// terminalRoots are the directories a microvm terminal shares: $HOME and
// the workdir, the workdir alone when it holds $HOME and $HOME alone when
// it holds the workdir (literal paths: each is shared at its own path, so
// the guest finds the workdir where the host names it).
func terminalRoots(home, cwd string) []string {
	switch {
	case pathWithin(cwd, home):
		return []string{home}
	case pathWithin(home, cwd):
		return []string{cwd}
	}
	return []string{home, cwd}
}

// shows reports whether a share of root shows host path p, in its literal
// or its symlink-resolved spelling.
func shows(root, p string) bool {
	if pathWithin(filepath.Clean(p), root) {
		return true
	}
	rr, err1 := filepath.EvalSymlinks(root)
	rp, err2 := filepath.EvalSymlinks(p)
	return err1 == nil && err2 == nil && pathWithin(rp, rr)
}

// pathWithin reports whether p is root or below it.
func pathWithin(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}

// vmShell is the program a microvm terminal runs, and why: the
// operator's TerminalConfig.Shell, else the login shell of srtd's user in
// the host's /etc/passwd (the guest sees the host's userland read-only,
// policy.SystemDirs), else /bin/sh. A shell the guest would not see (not
// in a system directory nor a share) or that is not an executable file
// falls back to /bin/sh, and why says so.
func vmShell(cfg TerminalConfig, roots []string) (shell, why string) {
	cand, from := cfg.Shell, "the configured terminal shell"
	if cand == "" {
		uid := os.Getuid()
		cand, from = passwdShell("/etc/passwd", uid), fmt.Sprintf("the login shell of uid %d in the host's /etc/passwd", uid)
	}
	if cand == "" {
		return "/bin/sh", "no login shell in the host's /etc/passwd"
	}
	visible := slices.ContainsFunc(policy.SystemDirs(policy.DefaultSystemDirs), func(d string) bool { return shows(d, cand) }) ||
		slices.ContainsFunc(roots, func(r string) bool { return shows(r, cand) })
	fi, err := os.Stat(cand)
	switch {
	case !filepath.IsAbs(cand):
		return "/bin/sh", fmt.Sprintf("%s %q is not an absolute path", from, cand)
	case err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0:
		return "/bin/sh", fmt.Sprintf("%s %s is not an executable file", from, cand)
	case !visible:
		return "/bin/sh", fmt.Sprintf("%s %s is outside what the guest sees of the host", from, cand)
	}
	return cand, from
}

// passwdShell returns the shell field of uid's entry in the passwd file
// at path (passwd(5): name:password:UID:GID:GECOS:home:shell), or "".
func passwdShell(path string, uid int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Split(l, ":")
		if len(f) == 7 && f[2] == strconv.Itoa(uid) {
			return strings.TrimSpace(f[6])
		}
	}
	return ""
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
