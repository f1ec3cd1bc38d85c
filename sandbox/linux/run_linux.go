package linux

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/srt-go/srt/internal/cgroup"
	"github.com/srt-go/srt/internal/envlist"
	"github.com/srt-go/srt/internal/nofollow"
	"github.com/srt-go/srt/internal/pdeathsig"
	"github.com/srt-go/srt/netrule"
	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/sandbox/linux/fsplan"
	"github.com/srt-go/srt/sandbox/linux/guardian"
	"github.com/srt-go/srt/sandbox/linux/supervisor"
	"github.com/srt-go/srt/sandbox/linux/wire"
	"github.com/srt-go/srt/seccomp"
	"github.com/srt-go/srt/violation"
	"golang.org/x/sys/unix"
)

// Config is one command to run in a sandbox.
type Config struct {
	// Policy is the compiled policy to enforce. Required.
	Policy *policy.Policy
	// BwrapPath is bubblewrap's absolute path, from Probe.
	BwrapPath string
	// Argv is the command and its arguments, passed as they are (no shell).
	// Argv[0] is looked up in PATH inside the sandbox.
	Argv []string
	// Env is the command's environment; SANDBOX_RUNTIME=1 and TMPDIR are
	// added. Nil means os.Environ().
	Env []string
	// Dir is the working directory. Empty means the current one.
	Dir string
	// Stdin, Stdout and Stderr are as in os/exec.Cmd. When one of them is a
	// terminal, the command gets a terminal of its own that srt relays (see
	// terminal_linux.go).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// KeepFDs are descriptors above 2 of this process to pass through to
	// the command at the same numbers. They must be open.
	KeepFDs []int
	// Logger receives debug lines (the bwrap command line among them).
	// Nil discards them.
	Logger *slog.Logger
	// OnViolation is called for each refused network connection; it must
	// not block. Nil ignores them.
	OnViolation func(violation.Violation)
	// OnSandboxViolation is called for each system call the seccomp filter
	// refuses and, with ObserveFilesystem, each filesystem call the mounts
	// refuse (sandbox/linux/supervisor), from one goroutine; it must not block.
	// Nil means the deny-only filter and no records.
	OnSandboxViolation func(violation.Violation)
	// ObserveFilesystem records refused writes (and reads of denyRead
	// paths) through OnSandboxViolation. It costs one round trip to srt
	// per write-intent call (per open, when denyRead is not empty); see
	// BENCHMARKS.md. False records none.
	ObserveFilesystem bool
	// Agent makes PID 1 run no command of its own: it serves exec
	// requests over Process.Agent until the sandbox is killed (a warm
	// sandbox, see StartWarm). Argv must then be empty.
	Agent bool
	// Cgroup, when set, is the memory cgroup every process of the sandbox
	// runs in, bubblewrap included from its first instruction
	// (cgroup.Group.Prepare); nil leaves them in srt's own.
	Cgroup *cgroup.Group
}

// SetupError is a failure of the sandbox itself, as opposed to the
// command's own exit status: the command did not run. The CLI exits 125.
type SetupError struct{ Err error }

func (e *SetupError) Error() string { return e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// errPlaceholderCleanup is wrapped by Wait's error when the sandbox ran
// but the guardian could not remove its placeholders from the host.
var errPlaceholderCleanup = errors.New("cleaning up placeholders")

func setupErr(format string, a ...any) error {
	return &SetupError{Err: fmt.Errorf(format, a...)}
}

// Process is a running sandbox.
type Process struct {
	cmd      *exec.Cmd
	guardian *guardian.Client
	term     *terminal
	net      *network
	notify   *supervisor.Supervisor
	names    io.Closer // the in-kernel name rules (kernelnames_linux.go), or nil
	started  *os.File  // read end of PID 1's "running" pipe
	lifeline *os.File  // write end of PID 1's lifeline; closed only by srt's exit
	// ready is closed once PID 1 has said it runs (startedOK) or bubblewrap
	// ended without it: only then can PID 1 take signals, since a PID
	// namespace's init ignores those it has no handler for yet.
	ready     chan struct{}
	startedOK bool
	initPID   chan int
	pid1      int
	agent     *os.File // our end of PID 1's exec channel (Config.Agent)
	mu        sync.Mutex
	log       *slog.Logger
	waitOnce  sync.Once
	code      int
	err       error
}

// Start runs cfg.Argv in a new sandbox and returns once bubblewrap has
// started. ctx bounds the whole run: when it is done the sandbox is killed.
// Errors are *SetupError.
func Start(ctx context.Context, cfg Config) (*Process, error) {
	if err := checkDispatched(); err != nil {
		return nil, err
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	if cfg.Policy == nil || len(cfg.Argv) == 0 && !cfg.Agent {
		return nil, setupErr("no policy or no command")
	}
	stateDir, err := StateDir()
	if err != nil {
		return nil, &SetupError{err}
	}
	create, notice, err := CreationRules(cfg.Policy, false)
	if err != nil {
		return nil, &SetupError{err}
	}
	if err := cfg.Policy.LinkedDeniesError(); err != nil && !create {
		return nil, &SetupError{err}
	}
	if notice != "" && cfg.Stderr != nil {
		fmt.Fprintf(cfg.Stderr, "srt: %s\n", notice)
	}
	tmpdir := filepath.Join(stateDir, "tmp")
	helper, _ := os.Executable()
	if h, err := filepath.EvalSymlinks(helper); err == nil {
		helper = h
	}
	plan := fsplan.Build(cfg.Policy, fsplan.Options{CreationRules: create, TmpDir: tmpdir, Helper: helper})

	p := &Process{log: lg, initPID: make(chan int, 1), ready: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			p.abort()
		}
	}()

	// Placeholders go through the guardian, so that nothing srt creates
	// on the host can outlive it. The guardian starts now and its
	// requests are sent just before bubblewrap, so its start-up overlaps
	// with ours.
	// With the creation-time rules there are no placeholders, and
	// another sandbox's that this one mounts need not be shared: should
	// their owner remove one, the name it stood for cannot be created here.
	var adopt []fsplan.Placeholder
	if !create {
		adopt = adoptCandidates(cfg.Policy, plan)
	}
	if len(plan.Placeholders) > 0 || len(adopt) > 0 {
		if p.guardian, err = startGuardian(stateDir); err != nil {
			return nil, &SetupError{err}
		}
	}

	dir := cfg.Dir
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return nil, setupErr("working directory: %w", err)
		}
	}
	env := cfg.Env
	if env == nil {
		env = os.Environ()
	}
	env = envlist.Set(env, "SANDBOX_RUNTIME", "1")
	env = envlist.Set(env, "TMPDIR", tmpdir)

	// Descriptors: the user's pass-through ones keep their numbers, srt's
	// own come after them.
	extra := passThrough(cfg.KeepFDs)
	var closeAfterStart []*os.File
	defer func() {
		for _, f := range closeAfterStart {
			f.Close()
		}
	}()
	addFD := func(f *os.File) int {
		extra = append(extra, f)
		closeAfterStart = append(closeAfterStart, f)
		return 3 + len(extra) - 1
	}

	exe, err := os.Open("/proc/self/exe")
	if err != nil {
		return nil, setupErr("opening srt's own binary: %w", err)
	}
	exeFD := addFD(exe)
	startedR, startedW, err := os.Pipe()
	if err != nil {
		return nil, setupErr("pipe: %w", err)
	}
	p.started = startedR
	startedFD := addFD(startedW)
	// The lifeline: PID 1 holds the read end, only srt the write end. When
	// srt dies, however it dies, PID 1 reads EOF and ends the sandbox — even
	// if bubblewrap was killed before it could set its child's PDEATHSIG.
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return nil, setupErr("pipe: %w", err)
	}
	p.lifeline = lifeW
	lifelineFD := addFD(lifeR)
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return nil, setupErr("pipe: %w", err)
	}
	infoFD := addFD(infoW)

	spec := wire.InitSpec{
		Argv: cfg.Argv, KeepFDs: cfg.KeepFDs, CloseFDs: []int{exeFD}, StartedFD: startedFD, Ctty: -1,
		ListenFD: -1, LifelineFD: lifelineFD,
		Seccomp: seccomp.Options{
			AllowUnixSockets:          cfg.Policy.Network.AllowAllUnixSockets,
			AllowNestedUserNamespaces: cfg.Policy.Process.AllowNestedUserNamespaces,
			// bind(2) of a unix socket creates a name no creation rule
			// sees (supervisor/bind_linux.go).
			CheckBinds:       !cfg.Policy.FilesystemDisabled,
			RefuseGroupWrite: !privateGroup(),
		},
	}
	if cfg.Agent {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return nil, setupErr("socketpair: %w", err)
		}
		p.agent = os.NewFile(uintptr(fds[0]), "agent")
		spec.AgentFD = addFD(os.NewFile(uintptr(fds[1]), "agent"))
	}
	var listenEnd *os.File
	if p.net, listenEnd, err = newNetwork(cfg.Policy.Network, cfg.OnViolation, lg); err != nil {
		return nil, &SetupError{err}
	}
	spec.ListenFD = addFD(listenEnd)
	if p.notify, p.names, err = startNotifier(cfg, create, &spec, tmpdir, plan.Mapping, addFD, lg); err != nil {
		return nil, &SetupError{err}
	}
	spec.Listeners = p.net.sandboxListeners()
	env = proxyEnv(env, plan.Helper, cfg.Policy.Network.Parent)

	stdin, stdout, stderr := cfg.Stdin, cfg.Stdout, cfg.Stderr
	if p.term, err = newTerminal(&stdin, &stdout, &stderr); err != nil {
		return nil, &SetupError{err}
	}
	if p.term != nil {
		if p.notify != nil {
			p.notify.SetTerminal(p.term.tty)
		}
		spec.Ctty = p.term.ctty
		closeAfterStart = append(closeAfterStart, p.term.tty)
	}

	// The options go through a sealed memfd (--args): no length limit, and
	// bwrap's own command line stays short. The command itself must be on
	// the command line; it holds only descriptor numbers.
	args := bwrapArgs(cfg.Policy, plan, dir, infoFD)
	if err := checkTrustShown(cfg.Policy.Network.TLS, plan, tmpdir); err != nil {
		return nil, &SetupError{err}
	}
	trust, env, err := trustFiles(cfg.Policy.Network.TLS, tmpdir, env, addFD)
	if err != nil {
		return nil, &SetupError{err}
	}
	args = append(args, trust...)
	masks, masked, err := maskedFiles(cfg.Policy, plan, addFD)
	if err != nil {
		return nil, &SetupError{err}
	}
	args = append(args, masks...)
	// Last, over everything srt set: a real value in any variable is
	// shown as its sentinel, masked and denied variables as the policy says.
	env = cfg.Policy.Network.Credentials.Environ(env)
	lg.Debug("bwrap", "options", strings.Join(args, " "))
	argsFile, err := memfile("srt-bwrap-args", []byte(strings.Join(args, "\x00")+"\x00"))
	if err != nil {
		return nil, setupErr("bwrap arguments: %w", err)
	}
	argsFD := addFD(argsFile)

	if p.guardian != nil {
		reqs := slices.Clone(plan.Placeholders)
		for _, ph := range plan.Placeholders {
			lg.Debug("placeholder", "path", ph.Path, "rule", ph.Rule)
		}
		// An empty file or directory the plan mounts may be another
		// sandbox's placeholder: share it, and should that sandbox remove
		// it in the meantime, make it again, so the mount plan still holds.
		reqs = append(reqs, adopt...)
		if err := p.guardian.Hold(reqs); err != nil {
			return nil, setupErr("cannot protect a missing path: %w", err)
		}
	}
	// Now that every source exists (placeholders included), note what
	// each mount must show; PID 1 checks it once bubblewrap is done.
	if spec.Mounts, err = mountChecks(plan); err != nil {
		return nil, &SetupError{err}
	}
	spec.Mounts = withoutMasked(spec.Mounts, masked)
	// In a sealed memfd, as bubblewrap's options: it can be longer than a
	// pipe holds (a mount check per bind) and nobody reads it before
	// bubblewrap runs.
	specJSON, _ := json.Marshal(spec)
	specFile, err := memfile("srt-init-spec", specJSON)
	if err != nil {
		return nil, setupErr("init spec: %w", err)
	}
	specFD := addFD(specFile)

	cmd := exec.Command(cfg.BwrapPath, "--args", strconv.Itoa(argsFD), "--",
		fmt.Sprintf("/proc/self/fd/%d", exeFD), wire.InitArg, strconv.Itoa(specFD))
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.ExtraFiles = extra
	// bwrap --die-with-parent ties it to us, and its PID 1 to it.
	// In a process group of its own, so that the guardian can end it,
	// child included, should srt die while bubblewrap sets up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: unix.SIGKILL, Setpgid: true}
	if cfg.Cgroup != nil {
		release, err := cfg.Cgroup.Prepare(cmd)
		if err != nil {
			infoR.Close()
			return nil, setupErr("memory cgroup: %w", err)
		}
		defer release()
	}
	p.cmd = cmd
	if err := pdeathsig.StartCmd(cmd); err != nil {
		infoR.Close()
		return nil, setupErr("starting bubblewrap: %w", err)
	}
	for _, f := range closeAfterStart {
		f.Close()
	}
	closeAfterStart = nil
	go func() {
		var b [1]byte
		n, _ := p.started.Read(b[:])
		p.started.Close()
		p.startedOK = n == 1 && b[0] == wire.StartedByte
		close(p.ready)
	}()
	p.net.serve()
	if p.notify != nil {
		p.notify.Serve()
	}
	watchPID1 := func(int) {}
	if g := p.guardian; g != nil {
		if err := g.Watch(cmd.Process.Pid); err != nil {
			infoR.Close()
			return nil, setupErr("guardian: %w", err)
		}
		// bubblewrap, killed, ends before the sandbox does: the guardian
		// must wait for PID 1 too (guardian.state.waitDead).
		watchPID1 = func(pid int) {
			if err := g.Watch(pid); err != nil {
				lg.Debug("guardian", "watch", pid, "error", err)
			}
		}
	}
	go readInfo(infoR, p.initPID, watchPID1)
	if p.term != nil {
		p.term.start()
	}
	if ctx.Done() != nil {
		go func() {
			<-ctx.Done()
			cmd.Process.Kill()
		}()
	}
	ok = true
	return p, nil
}

// SetNetworkPolicy replaces the network rules of the running sandbox; new
// connections and requests are judged by them (--control-fd).
func (p *Process) SetNetworkPolicy(pol *netrule.Policy) { p.net.SetPolicy(pol) }

// abort undoes a Start that failed half-way.
func (p *Process) abort() {
	if p.cmd != nil && p.cmd.Process != nil {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	}
	if p.term != nil {
		p.term.close()
	}
	if p.net != nil {
		p.net.close()
	}
	if p.notify != nil {
		p.notify.Close()
	}
	if p.names != nil {
		p.names.Close()
	}
	if p.guardian != nil {
		p.guardian.Finish()
	}
	if p.agent != nil {
		p.agent.Close()
	}
}

// readInfo reads bubblewrap's --info-fd JSON for the sandbox PID 1's host
// PID, which it sends on out and passes to watch, before closing out.
func readInfo(r io.ReadCloser, out chan<- int, watch func(int)) {
	defer r.Close()
	var info wire.BwrapInfo
	if err := json.NewDecoder(bufio.NewReader(r)).Decode(&info); err == nil && info.ChildPID > 0 {
		out <- info.ChildPID
		watch(info.ChildPID)
	}
	close(out)
}

// Signal forwards sig to the command, through the sandbox's PID 1.
func (p *Process) Signal(sig os.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pid1 == 0 {
		// During start-up, wait until PID 1 runs and catches signals
		// rather than fail: a signal sent to srt early must still reach
		// the command, and killing bubblewrap instead could orphan its
		// child before it has tied itself to bubblewrap with PDEATHSIG.
		<-p.ready
		if pid, ok := <-p.initPID; ok && p.startedOK {
			p.pid1 = pid
		}
	}
	if p.pid1 == 0 {
		return errors.New("the sandbox did not start")
	}
	return unix.Kill(p.pid1, sig.(syscall.Signal))
}

// Resize sets the size of the command's terminal to rows by cols
// characters (the command gets SIGWINCH), for a caller that relays a
// terminal other than its own controlling one (srtd); a resize of srt's
// controlling terminal is relayed without it. It fails when the command
// has no terminal (none of its stdio was one).
func (p *Process) Resize(rows, cols uint16) error {
	if p.term == nil {
		return errNoTerminal
	}
	return p.term.resize(rows, cols)
}

// Wait waits for the command and the sandbox's cleanup. It returns the
// command's exit status (128+N when killed by signal N) with a nil error,
// or a *SetupError when the sandbox itself failed and the command did not
// run.
func (p *Process) Wait() (int, error) {
	p.waitOnce.Do(func() {
		err := p.cmd.Wait()
		if p.term != nil {
			p.term.close()
		}
		p.net.close()
		if p.notify != nil {
			p.notify.Close() // every process is gone: report what is left
		}
		if p.names != nil {
			p.names.Close() // its refusals recorded, then unloaded
		}
		<-p.ready
		var ee *exec.ExitError
		switch {
		case err == nil:
			p.code = 0
		case errors.As(err, &ee):
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				p.code = wire.ExitSignalShift + int(ws.Signal())
			} else {
				p.code = ee.ExitCode()
			}
		default:
			p.err = setupErr("waiting for bubblewrap: %w", err)
		}
		if p.err == nil && !p.startedOK {
			p.err = setupErr("bubblewrap could not set up the sandbox (exit status %d); see its message above", p.code)
		}
		if p.guardian != nil {
			if err := p.guardian.Finish(); err != nil && p.err == nil {
				p.err = &SetupError{fmt.Errorf("%w: %w", errPlaceholderCleanup, err)}
			}
		}
	})
	return p.code, p.err
}

// bwrapArgs builds bubblewrap's options: the namespaces, then the plan's
// filesystem steps in the plan's order (fsplan.Build holds the argument
// for it), then the working directory. Namespaces: a user namespace with
// every capability dropped, and new PID, network (only lo), IPC, UTS and
// cgroup namespaces. --new-session puts the command in a session without
// the caller's terminal (no TIOCSTI into it, CVE-2017-5226); when srt runs
// in a terminal the command gets a pseudo-terminal of its own instead.
func bwrapArgs(p *policy.Policy, plan fsplan.Plan, dir string, infoFD int) []string {
	a := []string{
		"--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--die-with-parent", "--new-session", "--as-pid-1", "--cap-drop", "ALL",
		"--info-fd", strconv.Itoa(infoFD),
	}
	if !p.Process.AllowNestedUserNamespaces {
		a = append(a, "--disable-userns")
	}
	for _, op := range plan.Ops {
		a = append(a, op.Args()...)
	}
	return append(a, "--chdir", dir)
}

// adoptCandidates are the paths the plan mounts that look like
// placeholders (empty files or directories, or files holding exactly a
// placeholder's content): possibly another sandbox's, which this sandbox
// must hold too so that it is not removed under it. They are returned as
// placeholders of the kind found, to be made again should they vanish
// before bubblewrap mounts them.
func adoptCandidates(p *policy.Policy, plan fsplan.Plan) []fsplan.Placeholder {
	if p.FilesystemDisabled {
		return nil // no placeholders, nothing to share
	}
	var out []fsplan.Placeholder
	seen := map[string]bool{}
	for _, op := range plan.Ops {
		src := op.Src
		if (op.Kind != fsplan.OpROBind && op.Kind != fsplan.OpBind) || op.Runtime || src == "" || src == "/" || src == "/dev/null" || seen[src] {
			continue
		}
		seen[src] = true
		fi, err := os.Lstat(src)
		if err != nil {
			continue
		}
		content := fsplan.PlaceholderContent(filepath.Base(src))
		switch {
		case fi.IsDir() && isEmptyDir(src):
			out = append(out, fsplan.Placeholder{Path: src, Dir: true, Rule: op.Rule})
		case fi.IsDir():
			// Not empty, perhaps only because another sandbox's
			// placeholder is in it: share it too, or its owner would leave
			// it behind when it cannot remove it (and make it again should
			// it vanish, since a placeholder of ours may go in it).
			out = append(out, fsplan.Placeholder{Path: src, Dir: true, Rule: op.Rule})
		case fi.Mode().IsRegular() && fi.Size() == int64(len(content)):
			if b, err := os.ReadFile(src); err == nil && string(b) == content {
				out = append(out, fsplan.Placeholder{Path: src, Content: content, Rule: op.Rule})
			}
		}
	}
	return out
}

func isEmptyDir(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(1)
	return len(names) == 0
}

// memfile returns a sealed in-memory file holding b, positioned at 0.
func memfile(name string, b []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, err
	}
	unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// mountChecks are the checks PID 1 makes of the plan's mounts once
// bubblewrap is done (wire.MountCheck): every bind the policy asked for,
// at its destination, showing the object srt found at its source now,
// read-only where the plan binds it so. bubblewrap looks sources and
// destinations up by path, following links, while the command's write
// roots are in reach of other sandboxes running at the same time: a
// directory swapped for a link at the right moment would put a mount on
// another object or at another place. srt's own walk of each source
// follows no link, so a swapped-in link fails the start here, and one
// swapped in after fails PID 1's check.
func mountChecks(plan fsplan.Plan) ([]wire.MountCheck, error) {
	var out []wire.MountCheck
	for _, op := range plan.Ops {
		if op.Runtime || op.Dst == "/" || op.Kind != fsplan.OpBind && op.Kind != fsplan.OpROBind {
			continue
		}
		st, err := nofollow.Stat(op.Src)
		if err != nil {
			return nil, fmt.Errorf("%s (%s) changed while the sandbox was set up: %w; refusing to run", op.Src, op.Rule, err)
		}
		out = append(out, wire.MountCheck{Guest: op.Dst, Dev: uint64(st.Dev), Ino: st.Ino, ReadOnly: op.Kind == fsplan.OpROBind})
	}
	return out, nil
}
