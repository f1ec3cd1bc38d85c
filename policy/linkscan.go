package policy

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// maxScan bounds the entries scanProtectedDirs looks at in all; a policy
// whose protected directories hold more is refused rather than half
// checked.
const maxScan = 200000

// scanSkipped are directories scanProtectedDirs does not enter: git's
// content-addressed data (objects are hard-linked by git clone --local
// and run nothing) and package trees that no host program runs from a
// protected directory's link.
var scanSkipped = map[string]bool{"objects": true, "lfs": true, "logs": true, "node_modules": true, "__pycache__": true}

// scanProtectedDirs looks inside every write-denied directory that a
// write root reaches (.git/hooks, .vscode, ~/.local/bin, ...): a mount
// makes the directory read-only, not what its entries lead to. A symbolic
// link in it whose target lies in a write root (a hook that is a link to
// ../../scripts/pre-commit, pipx's ~/.local/bin/black -> ../share/...)
// gets its target write-denied too; a regular file with other hard links
// refuses the run, since the other name reaches the same content
// (ErrUnenforceable). Found by an adversarial review: the host's next git
// commit ran a hook written through such a link.
func (p *Policy) scanProtectedDirs() error {
	seen := map[string]bool{}
	budget := maxScan
	var targets []Path
	var scan func(dir, rule string, depth int) error
	scan = func(dir, rule string, depth int) error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return unlistable(dir, err)
		}
		for _, e := range ents {
			if budget--; budget < 0 {
				return fmt.Errorf("%s: more than %d entries in the protected directories to check for links; refusing rather than check half: %w", rule, maxScan, ErrUnenforceable)
			}
			full := filepath.Join(dir, e.Name())
			switch {
			case e.Type()&fs.ModeSymlink != 0:
				t := makePath(full, rule+" (the target of "+full+")")
				if t.uncheckable != nil {
					return fmt.Errorf("%s: %w", rule, t.uncheckable)
				}
				if t.Kind != Missing && longestPrefix(p.AllowWrite, t.Resolved) >= 0 && longestPrefix(p.DenyWrite, t.Resolved) < 0 && !seen[t.Resolved] {
					seen[t.Resolved] = true
					targets = append(targets, t)
				}
			case e.Type().IsRegular():
				if fi, err := e.Info(); err == nil && links(fi) > 1 {
					return fmt.Errorf("%s: %s has %d hard links, and the other names reach the same file outside the protection; remove them (find -samefile) or copy the file: %w", rule, full, links(fi), ErrUnenforceable)
				}
			case e.IsDir() && depth < 8 && !scanSkipped[e.Name()]:
				if err := scan(full, rule, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, d := range p.DenyWrite {
		if d.Kind != Dir || longestPrefix(p.AllowWrite, d.Resolved) < 0 || seen[d.Resolved] {
			continue
		}
		seen[d.Resolved] = true
		if err := scan(d.Resolved, d.Rule, 0); err != nil {
			return err
		}
	}
	for i := range targets {
		targets[i].Literal = targets[i].Resolved // the link itself is in the protected directory
		targets[i].symlink = false
	}
	p.DenyWrite = append(p.DenyWrite, targets...)
	return nil
}
