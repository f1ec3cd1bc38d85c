package linux

import (
	"fmt"

	"github.com/srt-go/srt/sandbox/linux/fsplan"
	"github.com/srt-go/srt/sandbox/linux/guardian"
)

// Placeholders are empty files and directories held on the host at
// protected paths that do not exist yet, for a backend that can only make
// read-only what exists (the microvm guest pins them with read-only bind
// mounts). The guardian process owns them, as for the native backend: they
// are removed by Release, or by the guardian if this process dies, and
// shared with any other sandbox that uses the same ones.
type Placeholders struct{ g *guardian.Client }

// NewPlaceholders creates the plan's placeholders (fsplan.Plan's: each
// the first missing component of a protected path, a directory or a file
// with its content). It fails, creating nothing that stays, when any
// cannot be made.
func NewPlaceholders(phs []fsplan.Placeholder) (*Placeholders, error) {
	if len(phs) == 0 {
		return &Placeholders{}, nil
	}
	stateDir, err := StateDir()
	if err != nil {
		return nil, err
	}
	g, err := startGuardian(stateDir)
	if err != nil {
		return nil, err
	}
	if err := g.Hold(phs); err != nil {
		g.Finish()
		return nil, fmt.Errorf("placeholders: %w", err)
	}
	return &Placeholders{g: g}, nil
}

// Release removes the placeholders no other sandbox holds. Call it once
// whatever used them has stopped; it is idempotent.
func (p *Placeholders) Release() error {
	if p == nil || p.g == nil {
		return nil
	}
	g := p.g
	p.g = nil
	return g.Finish()
}

// startGuardian starts the guardian for one sandbox (sandbox/linux/guardian)
// once this program is known to dispatch its role.
func startGuardian(stateDir string) (*guardian.Client, error) {
	if err := checkDispatched(); err != nil {
		return nil, err
	}
	return guardian.Start(stateDir)
}
