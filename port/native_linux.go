package port

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/srt-go/srt/credential"
	"github.com/srt-go/srt/internal/cgroup"
	"github.com/srt-go/srt/netrule"
	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/sandbox"
	"github.com/srt-go/srt/sandbox/linux"
)

// nativeEnforcesNameGlobs says whether the native Linux backend can refuse
// a file-name glob write-deny (.env, *.key, *.pem) when the file is
// created: bubblewrap alone cannot (it hides or pins paths that exist,
// never a name created later; seed 000, "Linux : bubblewrap"), the
// creation-time name rules can (sandbox/linux/create_linux.go) wherever
// this kernel runs them. Where it does not, a native launch with a
// writable path fails closed while the launch policy holds such denies
// (Options.NameGlobWriteDenies).
func nativeEnforcesNameGlobs() bool { return linux.CreationRulesSupported() == nil }

// StartTimeout bounds a native launch when ctx has no deadline.
const StartTimeout = 30 * time.Second

// launchNative starts a warm bubblewrap sandbox for s (seed 000, "Backend
// natif", Linux): the sandbox sees the read-only system directories and
// the binds, each at its guestPath; chat keeps writable binds writable,
// the other modes make every bind read-only; protectedPaths and the
// mandatory denies are never writable; runnerStateDirs always are; the
// session's own proxy pair is its only egress.
func launchNative(ctx context.Context, rt *Runtime, s *session) (runner, error) {
	spec := s.spec
	egress := EgressRules(rt.baseline, spec.NetworkEnabled, spec.EgressAllowlist)
	p, err := sessionView(rt, spec, egress, s.creds, nativeEnforcesNameGlobs(), nativeNoNameGlobs)
	if err != nil {
		return nil, err
	}
	bwrap, err := linux.FindBwrap(rt.opts.BwrapPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBackendUnavailable, err)
	}
	dir := spec.GuestWorkdir
	if dir == "" {
		dir = "/"
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, StartTimeout)
		defer cancel()
	}
	// Its memory cgroup, before anything of the session runs: bubblewrap
	// starts in it (linux.Config.Cgroup), so does every process it forks.
	cg, memDetail, err := rt.mem.sessionCgroup(spec)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	w, err := sandbox.StartWarm(ctx, p, sandbox.WarmOptions{
		BwrapPath: bwrap,
		// The shown values (sentinels) of masked credentials, then the
		// Set over the whole list: a real value never reaches PID 1.
		Env:    s.creds.Environ(SanitizedEnv(hostEnv(), s.credEnv)),
		Dir:    dir,
		Logger: rt.log.With("session", spec.SessionID),
		// Every refusal, filesystem and system calls as well as network
		// (seed 000, "Événements du bac à sable"): an agent server shows
		// them on the exec's stream, so the observation's round trip per
		// write-intent call is paid (BENCHMARKS.md, "Violations").
		OnViolation:       s.ReportViolation,
		ObserveFilesystem: true,
		Cgroup:            cg,
	})
	if err != nil {
		if cg != nil {
			cg.Remove(context.WithoutCancel(ctx))
		}
		return nil, fmt.Errorf("native sandbox: %w", err)
	}
	r := &nativeRunner{w: w, spec: spec, launched: time.Since(start), cg: cg, memDetail: memDetail, creds: s.creds}
	go func() {
		<-w.Done()
		if !r.destroying.Load() {
			s.fail(r.endedWhy())
		}
	}()
	return r, nil
}

// endedWhy is the session's error when its PID 1 ended on its own: out
// of memory when the kernel's OOM killer has killed in the session's
// cgroup (PID 1, or bubblewrap, which hold the whole sandbox).
func (r *nativeRunner) endedWhy() error {
	if n := r.oomKills(); n > 0 {
		return fmt.Errorf("the sandbox's PID 1 ended unexpectedly: out of memory (OOM): the kernel's OOM killer has killed %d process(es) in the session's memory cgroup, limit %d bytes", n, r.cg.Limit())
	}
	return errors.New("the sandbox's PID 1 ended unexpectedly")
}

// sessionView is the launch policy of a session on either Linux backend
// (native and microvm enforce the same one), with egress as its network
// rules (the microvm's proxies take theirs from microvm.Config instead):
// and creds as its masked secrets (policy.ViewRules.Credentials; nil for
// none): the binds at their guest paths, writable in chat mode unless readOnly,
// read-only in the other modes; runnerStateDirs writable in every mode; protectedPaths and the
// mandatory write-denies never writable. enforcesNameGlobs says whether
// the backend can refuse a file-name glob write-deny (.env, *.key, *.pem)
// when the file is created; when it cannot (why says so), a launch with
// any writable path fails closed while the launch policy holds such
// denies (Options.NameGlobWriteDenies): never a silently weaker policy.
func sessionView(rt *Runtime, spec Spec, egress netrule.Rules, creds *credential.Set, enforcesNameGlobs bool, why string) (*policy.Policy, error) {
	if err := checkLaunchPolicy(rt, spec, enforcesNameGlobs, why); err != nil {
		return nil, err
	}
	p, err := compileView(rt, spec, egress, creds, nil)
	if err != nil {
		return nil, err
	}
	if enforcesNameGlobs {
		// Names, at any depth: rules of the creation-time checks only
		// (no walk of the tree for existing matches; a write to one is
		// refused when it is opened).
		for _, g := range rt.nameGlobs {
			pat := g
			if !strings.Contains(g, "/") {
				pat = "**/" + g
			}
			p.DenyWriteGlobs = append(p.DenyWriteGlobs, policy.Glob{Pattern: pat, Resolved: pat, Rule: "launch policy: " + g})
		}
	}
	return p, nil
}

// compileView is sessionView's policy without the launch policy's
// name-glob write-denies and without checkLaunchPolicy (which the caller
// runs): srtd's microvm terminals, whose profile has no such denies
// (seed 000, "Terminal hébergé par le serveur"), use it directly, with
// that profile's unreadable paths as denyRead (policy.ViewRules.DenyRead).
func compileView(rt *Runtime, spec Spec, egress netrule.Rules, creds *credential.Set, denyRead []string) (*policy.Policy, error) {
	written, err := rt.written.list()
	if err != nil {
		return nil, err
	}
	ro := ReadOnlyMode(spec.Mode)
	binds := make([]policy.ViewBind, len(spec.BindMounts))
	for i, b := range spec.BindMounts {
		binds[i] = policy.ViewBind{Host: b.HostPath, Guest: b.GuestPath, Writable: !ro && !b.ReadOnly}
	}
	p, err := policy.CompileView(policy.ViewRules{Binds: binds, Protected: spec.ProtectedPaths, DenyRead: denyRead, Writable: spec.RunnerStateDirs, Network: egress, Untrusted: written, Credentials: creds})
	if err != nil {
		return nil, fmt.Errorf("launch policy: %w", err)
	}
	p.Network.MaxConns = rt.opts.MaxConnsPerSession
	return p, nil
}

// Why a Linux backend cannot refuse a file-name glob when the file is
// created (checkLaunchPolicy's why).
const (
	nativeNoNameGlobs  = "this kernel cannot run srt's creation-time name rules"
	microvmNoNameGlobs = "the microvm guest's virtio-9p shares cannot refuse a new file by its name"
)

// checkLaunchPolicy is what sessionView refuses before it compiles
// anything: a launch policy the backend cannot enforce (file-name glob
// write-denies it cannot refuse at creation while a path is writable:
// ErrUnenforceable), host paths reached through a symbolic link a
// session or another user could have made (writtenTrees.checkLinks: a
// *SpecError) and the binds checkGuests refuses (a *SpecError). It
// reads the spec and the host's directories only, so that Start can run
// it before it answers (precheckLaunch); the backend's start runs it
// again, authoritatively.
func checkLaunchPolicy(rt *Runtime, spec Spec, enforcesNameGlobs bool, why string) error {
	ro := ReadOnlyMode(spec.Mode)
	var writable []string
	for i, b := range spec.BindMounts {
		if !ro && !b.ReadOnly {
			writable = append(writable, fmt.Sprintf("bindMounts[%d] %s", i, b.HostPath))
		}
	}
	for i, d := range spec.RunnerStateDirs {
		writable = append(writable, fmt.Sprintf("runnerStateDirs[%d] %s", i, d))
	}
	if len(rt.nameGlobs) > 0 && !enforcesNameGlobs && len(writable) > 0 {
		return fmt.Errorf("%w: the launch policy denies creating files named %s inside writable binds, and %s; writable here: %s (mode %s). Not launching with a weaker policy: use a read-only mode or readOnly binds",
			ErrUnenforceable, strings.Join(rt.nameGlobs, ", "), why, strings.Join(writable, "; "), spec.Mode)
	}
	if err := rt.written.checkLinks(spec); err != nil {
		return err
	}
	return checkGuests(spec, ro)
}

// precheckLaunch is Start's synchronous part of a Linux backend's
// checks (checkLaunchPolicy), so that a launch that does not wait gets
// the same 400 or 422 as one that does, instead of a sandbox that goes to
// the error state.
func precheckLaunch(rt *Runtime, spec Spec, b Backend) error {
	switch b {
	case BackendNative:
		return checkLaunchPolicy(rt, spec, nativeEnforcesNameGlobs(), nativeNoNameGlobs)
	case BackendMicroVM:
		return checkLaunchPolicy(rt, spec, microvmEnforcesNameGlobs, microvmNoNameGlobs)
	}
	return nil
}

// checkGuests refuses what would make bubblewrap change the host or fail
// late: a guestWorkdir outside every guestPath, and a guestPath inside
// another writable bind whose host directory lacks the mount point
// (bubblewrap would create it there, on the host).
func checkGuests(spec Spec, ro bool) error {
	if spec.GuestWorkdir != "" {
		ok := false
		for _, b := range spec.BindMounts {
			ok = ok || within(filepath.Clean(spec.GuestWorkdir), b.GuestPath)
		}
		if !ok {
			return &SpecError{"guestWorkdir", spec.GuestWorkdir + " is not inside any bindMounts guestPath"}
		}
	}
	if state, err := linux.StateDir(); err == nil {
		// The sandbox's private TMPDIR is a tmpfs at a path below srt's
		// state directory, exempt from the name rules by that path. A
		// bind holding it would let the sandbox rename the state
		// directory away and make a host directory at TMPDIR's path
		// where anything may be created.
		tmpdir := filepath.Join(state, "tmp")
		for i, b := range spec.BindMounts {
			if within(tmpdir, filepath.Clean(b.GuestPath)) {
				return &SpecError{fmt.Sprintf("bindMounts[%d].guestPath", i), fmt.Sprintf("%s would hold srt's private TMPDIR (%s); choose another guest path", b.GuestPath, tmpdir)}
			}
		}
	}
	for i, b := range spec.BindMounts {
		for j, o := range spec.BindMounts {
			if i == j || !within(b.GuestPath, o.GuestPath) || b.GuestPath == o.GuestPath {
				continue
			}
			field := fmt.Sprintf("bindMounts[%d].guestPath", i)
			host := filepath.Join(o.HostPath, strings.TrimPrefix(b.GuestPath, o.GuestPath))
			if !o.ReadOnly && !ro {
				if _, err := os.Lstat(host); err != nil {
					return &SpecError{field, fmt.Sprintf("%s lies inside writable bindMounts[%d], whose host side has no %s to mount on; create it first", b.GuestPath, j, host)}
				}
			}
			if b.ReadOnly || ro {
				continue // nothing can be created in it
			}
			// A writable bind inside another must show the directory the
			// outer bind already shows there: the sandbox's names are
			// judged at the host path their guest path maps to, and a
			// session (this one between runs, or another at the same
			// time) can rename or re-point a mount point it does not see
			// as one, moving the inner tree to a guest path that maps to
			// somewhere else. The same directory, reached without a
			// symbolic link, maps right wherever it moves.
			if !sameDirectory(b.HostPath, o.HostPath, host) {
				return &SpecError{field, fmt.Sprintf("%s lies inside bindMounts[%d] but shows %s, not the directory %s that bind has there (or the way there crosses a symbolic link); a writable bind inside another must be that same directory. Not launching: a session could move the mount point and have its files judged at the wrong host path", b.GuestPath, j, b.HostPath, host)}
			}
		}
	}
	return nil
}

// sameDirectory reports whether inner and mountPoint (a path below outer)
// are the same directory, reached from outer without a symbolic link.
func sameDirectory(inner, outer, mountPoint string) bool {
	for a := mountPoint; a != outer && within(a, outer); a = filepath.Dir(a) {
		if fi, err := os.Lstat(a); err != nil || !fi.IsDir() {
			return false
		}
	}
	a, err1 := os.Stat(inner)
	b, err2 := os.Stat(mountPoint)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// nativeRunner runs a session's commands in one warm bubblewrap sandbox.
type nativeRunner struct {
	w          *linux.Warm
	spec       Spec
	launched   time.Duration
	destroying atomicBool
	// cg is the session's memory cgroup, nil when it runs without a
	// limit; memDetail is the handle's details.memoryLimit.
	cg        *cgroup.Group
	memDetail string
	// creds are the session's masked secrets: every exec's environment
	// goes through creds.Environ (nil: none).
	creds *credential.Set
}

func (r *nativeRunner) start(c command) (proc, error) {
	dir := c.dir
	if dir == "" {
		dir = r.spec.GuestWorkdir
	}
	var env []string
	for k, v := range c.env {
		env = append(env, k+"="+v)
	}
	// A deny entry the exec sets is dropped, a mask entry shows its
	// sentinel, and a real value the caller passes in any variable is
	// replaced by its sentinel.
	env = r.creds.Environ(env)
	e, err := r.w.Exec(linux.WarmCommand{Argv: c.argv, Env: env, Dir: dir, Stdin: c.stdin, Stdout: c.stdout, Stderr: c.stderr})
	if errors.Is(err, linux.ErrExecTooLarge) {
		return nil, &SpecError{"argv", err.Error()}
	}
	if err != nil {
		return nil, err
	}
	pid, ok := <-e.Started
	if !ok {
		<-e.Done
		if errors.Is(e.Status.Err, linux.ErrSandboxEnded) {
			return nil, e.Status.Err
		}
		return nil, &startError{e.Status.Code, e.Status.Err.Error()}
	}
	return &nativeProc{w: r.w, e: e, p: pid}, nil
}

func (r *nativeRunner) freeze(ctx context.Context, _ []proc) error { return r.w.Freeze(ctx) }
func (r *nativeRunner) thaw(ctx context.Context, _ []proc) error   { return r.w.Thaw(ctx) }

func (r *nativeRunner) destroy(ctx context.Context) error {
	r.destroying.Store(true)
	err := r.w.Kill()
	if r.cg != nil {
		// Bounded: a process the kernel cannot kill at once keeps the
		// cgroup busy, and Destroy must still return.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		err = errors.Join(err, r.cg.Remove(cctx))
	}
	return err
}

// oomKills implements oomCounter: the OOM kills in the session's memory
// cgroup so far (0 without one, or when the count cannot be read).
func (r *nativeRunner) oomKills() uint64 {
	if r.cg == nil {
		return 0
	}
	n, _ := r.cg.OOMKills()
	return n
}

func (r *nativeRunner) details() map[string]any {
	d := map[string]any{
		"workdir":        r.spec.GuestWorkdir,
		"bwrapPid":       r.w.BwrapPID(),
		"pid1":           r.w.Pid1(),
		"httpProxy":      fmt.Sprintf("127.0.0.1:%d (inside the sandbox)", linux.HTTPProxyPort),
		"socksProxy":     fmt.Sprintf("127.0.0.1:%d (inside the sandbox)", linux.SOCKSProxyPort),
		"launchMillis":   r.launched.Milliseconds(),
		"execGrantRoots": "ignored on Linux: bubblewrap has no exec block to reopen",
		"memoryLimit":    r.memDetail,
	}
	if r.cg != nil {
		d["memoryLimitBytes"] = r.cg.Limit()
		d["cgroup"] = r.cg.Dir()
	}
	return d
}

type nativeProc struct {
	w *linux.Warm
	e *linux.WarmExec
	p int
}

func (p *nativeProc) pid() int { return p.p }

func (p *nativeProc) signal(sig syscall.Signal) error { return p.w.Signal(p.e.ID, sig) }

func (p *nativeProc) wait() (int, int) {
	<-p.e.Done
	return p.e.Status.Code, p.e.Status.Signal
}
