package policy

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// maxScan bounds the entries scanProtectedDirs looks at in all; a policy
// whose protected directories hold more is refused rather than half
// checked.
const maxScan = 50000

// scanDepth is how deep below a protected directory scanProtectedDirs
// looks: hooks and bin directories hold their links at the top, but
// dotfile managers link single files deep in editors' trees
// (.vim/pack/NAME/start/PLUGIN/plugin/FILE, .config/nvim/lua/...).
const scanDepth = 8

// scanSkipped are directories scanProtectedDirs does not enter: git's
// content-addressed data (objects are hard-linked by git clone --local
// and run nothing) and package trees.
var scanSkipped = map[string]bool{"objects": true, "lfs": true, "logs": true, "node_modules": true, "__pycache__": true}

// installTrees are the host-trusted directories that hold whole
// installations (interpreters, toolchains, editor servers): protected
// whole, not scanned, since their links point inside them and scanning
// them would cost a second a run (pyenv's 125,000 entries).
var installTrees = []string{".pyenv", ".rustup", ".nvm", ".sdkman", ".vscode-server", ".cursor-server",
	".local/lib/python", ".julia", ".gradle", ".sbt", ".terraform.d"}

// scanProtectedDirs looks inside every write-denied directory that a
// write root reaches (.git/hooks, .vscode, ~/.local/bin, ...) down to
// scanDepth: a mount makes the directory read-only, not what its entries
// lead to. A symbolic link in it whose target lies in a write root (a
// hook that is a link to ../../scripts/pre-commit, pipx's
// ~/.local/bin/black -> ../share/...) gets its target write-denied too;
// a regular file with a hard link outside the protected names refuses
// the run, since that name reaches the same content (ErrUnenforceable).
// Found by an adversarial review: the host's next git commit ran a hook
// written through such a link.
func (p *Policy) scanProtectedDirs(outside []Path) error {
	seen := map[string]bool{}
	budget := maxScan
	var targets []Path
	type inode struct {
		nlink      uint64
		names      map[string]bool // the protected names met
		path, rule string
	}
	inodes := map[[2]uint64]*inode{}
	note := func(full, rule string, fi fs.FileInfo) {
		id, ok := fileID(fi)
		if n := links(fi); !ok || n < 2 {
			return
		} else if inodes[id] == nil {
			inodes[id] = &inode{nlink: n, names: map[string]bool{}, path: full, rule: rule}
		}
		inodes[id].names[full] = true
	}
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
				t := makePath(full, OriginMandatory, rule+" (the target of "+full+")")
				if t.uncheckable != nil {
					return fmt.Errorf("%s: %w", rule, t.uncheckable)
				}
				// The target, present or not (a dangling hook link's
				// target could be made), and every link on the way
				// that lies in a write root: re-pointing one (hooks ->
				// scripts/hooks) would move the target.
				for _, l := range linksOnPath(full) {
					if l == full {
						continue // in the protected directory: read-only
					}
					if lp := makePath(l, OriginMandatory, rule+" (a link on the way from "+full+")"); p.creatable(lp.literalParent) && !seen[l] {
						seen[l] = true
						targets = append(targets, lp)
					}
				}
				if longestPrefix(p.AllowWrite, t.Resolved) >= 0 && longestPrefix(p.DenyWrite, t.Resolved) < 0 && !seen[t.Resolved] {
					seen[t.Resolved] = true
					if v := venvOf(t.Resolved, p); v != "" {
						// A virtualenv's entry point (pipx, uv tool): its
						// interpreter and modules run too.
						t = makePath(v, OriginMandatory, rule+" (the virtualenv of "+full+")")
						seen[v] = true
					}
					t.Literal = t.Resolved // the link itself is in the protected directory
					t.symlink = false
					targets = append(targets, t)
				}
			case e.Type().IsRegular():
				if fi, err := e.Info(); err == nil {
					note(full, rule, fi)
				}
			case e.IsDir() && depth < scanDepth && !scanSkipped[e.Name()]:
				if err := scan(full, rule, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	home := Resolve(p.Home)
	// Links on the way to a protected path that lie in a write root
	// (~/.gitconfig -> dotfiles/gitconfig -> gitconfig.linux, with the
	// dotfiles repository writable): re-pointing one would move the
	// protection off what the host program reads.
	for _, d := range append(slices.Clone(p.DenyWrite), outside...) {
		if d.Literal == d.Resolved {
			continue // no link on the way
		}
		for _, l := range linksOnPath(d.Literal) {
			if seen[l] || l == d.Literal && !p.creatable(filepath.Dir(l)) {
				continue
			}
			if lp := makePath(l, d.Origin, d.Rule+" (a link on the way)"); p.creatable(lp.literalParent) {
				seen[l] = true
				targets = append(targets, lp)
			}
		}
	}
	// Protected directories outside every write root (~/.local/bin when
	// only a project is writable) are read-only already, but their links
	// may lead into a write root.
	for _, d := range outside {
		if d.Kind == File {
			// A hard link to it may have a writable name.
			if fi, err := os.Stat(d.Resolved); err == nil {
				note(d.Resolved, d.Rule, fi)
			}
			continue
		}
		if d.Kind != Dir || seen[d.Resolved] || isInstallTree(home, d.Resolved) {
			continue
		}
		seen[d.Resolved] = true
		if err := scan(d.Resolved, d.Rule, 0); err != nil {
			return err
		}
	}
	for _, d := range p.DenyWrite {
		if d.Kind == File {
			if fi, err := os.Stat(d.Resolved); err == nil {
				note(d.Resolved, d.Rule, fi)
			}
			continue
		}
		if d.Kind != Dir || longestPrefix(p.AllowWrite, d.Resolved) < 0 || seen[d.Resolved] || isInstallTree(home, d.Resolved) {
			continue
		}
		seen[d.Resolved] = true
		if err := scan(d.Resolved, d.Rule, 0); err != nil {
			return err
		}
	}
	// A link's target counts among the protected names: a hard link to
	// it elsewhere reaches the same content (sixth adversarial review).
	for _, t := range targets {
		if t.Kind == File {
			if fi, err := os.Stat(t.Resolved); err == nil {
				note(t.Resolved, t.Rule, fi)
			}
		}
	}
	for _, n := range inodes {
		if uint64(len(n.names)) < n.nlink && p.sameDeviceAsWriteRoot(n.path) {
			return fmt.Errorf("%s: %s has %d hard links, and a name outside the protected ones reaches the same file; remove it (find -samefile) or copy the file: %w", n.rule, n.path, n.nlink, ErrUnenforceable)
		}
	}
	p.DenyWrite = append(p.DenyWrite, targets...)
	return nil
}

// sameDeviceAsWriteRoot reports whether path is on the file system of a
// write root: only there can a hard link to it have a writable name.
func (p *Policy) sameDeviceAsWriteRoot(path string) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	id, ok := fileID(fi)
	if !ok {
		return true
	}
	for _, w := range p.AllowWrite {
		if wi, err := os.Stat(w.Resolved); err == nil {
			if wid, ok := fileID(wi); !ok || wid[0] == id[0] {
				return true
			}
		}
	}
	return false
}

// linksOnPath returns the symbolic links met while resolving path, in
// order (path itself among them when it is one).
func linksOnPath(path string) []string {
	var out []string
	walkPath(path, func(_, link string, _ fs.FileInfo, _ bool) error {
		out = append(out, link)
		return nil
	})
	return out
}

// venvOf returns the virtualenv (a directory holding pyvenv.cfg) that
// path lies in, below a write root, or "".
func venvOf(path string, p *Policy) string {
	for d := filepath.Dir(path); longestPrefix(p.AllowWrite, d) >= 0; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, "pyvenv.cfg")); err == nil {
			return d
		}
		if d == "/" {
			break
		}
	}
	return ""
}

// isInstallTree reports whether dir is one of installTrees below home.
func isInstallTree(home, dir string) bool {
	for _, t := range installTrees {
		if p := filepath.Join(home, t); Within(dir, p) || strings.HasPrefix(dir, p) {
			return true
		}
	}
	return false
}
