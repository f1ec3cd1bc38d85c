package linux

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/srt-go/srt/internal/envlist"
	"github.com/srt-go/srt/internal/pdeathsig"
	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/proxy"
	"github.com/srt-go/srt/sandbox/linux/supervisor"
	"github.com/srt-go/srt/sandbox/linux/wire"
	"github.com/srt-go/srt/seccomp"
	"golang.org/x/sys/unix"
)

// This file runs in srt: it plans and starts the weaker sandbox, whose
// first process (the Landlock stage, sandbox/linux/inside) restricts
// itself and execs the command.
//
// The weaker sandbox (settings: enableWeakerNestedSandbox) is for hosts
// where user namespaces are refused (unprivileged containers, kernels with
// user.max_user_namespaces = 0): no bubblewrap, no namespaces, but still
// every restriction the kernel offers without privileges — Landlock for the
// filesystem, TCP ports and IPC scopes, seccomp for the rest, no new
// privileges, no capabilities — and an exact list of what is missing,
// printed before the command runs. It never runs silently weaker: without
// Landlock it refuses.

// LandlockABI returns the kernel's Landlock ABI version, or an error when
// Landlock is absent.
func LandlockABI() (int, error) { return landlockABI() }

// landlockPlan translates the policy into Landlock rules. Landlock only
// grants, hierarchically, so "everything but X" becomes the siblings of X
// along its path; and a directory that holds a protected name cannot be
// given the right to create or remove entries (that right covers the
// protected name too), only its subdirectories and existing files can.
// missing lists what this costs, for the user.
func landlockPlan(p *policy.Policy, tmpdir string) (spec wire.LandlockSpec, missing []string) {
	b := &llBuilder{p: p}
	b.read("/")
	if !p.FilesystemDisabled {
		for _, w := range p.AllowWrite {
			if p.Writable(w.Resolved) {
				b.write(w.Resolved)
			}
		}
	} else {
		b.spec.WriteDirs = append(b.spec.WriteDirs, "/")
	}
	b.spec.WriteDirs = append(b.spec.WriteDirs, tmpdir)
	b.spec.Devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts", "/dev/random", "/dev/urandom"}
	for _, d := range b.constrained {
		missing = append(missing, fmt.Sprintf("new files cannot be created directly in %s (it holds a protected or denied name; its subdirectories are writable)", d))
	}
	return b.spec, missing
}

type llBuilder struct {
	p           *policy.Policy
	spec        wire.LandlockSpec
	constrained []string
}

func anyBelow(list []policy.Path, path string) bool {
	for _, e := range list {
		if e.Resolved != path && policy.Within(e.Resolved, path) {
			return true
		}
	}
	return false
}

func (b *llBuilder) read(path string) {
	p := b.p
	if !p.Readable(path) {
		for _, a := range p.AllowRead {
			if a.Resolved != path && policy.Within(a.Resolved, path) && p.Readable(a.Resolved) && a.Kind != policy.Missing {
				b.read(a.Resolved)
			}
		}
		return
	}
	kind, err := lstatKind(path)
	if err != nil {
		return
	}
	if kind != policy.Dir {
		b.spec.ReadFiles = append(b.spec.ReadFiles, path)
		return
	}
	if !anyBelow(p.DenyRead, path) {
		b.spec.ReadDirs = append(b.spec.ReadDirs, path)
		return
	}
	b.spec.ListDirs = append(b.spec.ListDirs, path)
	ents, err := os.ReadDir(path)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.Type()&os.ModeSymlink != 0 {
			continue // reached through its target
		}
		b.read(filepath.Join(path, e.Name()))
	}
}

func (b *llBuilder) write(path string) {
	p := b.p
	if !p.Writable(path) {
		return
	}
	kind, err := lstatKind(path)
	if err != nil {
		return
	}
	if kind != policy.Dir {
		b.spec.WriteFiles = append(b.spec.WriteFiles, path)
		return
	}
	// Landlock's write rights include reading, so a write root with a
	// read deny below it is split too (found by an adversarial review).
	if !anyBelow(p.DenyWrite, path) && !anyBelow(p.DenyRead, path) {
		b.spec.WriteDirs = append(b.spec.WriteDirs, path)
		return
	}
	b.constrained = append(b.constrained, path)
	ents, err := os.ReadDir(path)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.Type()&os.ModeSymlink != 0 {
			continue
		}
		b.write(filepath.Join(path, e.Name()))
	}
}

// landlockMissing lists the guarantees of the full sandbox that the weaker
// one lacks on this kernel.
func landlockMissing(abi int) []string {
	m := []string{
		"no PID namespace: the command sees the host's processes (Landlock still refuses ptrace and signals to them)",
		"no mount namespace: a denied directory is unreadable (EACCES) rather than empty, and names inside it can be listed",
		"processes the command leaves behind may outlive srt if srt is killed with SIGKILL",
		"TCP connections are limited to the proxies' ports, but on any address; the command cannot listen on TCP ports",
		"the proxies listen on the host's loopback, where other local processes can reach them",
		"file metadata outside the write roots can still change (Landlock does not cover it): permissions, timestamps and extended attributes; setting setuid/setgid bits and changing ownership are refused everywhere",
	}
	if abi < 10 {
		m = append(m, fmt.Sprintf("UDP (DNS included) is not restricted: Landlock ABI %d < 10", abi))
	}
	if abi < 6 {
		m = append(m, fmt.Sprintf("abstract unix sockets and signals are not scoped: Landlock ABI %d < 6", abi))
	}
	if abi < 4 {
		m = append(m, fmt.Sprintf("TCP is not restricted at all: Landlock ABI %d < 4", abi))
	}
	return m
}

// landlockProcess is a running weaker sandbox.
type landlockProcess struct {
	cmd    *exec.Cmd
	srv    *proxy.Server
	notify *supervisor.Supervisor // nil without Config.OnSandboxViolation
	cancel context.CancelFunc
	term   *terminal
	tmpdir string
}

// StartLandlock runs cfg.Argv in the weaker sandbox. It prints the missing
// guarantees to warn (srt's stderr) before the command starts. Of
// Config's fields it ignores BwrapPath and Agent, and records no
// filesystem refusals (ObserveFilesystem), which it lists as missing.
func StartLandlock(ctx context.Context, cfg Config, warn io.Writer) (*landlockProcess, error) {
	if err := checkDispatched(); err != nil {
		return nil, err
	}
	if cfg.Policy != nil {
		if _, notice, err := CreationRules(cfg.Policy, true); err != nil {
			return nil, &SetupError{err}
		} else if err := cfg.Policy.LinkedDeniesError(); err != nil {
			return nil, &SetupError{err}
		} else if notice != "" {
			fmt.Fprintf(warn, "srt: %s\n", notice)
		}
	}
	abi, err := landlockABI()
	if err != nil || abi < 1 {
		return nil, setupErr("enableWeakerNestedSandbox needs Landlock, and this kernel has none (%v); refusing to run without isolation", err)
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	stateDir, err := StateDir()
	if err != nil {
		return nil, &SetupError{err}
	}
	tmpdir, err := os.MkdirTemp(stateDir, "weak-tmp-")
	if err != nil {
		return nil, setupErr("TMPDIR: %w", err)
	}
	lp := &landlockProcess{tmpdir: tmpdir}
	ok := false
	defer func() {
		if !ok {
			lp.cleanup()
		}
	}()
	spec, missing := landlockPlan(cfg.Policy, tmpdir)
	missing = append(landlockMissing(abi), missing...)
	if cfg.ObserveFilesystem && cfg.OnSandboxViolation != nil {
		missing = append(missing, "refused filesystem calls are not recorded as violations (only the proxies' and the seccomp filter's refusals are)")
	}
	fmt.Fprintf(warn, "srt: user namespaces are not available, so enableWeakerNestedSandbox runs the command under Landlock ABI %d and seccomp instead. Missing guarantees:\n", abi)
	for _, m := range missing {
		fmt.Fprintf(warn, "srt:   - %s\n", m)
	}

	if cfg.Policy.Network.TLS != nil {
		return nil, setupErr("network.tlsTerminate is not supported by the Landlock sandbox (enableWeakerNestedSandbox) yet")
	}
	if f := cfg.Policy.CredentialFiles; len(f) > 0 {
		// Landlock cannot show a masked copy (no mount namespace), and a
		// read-deny of a file it enforces by the file's directory rules,
		// which a run could change the shape of between runs.
		return nil, setupErr("credentials.files (%s) is not supported by the Landlock sandbox (enableWeakerNestedSandbox): it cannot mask or hide a single file; refusing to run", f[0])
	}
	// The proxies listen on the host's loopback: there is no network
	// namespace to hand listeners out of.
	n, _, err := newNetwork(cfg.Policy.Network, cfg.OnViolation, lg)
	if err != nil {
		return nil, &SetupError{err}
	}
	n.conn.Close()
	lp.srv = n.srv
	pctx, cancel := context.WithCancel(context.Background())
	lp.cancel = cancel
	var ports [2]int
	for i, name := range []string{"http", "socks5"} {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			return nil, setupErr("proxy listener: %w", err)
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		spec.TCPPorts = append(spec.TCPPorts, uint16(ports[i]))
		go n.serveOne(pctx, namedListener{name, ln})
	}
	spec.Argv = cfg.Argv
	spec.Seccomp = seccomp.Options{
		AllowUnixSockets:          cfg.Policy.Network.AllowAllUnixSockets,
		AllowNestedUserNamespaces: cfg.Policy.Process.AllowNestedUserNamespaces,
		RefuseGroupWrite:          !privateGroup(),
	}
	spec.Ctty = -1

	env := cfg.Env
	if env == nil {
		env = os.Environ()
	}
	env = envlist.Set(env, "SANDBOX_RUNTIME", "1")
	env = envlist.Set(env, "TMPDIR", tmpdir)
	var parent *proxy.Parent
	if cfg.Policy != nil {
		parent = cfg.Policy.Network.Parent
	}
	env = proxy.ScrubEnv(env, parent)
	for _, kv := range proxy.Env(ports[0], ports[1]) {
		k, v, _ := cutKV(kv)
		env = envlist.Set(env, k, v)
	}
	env = cfg.Policy.Network.Credentials.Environ(env)

	stdin, stdout, stderr := cfg.Stdin, cfg.Stdout, cfg.Stderr
	if lp.term, err = newTerminal(&stdin, &stdout, &stderr); err != nil {
		return nil, &SetupError{err}
	}
	if lp.term != nil {
		spec.Ctty = lp.term.ctty
	}

	// Descriptors: the user's pass-through ones keep their numbers, srt's
	// own come after them and are closed here once the stage has them.
	extra := passThrough(cfg.KeepFDs)
	spec.KeepFDs = cfg.KeepFDs
	var own []*os.File
	defer func() {
		for _, f := range own {
			f.Close()
		}
	}()
	addFD := func(f *os.File) int {
		extra, own = append(extra, f), append(own, f)
		return 3 + len(extra) - 1
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, setupErr("pipe: %w", err)
	}
	specFD := addFD(specR)
	if cfg.OnSandboxViolation != nil {
		// The filter's refusals go to srt, which answers each with the
		// deny-only filter's errno and records it; without srt the kernel
		// fails them with ENOSYS (fail closed, sandbox/linux/supervisor).
		spec.Seccomp.Notify = true
		n, end, err := supervisor.New(supervisor.Config{Seccomp: spec.Seccomp, Policy: cfg.Policy, TmpDir: tmpdir, OnViolation: cfg.OnSandboxViolation, Logger: lg})
		if err != nil {
			specW.Close()
			return nil, &SetupError{err}
		}
		lp.notify = n
		spec.NotifyFD = addFD(end)
	}
	b, _ := json.Marshal(spec)
	go func() { specW.Write(b); specW.Close() }()
	cmd := exec.Command("/proc/self/exe", wire.LandlockStageArg, strconv.Itoa(specFD))
	cmd.Env = env
	cmd.Dir = cfg.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: unix.SIGKILL}
	// srt reaps and ends what the command leaves behind.
	unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	if err := pdeathsig.StartCmd(cmd); err != nil {
		return nil, setupErr("starting the command: %w", err)
	}
	if lp.notify != nil {
		lp.notify.Serve()
	}
	if lp.term != nil {
		lp.term.tty.Close()
		lp.term.start()
	}
	lp.cmd = cmd
	if ctx.Done() != nil {
		go func() { <-ctx.Done(); cmd.Process.Kill() }()
	}
	ok = true
	return lp, nil
}

// Signal forwards sig to the command.
func (lp *landlockProcess) Signal(sig os.Signal) error { return lp.cmd.Process.Signal(sig) }

// Resize sets the size of the command's terminal, as Process.Resize.
func (lp *landlockProcess) Resize(rows, cols uint16) error {
	if lp.term == nil {
		return errNoTerminal
	}
	return lp.term.resize(rows, cols)
}

// Wait waits for the command, ends what it left running, and cleans up.
func (lp *landlockProcess) Wait() (int, error) {
	err := lp.cmd.Wait()
	lp.killOrphans()
	if lp.term != nil {
		lp.term.close()
	}
	lp.cleanup()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return wire.ExitSignalShift + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	return 0, setupErr("waiting for the command: %w", err)
}

// killOrphans kills and reaps every process that was reparented to srt
// (the child subreaper) after the command exited.
func (lp *landlockProcess) killOrphans() {
	for range 50 {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/children", os.Getpid()))
		pids := splitInts(string(b))
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			unix.Kill(pid, unix.SIGKILL)
			var ws unix.WaitStatus
			unix.Wait4(pid, &ws, 0, nil)
		}
	}
}

func splitInts(s string) []int {
	var out []int
	n, in := 0, false
	for _, c := range s + " " {
		if c >= '0' && c <= '9' {
			n, in = n*10+int(c-'0'), true
		} else if in {
			out, n, in = append(out, n), 0, false
		}
	}
	return out
}

// cleanup ends the proxies and, every process of the sandbox being gone,
// the seccomp listener (after it has reported what is left).
func (lp *landlockProcess) cleanup() {
	if lp.notify != nil {
		lp.notify.Close()
	}
	if lp.cancel != nil {
		lp.cancel()
	}
	if lp.srv != nil {
		lp.srv.Close()
	}
	os.RemoveAll(lp.tmpdir)
}
