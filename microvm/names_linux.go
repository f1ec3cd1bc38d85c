package microvm

import (
	"path/filepath"
	"slices"

	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/sandbox/linux/fsplan"
)

// namesProtected returns the guest paths that must stay read-only in
// QEMU's own view under cfg.Names (Config.Names): every DenyWrite entry of
// the policy that exists inside a writable share, at the guest path that
// share shows it. The guest's supervisor refuses them too, but the guest
// kernel is less trusted than the host: bound read-only on the host
// (vm_linux.go, protectedHost), they stay so whatever the guest does.
// Entries already in cfg.ProtectedPaths are not repeated; missing ones
// are the supervisor's alone (no placeholder on the host).
func namesProtected(cfg Config) []string {
	if cfg.Names == nil || cfg.Names.FilesystemDisabled {
		return nil
	}
	var out []string
	for _, d := range cfg.Names.DenyWrite {
		if d.Kind == policy.Missing || d.Resolved == "" {
			continue
		}
		g, ok := guestPathOf(cfg.Shares, d.Resolved)
		if !ok || slices.Contains(cfg.ProtectedPaths, g) || slices.Contains(out, g) {
			continue
		}
		out = append(out, g)
	}
	return out
}

// guestPathOf returns the guest path at which the deepest writable share
// holding host path h shows it; ok is false when no writable share holds
// it (a read-only share keeps it read-only already). Share host paths are
// resolved as the policy's paths are.
func guestPathOf(shares []Share, h string) (string, bool) {
	best := -1
	for i, s := range shares {
		if s.ReadOnly {
			continue
		}
		if policy.Within(h, shareHost(s)) && (best < 0 || len(shareHost(s)) > len(shareHost(shares[best]))) {
			best = i
		}
	}
	if best < 0 {
		return "", false
	}
	rel, err := filepath.Rel(shareHost(shares[best]), h)
	if err != nil {
		return "", false
	}
	return filepath.Join(shares[best].GuestPath, rel), true
}

// shareHost is the resolved host directory of share s: the spelling the
// policy's rules are written in (policy.Resolve), for wire.Share.Host.
func shareHost(s Share) string { return policy.Resolve(s.HostPath) }

// namesPinned returns the guest paths of the directories a native sandbox
// of cfg.Names pins (fsplan.PinnedParents: those between a write root and
// a deny inside it) that lie in a writable share, parents first. Each is
// bound on itself in QEMU's view (host side: QEMU's rename or rmdir of it
// fails with EBUSY whatever the guest asks) and in the guest (the
// supervisor refuses to rename a mount point, as native). Without them a
// workload could move a directory holding a protected file away: the
// any-depth patterns still protect the file at its new place, but its
// path would be free for the next run.
func namesPinned(cfg Config) []string {
	if cfg.Names == nil || cfg.Names.FilesystemDisabled {
		return nil
	}
	var out []string
	for _, h := range fsplan.PinnedParents(cfg.Names) {
		if g, ok := guestPathOf(cfg.Shares, h); ok && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}
