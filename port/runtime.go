package port

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"syscall"
)

// SandboxSetting is srtd's --sandbox / SRTD_SANDBOX (seed 000: "on"
// means "wrap when the host offers a backend", never "require one").
type SandboxSetting string

const (
	// SandboxOn is the default; the empty value means it too.
	SandboxOn SandboxSetting = "on"
	// SandboxOff is the explicit opt-out: every launch runs on none.
	SandboxOff SandboxSetting = "off"
)

// ParseSandboxSetting reads --sandbox: "on", "off", or "" (on).
func ParseSandboxSetting(s string) (SandboxSetting, error) {
	switch s {
	case "", "on":
		return SandboxOn, nil
	case "off":
		return SandboxOff, nil
	}
	return "", fmt.Errorf("--sandbox %q: want on or off", s)
}

// Options configure New. The zero Options is a working port: sandbox on,
// default backend native, the built-in egress baseline, no microVM.
type Options struct {
	// Sandbox is on ("" too) or off. Off: agent launches with no backend
	// named run on none; naming native or microvm is an error.
	Sandbox SandboxSetting
	// Logger receives the fallback lines and debug output. Nil discards.
	Logger *slog.Logger
	// Baseline overrides the egress baseline. Nil means DefaultBaseline().
	Baseline *Baseline
	// MicroVM is the microVM backend's hook. Nil means, for New, the
	// microvm package's launcher where the platform has one (Linux), and
	// no VM otherwise; MicroVMDisabled(note) turns it off.
	MicroVM MicroVMLauncher
	// DefaultBackend is what Launch uses when the caller names none. ""
	// means native (none when the host has no native sandbox). microvm
	// falls back to native, with a log line, when no VM can start; never
	// silently (seed 000).
	DefaultBackend Backend
	// NameGlobWriteDenies are the launch policy's file-name glob
	// write-denies (seed 000, "Linux : bubblewrap"): names no process may
	// create or write inside a writable bind. Nil means the seed's standard
	// launch policy, StandardNameGlobWriteDenies. The native Linux backend
	// cannot enforce them when a file is created, so while this list is
	// not empty a native launch with any writable path fails closed (an
	// error wrapping ErrUnenforceable). An empty, non-nil list is the
	// operator's explicit choice of a launch policy without them; New logs
	// it at Warn.
	NameGlobWriteDenies []string
	// BwrapPath is bubblewrap's absolute path. Empty means bwrap in PATH.
	BwrapPath string
	// OnViolation, when set, also receives every violation of every
	// session (the events carry them too). It must not block.
	OnViolation func(sessionID string, v Violation)
	// MaxSessions bounds the sandboxes alive at once, those still
	// launching included (srtd's --max-sessions); one more is
	// ErrTooManySessions. Zero means DefaultMaxSessions; negative is an
	// error.
	MaxSessions int
	// MemoryLimit is the memory limit of a session whose spec names no
	// memoryLimitBytes, in bytes (srtd's --memory-limit), enforced by a
	// memory cgroup per native session on Linux. Zero means
	// DefaultMemoryLimit(); NoMemoryLimit turns it off; anything else
	// below MinMemoryLimit is an error. A spec may ask for less, never
	// more (a *SpecError). Where no cgroup can be used, the default is
	// skipped with one Warn line from New and an explicit
	// memoryLimitBytes fails closed (ErrUnenforceable). A microvm
	// session's limit is its VM's RAM instead.
	MemoryLimit int64
	// CgroupParent is the cgroup directory session cgroups are made in
	// (srtd's --cgroup-parent): one of a v2 hierarchy with the memory
	// controller, or of the v1 memory hierarchy, writable by this process.
	// Empty means this process's own cgroup. One that cannot be used
	// makes New fail.
	CgroupParent string
	// MaxConnsPerSession bounds the connections one session's proxies
	// serve at once (proxy.Config.MaxConns; srtd's
	// --max-conns-per-session), so that a session cannot spend the
	// server's descriptors. Zero means DefaultMaxConnsPerSession;
	// negative is an error.
	MaxConnsPerSession int
	// WrittenTrees is the file that keeps the host trees this user's
	// sessions have had writable, shared by every srtd process of the
	// user (writtenTrees): a later launch's host paths must not cross a
	// symbolic link inside one. Empty means srtd/written-trees in srt's
	// per-user state directory on Linux (memory only elsewhere); "-"
	// keeps them in this process's memory only (tests).
	WrittenTrees string
}

// DefaultMaxSessions is Options.MaxSessions when zero.
const DefaultMaxSessions = 64

// DefaultMaxConnsPerSession is Options.MaxConnsPerSession when zero.
const DefaultMaxConnsPerSession = 256

// StandardNameGlobWriteDenies is the seed's standard launch policy's
// file-name glob write-denies.
var StandardNameGlobWriteDenies = []string{".env", "*.key", "*.pem"}

// Runtime is the Port New returns. Beyond Port it offers Choose,
// SandboxOn and LaunchMicroVM; srtd may type-assert to it.
type Runtime struct {
	opts      Options
	log       *slog.Logger
	probe     Probe         // the native part of the start-up probe
	vmProbe   *microVMProbe // its microvm part, which may still be running
	baseline  Baseline
	nameGlobs []string
	mem       memory // memory limits: memory_linux.go, memory_other.go
	written   *writtenTrees

	mu sync.Mutex // guards the fields below
	// sessions are the sandboxes not destroyed by id, those still
	// starting (StateCreated) included; a nil value is an id reserved by
	// the launch of an external microVM backend's sandbox in progress.
	// Every entry counts against MaxSessions and makes a second launch of
	// the id fail, but Lookup, List and Close do not see nil ones.
	sessions map[string]Sandbox
	// closed is set by Close: every later launch is ErrClosed.
	closed bool
}

// ExecController is implemented by every Sandbox the port returns: it
// kills or signals one running exec by the ExecID of its starting event.
type ExecController interface {
	Kill(ctx context.Context, execID string) error
	Signal(ctx context.Context, execID string, sig syscall.Signal) error
}

// ViolationReporter is implemented by every Sandbox the port returns:
// ReportViolation delivers a violation to the running execs' streams (the
// hook a violation source feeds; it never blocks).
type ViolationReporter interface {
	ReportViolation(v Violation)
}

// New probes the host once and returns the port. ctx bounds the native
// probe only (it runs bubblewrap once, at most 10 s); the microvm probe
// (one test VM) runs in the background until its verdict, or until Close
// (see MicroVMState, MicroVMProbed). A nil Options.MicroVM means the
// microvm package's launcher (NewMicroVMLauncher with the zero Config)
// where the platform has one; MicroVMDisabled opts out.
func New(ctx context.Context, opts Options) (Port, error) {
	if opts.MicroVM == nil {
		opts.MicroVM = defaultMicroVM()
	}
	rt, err := newRuntime(ctx, opts, nil)
	if err != nil {
		return nil, err
	}
	return rt, nil
}

// newRuntime is New with a probe to use instead of the host's (tests; see
// probeHost for what a fixed probe replaces).
func newRuntime(ctx context.Context, opts Options, probe *Probe) (*Runtime, error) {
	set, err := ParseSandboxSetting(string(opts.Sandbox))
	if err != nil {
		return nil, err
	}
	opts.Sandbox = set
	switch opts.DefaultBackend {
	case "", BackendNative, BackendMicroVM, BackendNone:
	default:
		return nil, fmt.Errorf("default backend %q: want none, native or microvm", opts.DefaultBackend)
	}
	switch {
	case opts.MaxSessions == 0:
		opts.MaxSessions = DefaultMaxSessions
	case opts.MaxSessions < 0:
		return nil, fmt.Errorf("max sessions %d: want > 0 (0 means %d)", opts.MaxSessions, DefaultMaxSessions)
	}
	switch {
	case opts.MaxConnsPerSession == 0:
		opts.MaxConnsPerSession = DefaultMaxConnsPerSession
	case opts.MaxConnsPerSession < 0:
		return nil, fmt.Errorf("max connections per session %d: want > 0 (0 means %d)", opts.MaxConnsPerSession, DefaultMaxConnsPerSession)
	}
	lg := opts.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	rt := &Runtime{opts: opts, log: lg, sessions: map[string]Sandbox{}}
	rt.baseline = DefaultBaseline()
	if opts.Baseline != nil {
		rt.baseline = *opts.Baseline
	}
	if err := checkBaseline(rt.baseline); err != nil {
		return nil, err
	}
	if rt.mem, err = newMemory(opts, lg); err != nil {
		return nil, err
	}
	rt.nameGlobs = StandardNameGlobWriteDenies
	if opts.NameGlobWriteDenies != nil {
		rt.nameGlobs = slices.Clone(opts.NameGlobWriteDenies)
		if len(rt.nameGlobs) == 0 {
			lg.Warn("launch policy without file-name glob write-denies (.env, *.key, *.pem): native sandboxes may create them in writable binds")
		}
	}
	rt.written = newWrittenTrees(opts.WrittenTrees)
	// Last: nothing can fail once the microvm probe runs.
	rt.probe, rt.vmProbe = probeHost(ctx, opts.BwrapPath, opts.MicroVM, probe, lg)
	return rt, nil
}

func checkBaseline(b Baseline) error {
	r := EgressRules(b, true, nil)
	if _, err := compileRules(r); err != nil {
		return fmt.Errorf("egress baseline: %w", err)
	}
	return nil
}

// Probe implements Port: the native part of the start-up probe, and the
// microvm part's verdict or, while its test boot runs, MicroVMState
// MicroVMProbing with MicroVMNote "probing". It never blocks.
func (rt *Runtime) Probe() Probe {
	p := rt.probe
	rt.vmProbe.fill(&p)
	return p
}

// MicroVMProbed is closed once the microvm probe's verdict is known
// (Probe then reports it). Close cancels a probe still running; its
// verdict is then unavailable.
func (rt *Runtime) MicroVMProbed() <-chan struct{} { return rt.vmProbe.done }

// microVMVerdict waits, bounded by ctx, for the microvm probe's verdict
// (microVMProbe.verdict); the port closing while it waited is ErrClosed.
func (rt *Runtime) microVMVerdict(ctx context.Context) (bool, string, error) {
	ok, note, err := rt.vmProbe.verdict(ctx, rt.log)
	if err == nil && !ok {
		rt.mu.Lock()
		closed := rt.closed
		rt.mu.Unlock()
		if closed {
			return false, "", ErrClosed
		}
	}
	return ok, note, err
}

// SandboxOn reports whether --sandbox is on.
func (rt *Runtime) SandboxOn() bool { return rt.opts.Sandbox != SandboxOff }

// StartupLine is StartupLine for this port's probe and setting.
func (rt *Runtime) StartupLine() string { return StartupLine(rt.probe, rt.SandboxOn()) }

// Lookup implements Port: the sandbox named id, not destroyed (starting
// or failed ones too).
func (rt *Runtime) Lookup(id string) (Sandbox, bool) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	s := rt.sessions[id]
	return s, s != nil
}

// List implements Port.
func (rt *Runtime) List() []Sandbox {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	all := make([]Sandbox, 0, len(rt.sessions))
	for _, s := range rt.sessions {
		if s != nil {
			all = append(all, s)
		}
	}
	return all
}

// Close implements Port: it refuses later launches, cancels the microvm
// probe if it still runs (and waits for its test VM to go), then destroys
// every sandbox, in parallel, those still starting too (Destroy cancels
// their start), and returns their errors joined. A Launch waiting for its
// sandbox then returns ErrClosed, as does the launch of an external
// microVM backend's sandbox, which destroys it when it ends.
func (rt *Runtime) Close(ctx context.Context) error {
	rt.mu.Lock()
	rt.closed = true
	rt.mu.Unlock()
	perr := rt.vmProbe.stop(ctx)
	all := rt.List()
	errs := make([]error, len(all), len(all)+1)
	var wg sync.WaitGroup
	for i, s := range all {
		wg.Go(func() {
			if err := s.Destroy(ctx); err != nil {
				errs[i] = fmt.Errorf("destroy %s: %w", s.Handle().SessionID, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(append(errs, perr)...)
}

// reserve claims id for sb (nil: a reservation publish fills in later):
// ErrClosed after Close, ErrSessionExists for an id live or launching,
// ErrTooManySessions at MaxSessions.
func (rt *Runtime) reserve(id string, sb Sandbox) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	switch _, taken := rt.sessions[id]; {
	case rt.closed:
		return ErrClosed
	case taken:
		return fmt.Errorf("%w: %q", ErrSessionExists, id)
	case len(rt.sessions) >= rt.opts.MaxSessions:
		return fmt.Errorf("%w (%d)", ErrTooManySessions, rt.opts.MaxSessions)
	}
	rt.sessions[id] = sb
	return nil
}

// publish turns id's reservation into sb, which Lookup, List and Close
// then see; after Close it releases the reservation and returns
// ErrClosed, and the caller destroys sb.
func (rt *Runtime) publish(id string, sb Sandbox) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed {
		delete(rt.sessions, id)
		return ErrClosed
	}
	rt.sessions[id] = sb
	return nil
}

// release drops id's reservation after a launch that failed.
func (rt *Runtime) release(id string) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.sessions[id] == nil {
		delete(rt.sessions, id)
	}
}

// forget drops sb, destroyed, from the registry.
func (rt *Runtime) forget(id string, sb Sandbox) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.sessions[id] == sb {
		delete(rt.sessions, id)
	}
}

// Choose returns the backend a launch asking for requested runs on, or an
// error wrapping ErrBackendUnavailable (seed 000, "Vue d'ensemble des
// backends"):
//
//   - --sandbox off: "" and none give none; native or microvm are errors
//     that also wrap ErrSandboxDisabled.
//   - microvm named: microvm, or an error when no VM can start; never
//     native in its place. While the microvm probe runs it waits for the
//     verdict, bounded by ctx (ctx ending first: an error wrapping
//     ErrMicroVMProbing).
//   - native named: native, or an error when the host has none; never a
//     native badge on the host.
//   - "": Options.DefaultBackend; a microvm default waits for the
//     microvm probe as above, and one that cannot start falls back to
//     native with a log line; native falls back to none
//     when the host offers no native sandbox ("on" never requires one).
//
// Any other value is a *SpecError for the field "backend".
func (rt *Runtime) Choose(ctx context.Context, requested Backend) (Backend, error) {
	switch requested {
	case "", BackendNone, BackendNative, BackendMicroVM:
	default:
		return "", &SpecError{"backend", fmt.Sprintf("unknown backend %q; one of none, native, microvm", requested)}
	}
	if !rt.SandboxOn() {
		if requested == "" || requested == BackendNone {
			return BackendNone, nil
		}
		return "", fmt.Errorf("%w: backend %s refused: %w", ErrBackendUnavailable, requested, ErrSandboxDisabled)
	}
	switch requested {
	case BackendNone:
		return BackendNone, nil
	case BackendMicroVM:
		ok, note, err := rt.microVMVerdict(ctx)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("%w: microvm requested, but this host cannot start a VM (%s); not falling back to native", ErrBackendUnavailable, note)
		}
		return BackendMicroVM, nil
	case BackendNative:
		if !rt.probe.Available {
			return "", fmt.Errorf("%w: native requested, but %s", ErrBackendUnavailable, rt.probe.Note)
		}
		return BackendNative, nil
	}
	pref := rt.opts.DefaultBackend
	if pref == BackendMicroVM {
		ok, note, err := rt.microVMVerdict(ctx)
		if err != nil {
			return "", err
		}
		if ok {
			return BackendMicroVM, nil
		}
		rt.log.Info("default backend microvm unavailable; falling back to native", "reason", note)
		pref = BackendNative
	}
	if pref == BackendNone {
		return BackendNone, nil
	}
	if !rt.probe.Available {
		return BackendNone, nil
	}
	return BackendNative, nil
}

// Launch implements Port: Start, then the wait for the sandbox to be
// warm. ctx bounds the start only. A start that fails returns its error
// (typed: ErrUnenforceable, ErrBackendUnavailable, ...) and leaves no
// sandbox; a sandbox destroyed while starting is ErrClosed after Close,
// else a *TransitionError. The Handle's Backend is the backend that
// really runs.
func (rt *Runtime) Launch(ctx context.Context, spec Spec, backend Backend) (Sandbox, error) {
	sb, err := rt.Start(ctx, spec, backend)
	if err != nil {
		return nil, err
	}
	s, ok := sb.(*session)
	if !ok {
		return sb, nil // an external microVM backend's: started already
	}
	<-s.bootDone // ctx bounds the start itself
	s.mu.Lock()
	st, bootErr := s.state, s.bootErr
	s.mu.Unlock()
	switch st {
	case StateError:
		s.Destroy(context.WithoutCancel(ctx))
		if bootErr == nil {
			bootErr = fmt.Errorf("sandbox %q failed: %s", spec.SessionID, s.Handle().Error)
		}
		return nil, bootErr
	case StateDestroyed:
		rt.mu.Lock()
		closed := rt.closed
		rt.mu.Unlock()
		if closed {
			return nil, ErrClosed
		}
		return nil, fmt.Errorf("sandbox %q destroyed while starting: %w", spec.SessionID, &TransitionError{From: StateDestroyed, To: StateWarm})
	}
	return s, nil
}

// Start implements Port. It validates spec (a *SpecError), chooses the
// backend (see Choose) and reserves the session id (see Port.Launch for
// the errors) before it returns; the sandbox, registered at once in
// StateCreated, then starts in the background (see boot). A sandbox of an
// external microVM backend (an Options.MicroVM that is not the port's
// own) cannot be observed while it starts: Start launches it before
// returning, as Launch.
func (rt *Runtime) Start(ctx context.Context, spec Spec, backend Backend) (Sandbox, error) {
	if err := Validate(spec); err != nil {
		return nil, err
	}
	spec = normalize(spec)
	b, err := rt.Choose(ctx, backend)
	if err != nil {
		return nil, err
	}
	if err := rt.mem.check(spec, b); err != nil {
		return nil, err
	}
	if err := precheckLaunch(rt, spec, b); err != nil {
		return nil, err
	}
	if b != BackendNone {
		// Before anything of the session runs: from now on a link in its
		// write roots may be the session's.
		if err := rt.written.record(spec); err != nil {
			return nil, err
		}
	}
	creds, shown, err := rt.sessionCredentials(spec, b)
	if err != nil {
		return nil, err
	}
	// From here on only the Set holds the values: the session keeps and
	// shows the redacted spec.
	spec.Credentials = spec.Credentials.Redacted()
	if _, own := rt.opts.MicroVM.(microVMRunner); b == BackendMicroVM && !own {
		return rt.launchForeign(ctx, spec)
	}
	s := newSession(rt, spec, b)
	s.creds, s.credEnv = creds, shown
	bootCtx, cancel := context.WithCancel(ctx)
	s.bootCancel, s.bootDone = cancel, make(chan struct{})
	if err := rt.reserve(spec.SessionID, s); err != nil {
		cancel()
		return nil, err
	}
	go rt.boot(bootCtx, cancel, s)
	return s, nil
}

// boot starts s's backend: it runs in its own goroutine, ends with
// s.started and closes s.bootDone. ctx is cancelled by Destroy.
func (rt *Runtime) boot(ctx context.Context, cancel context.CancelFunc, s *session) {
	defer close(s.bootDone)
	defer cancel()
	var r runner
	var err error
	switch s.backend {
	case BackendNone:
		r, err = launchNone(s.spec)
	case BackendNative:
		r, err = launchNative(ctx, rt, s)
	case BackendMicroVM:
		// The port's own microvm backend: the session is this port's,
		// like native's.
		r, err = rt.opts.MicroVM.(microVMRunner).launchRunner(ctx, rt, s, rt.egressLists(s.spec))
	}
	s.started(r, err)
	if err == nil {
		rt.log.Debug("sandbox launched", "session", s.id, "backend", string(s.backend))
	}
}

// microVMRunner is implemented by the port's own MicroVMLauncher
// (NewMicroVMLauncher): it runs a session of this Runtime, so that the
// session's states, exec events, Kill, Signal and Lookup are the same
// code as native's.
type microVMRunner interface {
	launchRunner(ctx context.Context, rt *Runtime, s *session, egress EgressLists) (runner, error)
}

func (rt *Runtime) egressLists(spec Spec) EgressLists {
	r := EgressRules(rt.baseline, spec.NetworkEnabled, spec.EgressAllowlist)
	return EgressLists{Allowed: r.Allowed, Denied: r.Denied}
}
