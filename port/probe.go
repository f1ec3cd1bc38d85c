package port

import (
	"context"
)

// MicroVMLauncher is the microVM backend's hook (seed 000, "VM cloisonnée"):
// the microvm package implements it and srtd passes it in Options.MicroVM.
// Nil means the host cannot start a VM.
type MicroVMLauncher interface {
	// Probe reports, once at start-up, whether a VM can start on this host,
	// with a note saying what runs it or what is missing.
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

// StartupLine is the server's one start-up log line (seed 000, "Résultats
// de la sonde"): "agent sandbox ON <note>", "no OS-native agent sandbox on
// this host <hint>", or "agent sandbox DISABLED by --sandbox off".
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

// probeHost runs the platform probe (probe_linux.go, probe_darwin.go,
// probe_other.go) and the microVM hook's.
func probeHost(ctx context.Context, bwrapPath string, vm MicroVMLauncher) Probe {
	p := probeNative(ctx, bwrapPath)
	if vm == nil {
		p.MicroVMNote = "no microVM runtime in this build"
	} else {
		p.MicroVMAvailable, p.MicroVMNote = vm.Probe(ctx)
	}
	return p
}
