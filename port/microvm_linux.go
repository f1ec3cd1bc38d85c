//go:build linux

package port

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/srt-go/srt/microvm"
	"github.com/srt-go/srt/netrule"
	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/sandbox/linux/fsplan"
	"github.com/srt-go/srt/violation"
	"golang.org/x/sys/unix"
)

// microvmEnforcesNameGlobs says whether the microvm backend can refuse a
// file-name glob write-deny (.env, *.key, *.pem) when the file is
// created. It can (issue 20): every process in the guest runs under the
// session's policy at creation time (microvm.Config.Names: the native
// backend's sandbox/linux/supervisor, inside the guest), and a process
// whose rules cannot be set up there does not start. So writable binds
// launch under the standard launch policy, as on native.
const microvmEnforcesNameGlobs = true

// NewMicroVMLauncher returns the microvm backend's MicroVMLauncher (issue
// 7): each session is one QEMU VM (package microvm) behind the same port
// as native. base is the VM configuration every session starts from
// (QEMUPath, InitPath, CacheDir, Accel, MemoryMiB, ...; the microvm
// package's SRT_MICROVM_* variables fill in what it leaves empty); its
// Shares, ProtectedPaths, Policy, OnViolation and Events are set per
// session from the Spec. Probe boots one test VM the first time and
// caches the verdict.
func NewMicroVMLauncher(base microvm.Config) MicroVMLauncher {
	base.Shares, base.ProtectedPaths, base.Policy, base.OnViolation = nil, nil, nil, nil
	return &microVMLauncher{base: base}
}

// MicroVMDisabled returns a MicroVMLauncher that reports no VM can start,
// with note as the reason (an operator's explicit opt-out).
func MicroVMDisabled(note string) MicroVMLauncher { return disabledVM(note) }

type disabledVM string

func (d disabledVM) Probe(context.Context) (bool, string) { return false, string(d) }
func (d disabledVM) Launch(context.Context, Spec, EgressLists) (Sandbox, error) {
	return nil, fmt.Errorf("%w: microvm: %s", ErrBackendUnavailable, string(d))
}

// defaultMicroVM is New's MicroVMLauncher when Options.MicroVM is nil.
func defaultMicroVM() MicroVMLauncher { return NewMicroVMLauncher(microvm.Config{}) }

type microVMLauncher struct {
	base microvm.Config

	mu     sync.Mutex // held while probing; guards the fields below
	probed bool
	ok     bool
	note   string
}

// Probe implements MicroVMLauncher: microvm.ProbeConfig (a test boot),
// once. A probe cut short by ctx (the port closing; the test VM is torn
// down) is not kept: the next call probes again.
func (l *microVMLauncher) Probe(ctx context.Context) (bool, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.probed {
		return l.ok, l.note
	}
	ok, note := l.probe(ctx)
	if ctx.Err() != nil {
		return false, "microvm probe cancelled: " + context.Cause(ctx).Error()
	}
	l.probed, l.ok, l.note = true, ok, note
	return ok, note
}

func (l *microVMLauncher) probe(ctx context.Context) (bool, string) {
	if err := checkGuestInit(l.base.InitPath); err != nil {
		return false, "microvm unavailable: " + err.Error()
	}
	r := microvm.ProbeConfig(ctx, l.base)
	if !r.Available {
		note := r.Reason
		if r.InstallHint != "" {
			note += " (" + r.InstallHint + ")"
		}
		return false, note
	}
	note := fmt.Sprintf("QEMU microVM, %s, test boot %d ms", strings.ToUpper(r.Accel), r.BootMS)
	if r.Reason != "" {
		note += " (" + r.Reason + ")"
	}
	return true, note
}

// checkGuestInit refuses, before any download or boot, a guest /init
// that cannot be one: the microvm package would refuse it too, but only
// after preparing the guest kernel.
func checkGuestInit(p string) error {
	if p == "" {
		p = os.Getenv("SRT_MICROVM_INIT")
	}
	if p == "" {
		var err error
		if p, err = os.Executable(); err != nil {
			return err
		}
	}
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("guest init %s: %w", p, err)
	}
	defer f.Close()
	for _, ph := range f.Progs {
		if ph.Type == elf.PT_INTERP {
			return fmt.Errorf("guest init %s is not a static executable (build it with CGO_ENABLED=0, or set SRT_MICROVM_INIT to a static srt)", p)
		}
	}
	return nil
}

// Launch implements MicroVMLauncher for a caller outside a Runtime: the
// standard launch policy, no logger. Runtime.Launch uses launchRunner
// instead, so that the session is its own.
func (l *microVMLauncher) Launch(ctx context.Context, spec Spec, egress EgressLists) (Sandbox, error) {
	rt, err := newRuntime(ctx, Options{MicroVM: l}, &Probe{MicroVMAvailable: true})
	if err != nil {
		return nil, err
	}
	s := newSession(rt, spec, BackendMicroVM)
	if s.r, err = l.launchRunner(ctx, rt, s, egress); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.setLocked(StateWarm)
	s.mu.Unlock()
	return s, nil
}

// launchRunner boots s's VM (seed 000, "VM cloisonnée"): the binds are
// shared at their guestPaths with the same rules as native (sessionView:
// read-only modes, readOnly, runnerStateDirs writable, protectedPaths and
// the mandatory denies never writable, the name-glob rule), enforced in
// the guest at creation time (microvm.Config.Names), and the guest's only
// way out is its relay to this session's own proxies, filtering with
// egress. The guest's refusals are the session's violations.
func (l *microVMLauncher) launchRunner(ctx context.Context, rt *Runtime, s *session, egress EgressLists) (runner, error) {
	r, err := l.boot(ctx, rt, s.spec, egress, true, nil, rt.log.With("session", s.spec.SessionID), func(v violation.Violation) {
		s.ReportViolation(v)
	})
	if err != nil {
		return nil, err
	}
	// The event stream ends when the VM is torn down: by Destroy, or
	// because QEMU died, which makes the session StateError.
	go func() {
		for range r.vm.Events() {
		}
		if !r.destroying.Load() {
			err := r.vm.Err()
			if err == nil {
				err = errors.New("the VM ended unexpectedly")
			}
			s.fail(err)
		}
	}()
	return r, nil
}

// boot boots a VM for spec: its shares and protected paths
// (microvmShares), the creation-time rules of its view in the guest
// (microvm.Config.Names), its egress policy, its violations to
// onViolation. launchPolicy applies the launch policy (sessionView, with
// its name-glob write-denies: an agent launch); srtd's terminals have a
// profile of their own without them (seed 000, "Terminal hébergé par le
// serveur"; compileView), whose unreadable paths are denyRead (hidden
// host-side, microvm.Config.DenyRead via DenyReadOf).
//
// There are no host placeholders: a protected name missing at launch (a
// .bashrc, a new nested repository's .git/hooks, at any depth) is refused
// by the guest's supervisor when it is created, as on native with the
// creation-time rules (fsplan.Options.CreationRules).
func (l *microVMLauncher) boot(ctx context.Context, rt *Runtime, spec Spec, egress EgressLists, launchPolicy bool, denyRead []string, log *slog.Logger, onViolation func(violation.Violation)) (*vmRunner, error) {
	var p *policy.Policy
	var err error
	if launchPolicy {
		p, err = sessionView(rt, spec, netrule.Rules{}, nil, microvmEnforcesNameGlobs, microvmNoNameGlobs)
	} else if err = checkLaunchPolicy(rt, spec, true, ""); err == nil {
		p, err = compileView(rt, spec, netrule.Rules{}, nil, denyRead)
	}
	if err != nil {
		return nil, err
	}
	shares, protected, err := microvmShares(spec, p)
	if err != nil {
		return nil, err
	}
	rules := EgressRules(Baseline{}, spec.NetworkEnabled, nil) // the deny reason
	rules.Allowed = append([]string{}, egress.Allowed...)
	rules.Denied = slices.Clone(egress.Denied)
	pol, err := netrule.Compile(rules)
	if err != nil {
		return nil, fmt.Errorf("egress policy: %w", err)
	}
	cfg := l.base
	cfg.Shares, cfg.ProtectedPaths, cfg.Policy, cfg.Events = shares, protected, pol, true
	// The host's userland read-only, as the native view shows it
	// (policy.View.System), and the view's unreadable paths hidden
	// host-side (microvm.Config.DenyRead).
	if p.View != nil {
		cfg.System = p.View.System
	}
	if cfg.DenyRead, err = microvm.DenyReadOf(p); err != nil {
		return nil, err
	}
	cfg.Names = p
	// srtd's own HTTP_PROXY / HTTPS_PROXY / NO_PROXY, as for the native
	// backend's sessions (policy.Network.Parent).
	nw, err := policy.NetworkOf(nil)
	if err != nil {
		return nil, fmt.Errorf("parent proxy: %w", err)
	}
	cfg.Parent = nw.Parent
	cfg.Hostname = "srt-" + spec.SessionID
	if len(cfg.Hostname) > 63 {
		cfg.Hostname = cfg.Hostname[:63]
	}
	cfg.Logger = log
	cfg.OnViolation = onViolation
	cfg.MaxConns = rt.opts.MaxConnsPerSession
	start := time.Now()
	vm, err := microvm.Launch(ctx, cfg)
	if err != nil {
		if vm != nil {
			vm.Close()
		}
		var ue *microvm.UnavailableError
		if errors.As(err, &ue) {
			return nil, fmt.Errorf("%w: %v", ErrBackendUnavailable, err)
		}
		return nil, fmt.Errorf("microvm: %w", err)
	}
	if err := checkGuestRules(ctx, vm); err != nil {
		vm.Close()
		return nil, err
	}
	return &vmRunner{vm: vm, spec: spec, shares: shares, launched: time.Since(start)}, nil
}

// checkGuestRules makes the launch fail closed when the guest cannot run
// the creation-time rules (microvm.Config.Names): the guest starts no
// process it cannot put under them (microvm/guest, observe_linux.go), so
// a VM whose kernel lacks what the supervisor needs (the same list as
// native: sandbox/linux.CreationRulesSupported) would report the session
// warm and then fail every exec. One process under the rules, started
// at launch, proves the guest can; its failure is the launch's
// (ErrUnenforceable). Landlock is not required: as on native
// (sandbox/linux/inside, applyBackstop) it is the backstop where the
// kernel has it, and the handle says which (details.guestLandlock).
func checkGuestRules(ctx context.Context, vm *microvm.VM) error {
	p, err := vm.Exec(ctx, microvm.ExecRequest{Argv: []string{"/bin/sh", "-c", ":"}, Dir: "/"})
	if err != nil {
		return fmt.Errorf("%w: the microvm guest cannot start a process under the creation-time name rules: %w", ErrUnenforceable, err)
	}
	code, err := p.Wait()
	if err != nil || code != 0 {
		return fmt.Errorf("%w: the microvm guest's first process under the creation-time name rules failed (exit %d, %v)", ErrUnenforceable, code, err)
	}
	return nil
}

// MicroVM is a VM booted by Runtime.LaunchMicroVM for a caller that runs
// its own processes in it (srtd's microvm terminals).
type MicroVM struct {
	r    *vmRunner
	once sync.Once
	err  error
}

// VM is the VM; run processes in it with VM().Exec.
func (m *MicroVM) VM() *microvm.VM { return m.r.vm }

// Details are what a session's handle would show: shares, protected
// names, accelerator, proxies.
func (m *MicroVM) Details() map[string]any { return m.r.details() }

// Close destroys the VM (QEMU, its proxies, its run directory). It is
// idempotent.
func (m *MicroVM) Close() error {
	m.once.Do(func() { m.err = m.r.destroy(context.Background()) })
	return m.err
}

// MicroVMProfile is what a VM booted by LaunchMicroVM applies beyond its
// Spec: srtd's terminal profile (seed 000, "Terminal hébergé par le
// serveur"; server.TerminalDenyRead and TerminalConfig.HiddenFiles).
type MicroVMProfile struct {
	// Egress are the VM's egress lists; nil means the port's lists for
	// the spec (baseline, GitHub, spec.EgressAllowlist; the fixed deny
	// list).
	Egress *EgressLists
	// DenyRead are host paths the guest must not read, as settings'
	// filesystem.denyRead (policy.ViewRules.DenyRead): each one shown by
	// a share is hidden in QEMU's view, host-side (microvm.DenyReadOf,
	// Config.DenyRead), an empty read-only directory or /dev/null; one
	// that cannot be hidden (a symbolic link on the way) fails the
	// launch (microvm.ErrCannotHide).
	DenyRead []string
}

// LaunchMicroVM boots one VM for spec outside any session, with the same
// shares, protected paths, creation-time rules in the guest and egress as
// a microvm session (boot), for srtd's terminals: spec is validated, an
// explicit microvm on a host that cannot start a VM fails with
// ErrBackendUnavailable, a guest that cannot run the creation-time rules
// with ErrUnenforceable (checkGuestRules). prof adds the terminal
// profile's egress and unreadable paths. The launch policy's name-glob
// write-denies are not applied: a terminal has its own profile (seed
// 000). The guest's refusals (filesystem and network) are logged. ctx
// bounds the wait for the microvm probe's verdict (see Choose) and the
// boot; the VM lives until Close.
func (rt *Runtime) LaunchMicroVM(ctx context.Context, spec Spec, prof MicroVMProfile) (*MicroVM, error) {
	if err := Validate(spec); err != nil {
		return nil, err
	}
	spec = normalize(spec)
	if _, err := rt.Choose(ctx, BackendMicroVM); err != nil {
		return nil, err
	}
	l, ok := rt.opts.MicroVM.(*microVMLauncher)
	if !ok {
		return nil, fmt.Errorf("%w: microvm: this port's microVM backend cannot boot a VM outside a session", ErrBackendUnavailable)
	}
	// The VMs' own cache (a terminal sharing $HOME shows
	// ~/.cache/srt-microvm) is read-only in every VM: microvm.Launch
	// protects it wherever a writable share shows it.
	if err := rt.written.checkLinks(spec); err != nil {
		return nil, err
	}
	if err := rt.written.record(spec); err != nil {
		return nil, err
	}
	eg := rt.egressLists(spec)
	if prof.Egress != nil {
		eg = *prof.Egress
	}
	log := rt.log.With("vm", spec.SessionID)
	r, err := l.boot(ctx, rt, spec, eg, false, prof.DenyRead, log, func(v violation.Violation) {
		log.Info("refused", "action", v.Action, "target", v.Target, "reason", v.Reason)
	})
	if err != nil {
		return nil, err
	}
	go func() {
		for range r.vm.Events() {
		}
	}()
	return &MicroVM{r: r}, nil
}

// microvmShares maps the session's view onto VM shares: each bind at its
// guestPath (read-only unless writable in this mode), each
// runnerStateDir writable wherever it appears (inside a read-only bind
// too, as a writable share on top). What the guest and QEMU's view pin
// read-only comes from the same plan as the native backend's mounts
// (fsplan.Build over the view, with the creation-time rules, which the
// guest runs: microvm.Config.Names): every path the plan binds read-only
// inside a writable share. A protected path missing at launch needs no
// placeholder: the guest's supervisor refuses it when it is created.
func microvmShares(spec Spec, p *policy.Policy) (shares []microvm.Share, protected []string, err error) {
	ro := ReadOnlyMode(spec.Mode)
	for i, b := range spec.BindMounts {
		m := p.View.Mounts[i]
		if fi, err := os.Stat(m.Host.Resolved); err != nil || !fi.IsDir() {
			return nil, nil, &SpecError{fmt.Sprintf("bindMounts[%d].hostPath", i), b.HostPath + " is not a directory; the microvm backend shares directories only"}
		}
		shares = append(shares, microvm.Share{HostPath: m.Host.Resolved, GuestPath: m.Guest, ReadOnly: ro || b.ReadOnly})
	}
	for _, d := range spec.RunnerStateDirs {
		res := policy.Resolve(d)
		guests := p.View.Guests(res)
		if len(guests) == 0 {
			guests = []string{filepath.Clean(d)}
		}
		for _, g := range guests {
			if i := slices.IndexFunc(shares, func(s microvm.Share) bool { return s.GuestPath == g }); i >= 0 {
				shares[i].ReadOnly = false
				continue
			}
			shares = append(shares, microvm.Share{HostPath: res, GuestPath: g})
		}
	}
	if len(shares) > 16 {
		return nil, nil, &SpecError{"bindMounts", fmt.Sprintf("%d shares (binds and runnerStateDirs); the microvm backend takes at most 16", len(shares))}
	}
	// A protected link in a writable share (p.LinkedDenies) is not
	// refused here: replacing it is a creation the guest's supervisor
	// refuses, as on native with the creation-time rules
	// (sandbox/linux.Run).
	plan := fsplan.Build(p, fsplan.Options{CreationRules: true})
	for _, op := range plan.Ops {
		// A bind's root the plan makes read-only (a protectedPaths entry
		// that is a bind) is pinned like any other path.
		if op.Runtime || op.Kind != fsplan.OpROBind || op.Src == "/dev/null" {
			continue
		}
		if sh := deepestShare(shares, op.Dst); sh != nil && !sh.ReadOnly && !slices.Contains(protected, op.Dst) {
			protected = append(protected, op.Dst)
		}
	}
	return shares, protected, nil
}

// deepestShare is the share the guest sees at guest path g (the deepest
// mount wins).
func deepestShare(shares []microvm.Share, g string) *microvm.Share {
	var best *microvm.Share
	for i := range shares {
		if within(g, shares[i].GuestPath) && (best == nil || len(shares[i].GuestPath) > len(best.GuestPath)) {
			best = &shares[i]
		}
	}
	return best
}

// vmRunner runs a session's commands in its VM.
type vmRunner struct {
	vm         *microvm.VM
	spec       Spec
	shares     []microvm.Share
	launched   time.Duration
	destroying atomicBool
	toDisk     atomicBool // the last suspend saved the VM to disk
}

// dupFile duplicates f: the session closes its ends once start returns,
// and the VM's exec goroutines use theirs until the process ends.
func dupFile(f *os.File) (*os.File, error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

func (r *vmRunner) start(c command) (proc, error) {
	var files []*os.File
	for _, f := range []*os.File{c.stdin, c.stdout, c.stderr} {
		d, err := dupFile(f)
		if err != nil {
			for _, o := range files {
				o.Close()
			}
			return nil, err
		}
		files = append(files, d)
	}
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	dir := c.dir
	if dir == "" {
		dir = r.spec.GuestWorkdir
	}
	var env []string
	for k, v := range c.env {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	p, err := r.vm.Exec(context.Background(), microvm.ExecRequest{Argv: c.argv, Env: env, Dir: dir,
		Stdin: files[0], Stdout: files[1], Stderr: files[2]})
	if err != nil {
		closeAll()
		var ee *microvm.ExecError
		if errors.As(err, &ee) && ee.Code != 0 {
			return nil, &startError{ee.Code, err.Error()}
		}
		return nil, err
	}
	vp := &vmProc{r: r, p: p}
	go func() {
		<-p.Done()
		// Every write to stdout and stderr has happened: the session's
		// readers now see the end of the output. stdin may still be
		// read by the VM's copier; closing unblocks it.
		closeAll()
	}()
	return vp, nil
}

// freeze suspends the VM: to disk (QEMU stops, its RAM is freed) when no
// exec runs and the shares are idle, else by stopping the vCPUs.
func (r *vmRunner) freeze(ctx context.Context, procs []proc) error {
	if len(procs) == 0 {
		err := r.vm.Suspend(ctx, microvm.SuspendOptions{ToDisk: true})
		if err == nil {
			r.toDisk.Store(true)
			return nil
		}
		if !errors.Is(err, microvm.ErrBusy) {
			return err
		}
	}
	r.toDisk.Store(false)
	return r.vm.Suspend(ctx, microvm.SuspendOptions{})
}

func (r *vmRunner) thaw(ctx context.Context, _ []proc) error { return r.vm.Resume(ctx) }

func (r *vmRunner) destroy(ctx context.Context) error {
	r.destroying.Store(true)
	err := r.vm.Close()
	return err
}

func (r *vmRunner) details() map[string]any {
	d := r.vm.Details()
	d["workdir"] = r.spec.GuestWorkdir
	d["launchMillis"] = r.launched.Milliseconds()
	d["httpProxy"] = fmt.Sprintf("127.0.0.1:%d (inside the VM)", microvm.HTTPProxyPort)
	d["socksProxy"] = fmt.Sprintf("127.0.0.1:%d (inside the VM)", microvm.SOCKSProxyPort)
	d["vmState"] = string(r.vm.State())
	d["suspendedToDisk"] = r.toDisk.Load() && r.vm.State() == microvm.StateSuspended
	var sh []string
	for _, s := range r.shares {
		m := "rw"
		if s.ReadOnly {
			m = "ro"
		}
		sh = append(sh, s.HostPath+" -> "+s.GuestPath+" ("+m+")")
	}
	d["shares"] = sh
	d["execGrantRoots"] = "ignored on Linux"
	return d
}

// vmProc is one exec in the VM.
type vmProc struct {
	r *vmRunner
	p *microvm.Process
}

func (p *vmProc) pid() int { return p.p.PID }

func (p *vmProc) signal(sig syscall.Signal) error { return p.p.Signal(sig) }

// wait returns the guest's exit status; 128+N is signal N. When the VM
// went away (destroyed, or QEMU died) the status is unknown: a destroy
// reports SIGKILL, anything else 255.
func (p *vmProc) wait() (int, int) {
	code, err := p.p.Wait()
	if err != nil {
		if p.r.destroying.Load() {
			return 128 + int(syscall.SIGKILL), int(syscall.SIGKILL)
		}
		return 255, 0
	}
	if code > 128 && code <= 128+64 {
		return code, code - 128
	}
	return code, 0
}
