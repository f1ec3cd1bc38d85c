package fsplan

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/srt-go/srt/policy"
)

// DirNames are the protected names that are directories, so that a
// missing one gets a directory placeholder.
var DirNames = []string{".vscode", ".idea", ".claude", "commands", "agents", "hooks", ".git", ".hg", "modules", "worktrees", ".ssh",
	".config", "git", "fish", "autostart", "systemd"}

// placeholderContent is what a file placeholder must hold for programs to
// keep working: git fails on an empty commondir but reads "." as "this
// directory"; an empty JSON file is an error for srt and the agents,
// where {} means "no settings", as a missing file does.
var placeholderContent = map[string]string{"commondir": ".\n",
	".srt-settings.json": "{}\n", "settings.json": "{}\n", "settings.local.json": "{}\n", ".claude.json": "{}\n"}

// PlaceholderContent is what a file placeholder named base holds.
func PlaceholderContent(base string) string { return placeholderContent[base] }

// node is one host path the plan must decide a mount for.
type node struct {
	path string
	kind policy.Kind
	rule string
	// pin forces a self-bind even when the state is inherited, so that the
	// directory is a mount point and cannot be renamed or removed: a
	// protected path's parents must not move, or the protected name could be
	// created again where it was (seed 003: renaming a parent must not get
	// around a deny).
	pin bool
	// placeholder says the node stands for a protected path below or at it
	// that does not exist yet: it is read-only whatever the rules around
	// it say. A placeholder directory stands for a protected path below it
	// (.claude for .claude/commands, .git for .git/hooks), and a deny
	// strictly below a path does not make the path itself read-only, so
	// without this the placeholder would inherit its write root's state,
	// get no mount, and the protected path could be created in it.
	placeholder bool
}

// state is what the sandbox may do at a path.
type state struct{ read, write bool }

// want is the state the policy gives the node.
func (n *node) want(p *policy.Policy) state {
	return state{p.Readable(n.path), p.Writable(n.path) && !n.placeholder}
}

// decide returns every host path that needs a mount of its own, sorted
// parents first (by depth, then name), and the placeholders to create:
// write roots, denies, re-allowed reads, and the pinned parents of denies
// inside write roots. A missing protected path inside a write root gets a
// placeholder, unless creationRules: its creation is then refused when it
// is tried, and it needs no mount. Each path is decided here once, for
// every view.
func decide(p *policy.Policy, creationRules bool) ([]*node, []Placeholder) {
	nodes := map[string]*node{}
	var placeholders []Placeholder
	add := func(path string, kind policy.Kind, rule string, pin bool) *node {
		if n, ok := nodes[path]; ok {
			n.pin = n.pin || pin
			if n.kind == policy.Missing {
				n.kind = kind
			}
			return n
		}
		n := &node{path: path, kind: kind, rule: rule, pin: pin}
		nodes[path] = n
		return n
	}
	for _, w := range p.AllowWrite {
		add(w.Resolved, w.Kind, w.Rule, false)
	}
	for _, d := range p.DenyRead {
		add(d.Resolved, d.Kind, d.Rule, false)
	}
	for _, a := range p.AllowRead {
		add(a.Resolved, a.Kind, a.Rule, false)
	}
	for _, d := range p.DenyWrite {
		if hiddenAlready(p, d) {
			continue
		}
		root := writeRootOf(p, d.Resolved)
		if root == "" {
			continue // read-only already, cannot be created or renamed
		}
		switch {
		case d.Kind != policy.Missing:
			add(d.Resolved, d.Kind, d.Rule, false)
		case !creationRules:
			ph, ok := placeholderFor(d, root)
			if !ok {
				break // under a file: pinning the file (below) is enough
			}
			if !slices.ContainsFunc(placeholders, func(o Placeholder) bool { return o.Path == ph.Path }) {
				placeholders = append(placeholders, ph)
			}
			kind := policy.File
			if ph.Dir {
				kind = policy.Dir
			}
			add(ph.Path, kind, d.Rule, false).placeholder = true
		}
		pinParents(d, root, add)
	}
	for _, d := range p.DenyRead {
		if root := writeRootOf(p, d.Resolved); root != "" {
			pinParents(d, root, add)
		}
	}
	out := make([]*node, 0, len(nodes))
	for _, n := range nodes {
		if n.kind != policy.Missing {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b *node) int {
		if da, db := depth(a.path), depth(b.path); da != db {
			return da - db
		}
		return strings.Compare(a.path, b.path)
	})
	return out, placeholders
}

// hiddenAlready reports whether the deny d needs no mount of its own
// because the sandbox cannot see it: it exists and cannot be read, or its
// directory cannot be read. A missing path that cannot be read but whose
// directory can (a missing denyRead, which policy.Compile also makes a
// write-deny) still needs its placeholder, or the sandbox could create it.
func hiddenAlready(p *policy.Policy, d policy.Path) bool {
	return !p.Readable(filepath.Dir(d.Resolved)) || d.Kind != policy.Missing && !p.Readable(d.Resolved)
}

// pinParents pins, through add, every existing directory strictly
// between write root root and the deny d: each becomes a mount point, so
// that it cannot be renamed or removed during the run (rename(2),
// rmdir(2): EBUSY; the creation-time rules check the sandbox's mount
// points before a rename). Otherwise a run could move a parent away and
// the next run would find nothing at the deny's path to mount over, while
// the protected file sits readable or writable under its new name (seed
// 003: renaming a parent must not get around a deny). A deny that is
// missing still gets its existing parents pinned, so the path stays where
// the rule names it.
func pinParents(d policy.Path, root string, add func(path string, kind policy.Kind, rule string, pin bool) *node) {
	for a := filepath.Dir(d.Resolved); a != root && policy.Within(a, root); a = filepath.Dir(a) {
		if _, err := os.Lstat(a); err == nil {
			add(a, policy.Dir, "pin: parent of "+d.Rule, true)
		}
	}
}

// writeRootOf returns the longest write root containing path, or "" when
// path cannot be written or created (outside every root, or under a deny
// that is an ancestor).
func writeRootOf(p *policy.Policy, path string) string {
	root := ""
	for _, w := range p.AllowWrite {
		if policy.Within(path, w.Resolved) && len(w.Resolved) > len(root) {
			root = w.Resolved
		}
	}
	if root == "" {
		return ""
	}
	for _, d := range p.DenyWrite {
		if d.Resolved != path && policy.Within(path, d.Resolved) && d.Kind != policy.Missing {
			return ""
		}
	}
	return root
}

// placeholderFor returns what to create for a missing protected path: an
// empty directory at the first missing component when a parent is missing
// or the name is a directory, else an empty file. ok is false when the
// deepest existing ancestor is not a directory: nothing can be created
// below it, and pinParents makes it a mount point, so it cannot be
// replaced by one either.
func placeholderFor(d policy.Path, root string) (_ Placeholder, ok bool) {
	first := d.Resolved
	for a := filepath.Dir(first); policy.Within(a, root); a = filepath.Dir(a) {
		if fi, err := os.Lstat(a); err == nil {
			if !fi.IsDir() {
				return Placeholder{}, false
			}
			break
		}
		if a == root {
			break
		}
		first = a
	}
	dir := first != d.Resolved || slices.Contains(DirNames, filepath.Base(first)) ||
		d.IsDir || strings.HasSuffix(d.Literal, "/")
	ph := Placeholder{Path: first, Dir: dir, Rule: d.Rule}
	if !dir {
		ph.Content = placeholderContent[filepath.Base(first)]
	}
	return ph, true
}

func depth(path string) int {
	if path == "/" {
		return 0
	}
	return strings.Count(path, "/")
}

// PinnedParents returns the existing host directories that a sandbox of
// p with the creation-time rules makes mount points of their own
// (pinParents: every directory strictly between a write root and a deny
// inside it), parents first, for a backend that places its own mounts:
// the microvm guest binds each on itself, in the guest and in QEMU's
// view, so that it cannot be renamed or removed during the run. One home
// for the rule: it is decide's.
func PinnedParents(p *policy.Policy) []string {
	nodes, _ := decide(p, true)
	var out []string
	for _, n := range nodes {
		if n.pin && n.kind == policy.Dir {
			out = append(out, n.path)
		}
	}
	return out
}
