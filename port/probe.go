package port

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// MicroVMLauncher is the microVM backend's hook (seed 000, "VM cloisonnée"):
// the microvm package implements it and srtd passes it in Options.MicroVM.
// Nil means the host cannot start a VM.
type MicroVMLauncher interface {
	// Probe reports, once at start-up, whether a VM can start on this host,
	// with a note saying what runs it or what is missing. The port runs it
	// in the background (see MicroVMState); ctx ends when the port closes,
	// and Probe must then return promptly, leaving no process behind.
	Probe(ctx context.Context) (ok bool, note string)
	// Launch starts a sandbox in a VM for a validated, normalised spec.
	// egress holds the session's allow and deny lists (EgressRules); the
	// VM's own network must enforce them. The returned Sandbox's Handle
	// reports BackendMicroVM.
	Launch(ctx context.Context, spec Spec, egress EgressLists) (Sandbox, error)
}

// EgressLists are a session's resolved egress lists, for backends that
// run their own proxies.
type EgressLists struct {
	Allowed, Denied []string
}

// MicroVMState is Probe.MicroVMState: how far the microvm part of the
// probe has got. The seed's probe runs once at start-up (seed 000,
// "Résultats de la sonde"), but nothing makes the server wait for it: the
// native part is answered before New returns, the microvm part (a test
// boot, seconds under emulation) in the background.
type MicroVMState string

const (
	// MicroVMProbing: the test boot is still running. MicroVMAvailable is
	// false and MicroVMNote is "probing" meanwhile; a launch that needs
	// the verdict waits for it.
	MicroVMProbing MicroVMState = "probing"
	// MicroVMAvailable: a VM can start here (MicroVMAvailable true).
	MicroVMAvailable MicroVMState = "available"
	// MicroVMUnavailable: no VM can start here; MicroVMNote says why.
	MicroVMUnavailable MicroVMState = "unavailable"
)

// ErrMicroVMProbing is wrapped, with ErrBackendUnavailable (the server
// answers 503, field "backend"), by the error of a launch that needed the
// microvm verdict (an explicit microvm, or a default of microvm) and whose
// ctx ended while the microvm probe was still running.
var ErrMicroVMProbing = errors.New("the microvm probe (a test boot) is still running; retry once GET /v1/probe says microvmState available or unavailable")

// microVMProbe is the microvm part of a Runtime's probe: a verdict set
// once, before done is closed, and never changed.
type microVMProbe struct {
	done   chan struct{}
	cancel context.CancelFunc // nil when the verdict came at once
	ok     bool
	note   string
}

func (vp *microVMProbe) finish(ok bool, note string) {
	vp.ok, vp.note = ok, note
	close(vp.done)
}

// StartupLine is the server's one start-up log line (seed 000, "Résultats
// de la sonde"): "agent sandbox ON <note>", "no OS-native agent sandbox on
// this host <hint>", or "agent sandbox DISABLED by --sandbox off". It
// reads the native part of p only.
func StartupLine(p Probe, sandboxOn bool) string {
	switch {
	case !sandboxOn:
		return "agent sandbox DISABLED by --sandbox off"
	case p.Available:
		return "agent sandbox ON " + p.Note
	}
	hint := p.InstallHint
	if hint == "" {
		hint = p.Note
	}
	return "no OS-native agent sandbox on this host " + hint
}

// probeHost runs the native probe (probe_linux.go, probe_darwin.go,
// probe_other.go) now and starts vm's in the background, on a context of
// its own that microVMProbe.stop cancels (ctx's values, not its end: ctx
// bounds the native probe only). A launcher whose verdict is known
// without probing (none, MicroVMDisabled) is answered at once. The
// returned Probe's microvm fields are empty: microVMProbe.fill sets them.
//
// fixed, for tests, replaces the host's probe: whole, or, when its
// MicroVMState is MicroVMProbing, its native part only, the microvm part
// being vm's as on a host.
func probeHost(ctx context.Context, bwrapPath string, vm MicroVMLauncher, fixed *Probe, log *slog.Logger) (Probe, *microVMProbe) {
	vp := &microVMProbe{done: make(chan struct{})}
	var p Probe
	switch {
	case fixed != nil && fixed.MicroVMState != MicroVMProbing:
		vp.finish(fixed.MicroVMAvailable, fixed.MicroVMNote)
		p = *fixed
		p.MicroVMAvailable, p.MicroVMNote, p.MicroVMState = false, "", ""
		return p, vp
	case fixed != nil:
		p = *fixed
	default:
		p = probeNative(ctx, bwrapPath)
	}
	p.MicroVMAvailable, p.MicroVMNote, p.MicroVMState = false, "", ""
	switch vm.(type) {
	case nil:
		vp.finish(false, "no microVM runtime in this build")
		return p, vp
	case disabledVM:
		vp.finish(vm.Probe(ctx))
		return p, vp
	}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	vp.cancel = cancel
	go func() {
		defer cancel()
		ok, note := vm.Probe(pctx)
		if pctx.Err() != nil {
			ok, note = false, "not probed: the port closed while the test boot ran"
		}
		log.Debug("microvm probe done", "available", ok, "note", note)
		vp.finish(ok, note)
	}()
	return p, vp
}

// stop cancels a probe still running and waits, bounded by ctx, until it
// has ended (its test VM torn down).
func (vp *microVMProbe) stop(ctx context.Context) error {
	if vp.cancel != nil {
		vp.cancel()
	}
	select {
	case <-vp.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("microvm probe still running after it was cancelled: %w", ctx.Err())
	}
}

// fill sets p's microvm fields: the verdict or, while the test boot
// runs, MicroVMProbing with the note "probing". It never blocks.
func (vp *microVMProbe) fill(p *Probe) {
	select {
	case <-vp.done:
		p.MicroVMAvailable, p.MicroVMNote, p.MicroVMState = vp.ok, vp.note, MicroVMUnavailable
		if vp.ok {
			p.MicroVMState = MicroVMAvailable
		}
	default:
		p.MicroVMAvailable, p.MicroVMState, p.MicroVMNote = false, MicroVMProbing, "probing"
	}
}

// verdict waits, bounded by ctx, for the verdict: whether a VM can start
// and why. ctx ending first is an error wrapping ErrBackendUnavailable
// and ErrMicroVMProbing.
func (vp *microVMProbe) verdict(ctx context.Context, log *slog.Logger) (bool, string, error) {
	select {
	case <-vp.done:
		return vp.ok, vp.note, nil
	default:
	}
	log.Debug("launch waits for the microvm probe")
	select {
	case <-vp.done:
		return vp.ok, vp.note, nil
	case <-ctx.Done():
		return false, "", fmt.Errorf("%w: microvm: %w (%w)", ErrBackendUnavailable, ErrMicroVMProbing, context.Cause(ctx))
	}
}
