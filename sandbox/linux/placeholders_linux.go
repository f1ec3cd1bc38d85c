package linux

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

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

// NewPlaceholders creates a placeholder at each path (absolute, resolved),
// and at each of its missing parent directories. A path whose base is a
// protected directory name (.git, .vscode, hooks, …) becomes a directory,
// any other an empty file (git's commondir holds "."). It fails, creating
// nothing that stays, when any cannot be made.
func NewPlaceholders(paths []string) (*Placeholders, error) {
	stateDir, err := StateDir()
	if err != nil {
		return nil, err
	}
	var reqs []fsplan.Placeholder
	seen := map[string]bool{}
	for _, p := range paths {
		// The chain of missing components, from the top one down.
		var chain []string
		for a := filepath.Clean(p); a != "/"; a = filepath.Dir(a) {
			if _, err := os.Lstat(a); err == nil {
				break
			}
			chain = append(chain, a)
		}
		for i, a := range chain {
			if seen[a] {
				continue
			}
			seen[a] = true
			dir := i > 0 || slices.Contains(fsplan.DirNames, filepath.Base(a))
			r := fsplan.Placeholder{Path: a, Dir: dir}
			if !dir {
				r.Content = fsplan.PlaceholderContent(filepath.Base(a))
			}
			reqs = append(reqs, r)
		}
	}
	if len(reqs) == 0 {
		return &Placeholders{}, nil
	}
	g, err := startGuardian(stateDir)
	if err != nil {
		return nil, err
	}
	if err := g.Hold(reqs); err != nil {
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
