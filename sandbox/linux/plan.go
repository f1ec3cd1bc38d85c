// Package linux is the Linux backend: it turns a compiled policy into a
// bubblewrap command line, runs the command under it with the project's
// own binary as the sandbox's PID 1, and cleans up after it.
package linux

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/srt-go/srt/policy"
)

// OpKind is one bubblewrap filesystem operation.
type OpKind int

const (
	// OpROBind is --ro-bind SRC DST.
	OpROBind OpKind = iota
	// OpBind is --bind SRC DST.
	OpBind
	// OpTmpfs is --tmpfs DST: an empty directory, made read-only at the end
	// by an OpRemountRO unless it is the sandbox's TMPDIR.
	OpTmpfs
	// OpRemountRO is --remount-ro DST.
	OpRemountRO
	// OpSymlink is --symlink SRC DST: a symbolic link at DST whose target
	// is SRC, as written (a confined view's /bin -> usr/bin).
	OpSymlink
)

// Op is one filesystem operation, in the order bubblewrap must apply it.
type Op struct {
	Kind     OpKind
	Src, Dst string
	// Rule is the policy rule the operation enforces, for debug output.
	Rule string
}

// Args returns the bubblewrap arguments for the operation.
func (o Op) Args() []string {
	switch o.Kind {
	case OpROBind:
		return []string{"--ro-bind", o.Src, o.Dst}
	case OpBind:
		return []string{"--bind", o.Src, o.Dst}
	case OpTmpfs:
		return []string{"--tmpfs", o.Dst}
	case OpSymlink:
		return []string{"--symlink", o.Src, o.Dst}
	default:
		return []string{"--remount-ro", o.Dst}
	}
}

// Placeholder is a protected path that does not exist yet inside a write
// root. Something must exist there to mount over, so it is created on the
// host (an empty file or directory) before the sandbox starts and removed
// after it ends.
type Placeholder struct {
	// Path is the first missing component of the protected path.
	Path string
	// Dir says to create a directory rather than an empty file.
	Dir bool
	// Content is what a file placeholder holds; usually nothing.
	Content string
	// Rule is the rule that protects it.
	Rule string
}

// Plan is the filesystem side of a sandbox: the placeholders to create and
// the mount operations, in order.
type Plan struct {
	Placeholders []Placeholder
	Ops          []Op
}

// mandatoryDirNames are the protected names that are directories, so that a
// missing one gets a directory placeholder.
var mandatoryDirNames = []string{".vscode", ".idea", ".claude", "commands", "agents", "hooks", ".git", "modules", "worktrees", ".ssh",
	".config", "git", "fish", "autostart", "systemd"}

// placeholderContent is what a file placeholder must hold for programs to
// keep working: git fails on an empty commondir but reads "." as "this
// directory".
var placeholderContent = map[string]string{"commondir": ".\n",
	// An empty JSON file is an error for srt and the agents; {} means
	// "no settings", as a missing file does.
	".srt-settings.json": "{}\n", "settings.json": "{}\n", "settings.local.json": "{}\n", ".claude.json": "{}\n"}

// node is one path the plan must decide a mount for.
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
}

// PlanMounts computes the mount operations that enforce p. The order is the
// security argument, since bwrap(1) applies filesystem options "in the
// order they are given" and a mount hides everything mounted below it
// before:
//
//  1. --ro-bind / /: everything read-only; later steps only change the
//     subtrees they name.
//  2. One operation per interesting path (write roots, denies, re-allowed
//     reads, pinned parents), parents strictly before children, each giving
//     the path the state the policy computes for it (readable? writable?).
//     A denied directory becomes an empty tmpfs, a denied file /dev/null
//     (bound nodev, so opening it fails with EACCES).
//  3. --remount-ro for each tmpfs, after everything inside it is mounted.
//
// Every source is a host path resolved by the policy, and bwrap resolves
// sources in the host's view, so a bind always shows host content, never
// an earlier step's.
func PlanMounts(p *policy.Policy) Plan { return planMounts(p, false) }

// planMounts is PlanMounts; with creation-time name rules on
// (CreationRules), a protected name that does not exist gets no
// placeholder and no mount: its creation is refused when it is tried.
func planMounts(p *policy.Policy, creationRules bool) Plan {
	if p.FilesystemDisabled {
		return Plan{Ops: []Op{{Kind: OpBind, Src: "/", Dst: "/", Rule: "filesystem.disabled"}}}
	}
	if p.View != nil {
		return planView(p) // a confined sandbox: see view.go
	}
	var plan Plan
	nodes := map[string]*node{}
	// placeholders are read-only whatever the rules around them say: a
	// placeholder directory stands for a protected path below it (.claude
	// for .claude/commands, .git for .git/hooks), and a deny strictly below
	// a path does not make the path itself read-only, so without this the
	// placeholder would inherit its write root's state, get no mount, and
	// the protected path could be created in it.
	placeholders := map[string]bool{}
	add := func(path string, kind policy.Kind, rule string, pin bool) {
		if skipPath(path) {
			return
		}
		if n, ok := nodes[path]; ok {
			n.pin = n.pin || pin
			if n.kind == policy.Missing {
				n.kind = kind
			}
			return
		}
		nodes[path] = &node{path: path, kind: kind, rule: rule, pin: pin}
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
		kind := d.Kind
		if kind == policy.Missing && creationRules {
			continue
		}
		if kind == policy.Missing {
			ph := placeholderFor(d, root)
			if !slices.ContainsFunc(plan.Placeholders, func(o Placeholder) bool { return o.Path == ph.Path }) {
				plan.Placeholders = append(plan.Placeholders, ph)
			}
			kind = policy.File
			if ph.Dir {
				kind = policy.Dir
			}
			add(ph.Path, kind, d.Rule, false)
			placeholders[ph.Path] = true
		} else {
			add(d.Resolved, kind, d.Rule, false)
		}
		pinParents(d, root, add)
	}
	for _, d := range p.DenyRead {
		if root := writeRootOf(p, d.Resolved); root != "" {
			pinParents(d, root, add)
		}
	}

	ordered := make([]*node, 0, len(nodes))
	for _, n := range nodes {
		ordered = append(ordered, n)
	}
	slices.SortFunc(ordered, func(a, b *node) int {
		if da, db := depth(a.path), depth(b.path); da != db {
			return da - db
		}
		return strings.Compare(a.path, b.path)
	})

	type state struct{ read, write bool }
	mounted := map[string]state{"/": {true, false}}
	inherited := func(path string) state {
		for a := filepath.Dir(path); ; a = filepath.Dir(a) {
			if s, ok := mounted[a]; ok {
				return s
			}
			if a == "/" {
				return mounted["/"]
			}
		}
	}
	var tmpfs []string
	for _, n := range ordered {
		if n.kind == policy.Missing {
			continue
		}
		want := state{p.Readable(n.path), p.Writable(n.path) && !placeholders[n.path]}
		have := inherited(n.path)
		switch {
		case !want.read:
			if !have.read {
				continue // an ancestor hides it already
			}
			if n.kind == policy.Dir {
				plan.Ops = append(plan.Ops, Op{Kind: OpTmpfs, Dst: n.path, Rule: n.rule})
				tmpfs = append(tmpfs, n.path)
			} else {
				plan.Ops = append(plan.Ops, Op{Kind: OpROBind, Src: "/dev/null", Dst: n.path, Rule: n.rule})
			}
		case want == have && !n.pin:
			continue
		case want.write:
			plan.Ops = append(plan.Ops, Op{Kind: OpBind, Src: n.path, Dst: n.path, Rule: n.rule})
		default:
			plan.Ops = append(plan.Ops, Op{Kind: OpROBind, Src: n.path, Dst: n.path, Rule: n.rule})
		}
		mounted[n.path] = want
	}
	for _, t := range tmpfs {
		plan.Ops = append(plan.Ops, Op{Kind: OpRemountRO, Dst: t, Rule: "read-only empty directory"})
	}
	return plan
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
func pinParents(d policy.Path, root string, add func(path string, kind policy.Kind, rule string, pin bool)) {
	for a := filepath.Dir(d.Resolved); a != root && policy.Within(a, root); a = filepath.Dir(a) {
		if _, err := lstatKind(a); err == nil {
			add(a, policy.Dir, "pin: parent of "+d.Rule, true)
		}
	}
}

// skipPath reports paths bubblewrap provides itself (--dev, --proc); rules
// under them are not bind mounts.
func skipPath(path string) bool {
	return policy.Within(path, "/dev") || policy.Within(path, "/proc")
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
// or the name is a directory, else an empty file.
func placeholderFor(d policy.Path, root string) Placeholder {
	first := d.Resolved
	for a := filepath.Dir(first); a != root && policy.Within(a, root); a = filepath.Dir(a) {
		if _, err := lstatKind(a); err == nil {
			break
		}
		first = a
	}
	dir := first != d.Resolved || slices.Contains(mandatoryDirNames, filepath.Base(first)) ||
		d.IsDir || strings.HasSuffix(d.Literal, "/")
	ph := Placeholder{Path: first, Dir: dir, Rule: d.Rule}
	if !dir {
		ph.Content = placeholderContent[filepath.Base(first)]
	}
	return ph
}

func depth(path string) int {
	if path == "/" {
		return 0
	}
	return strings.Count(path, "/")
}
