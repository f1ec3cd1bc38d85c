// Package fsplan is the one filesystem planner of the Linux backend: it
// turns a compiled policy into the ordered mount steps bubblewrap applies,
// the placeholders to create first, and the mapping between the
// sandbox's paths and the host's. It is pure: it reads the host's tree
// (lstat, readlink) but changes nothing, and it runs in srt's own process
// before the sandbox exists.
//
// There is one planner for both views a sandbox can have. The host view
// (the srt command line, the library) maps the host's / onto the
// sandbox's /; the confined view (srtd's sessions, policy.CompileView)
// starts from an empty root and shows a few system directories and the
// View's mounts, each at its guest path. Both go through Build: every
// path is decided once (decide.go), then emitted once per mount that
// shows it (build.go), so a rule fixed for one view is fixed for the
// other.
package fsplan

import (
	"path/filepath"
	"strconv"
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
	// OpTmpfs is --tmpfs DST (after --perms Perms when Perms is set): an
	// empty directory, made read-only at the end by an OpRemountRO unless
	// it is the sandbox's TMPDIR or a confined view's /tmp.
	OpTmpfs
	// OpRemountRO is --remount-ro DST.
	OpRemountRO
	// OpSymlink is --symlink SRC DST: a symbolic link at DST whose target
	// is SRC, as written (a confined view's /bin -> usr/bin).
	OpSymlink
	// OpROBindTry is --ro-bind-try SRC DST: OpROBind that is skipped when
	// SRC does not exist.
	OpROBindTry
	// OpDev is --dev DST: a fresh minimal /dev.
	OpDev
	// OpProc is --proc DST: the sandbox's own procfs.
	OpProc
)

// Op is one filesystem operation, in the order bubblewrap must apply it.
type Op struct {
	Kind     OpKind
	Src, Dst string
	// Perms is the mode of an OpTmpfs's directory (--perms); 0 leaves
	// bubblewrap's default (0755).
	Perms uint32
	// Rule is the policy rule the operation enforces, for debug output.
	Rule string
	// Runtime marks the steps every sandbox gets whatever its policy
	// (/dev, /proc, srt's state directory, the private TMPDIR, a confined
	// view's system directories and /tmp): their sources are not policy
	// paths, so they are never another sandbox's placeholders.
	Runtime bool
}

// Args returns the bubblewrap arguments for the operation.
func (o Op) Args() []string {
	switch o.Kind {
	case OpROBind:
		return []string{"--ro-bind", o.Src, o.Dst}
	case OpBind:
		return []string{"--bind", o.Src, o.Dst}
	case OpTmpfs:
		if o.Perms != 0 {
			return []string{"--perms", "0" + strconv.FormatUint(uint64(o.Perms), 8), "--tmpfs", o.Dst}
		}
		return []string{"--tmpfs", o.Dst}
	case OpSymlink:
		return []string{"--symlink", o.Src, o.Dst}
	case OpROBindTry:
		return []string{"--ro-bind-try", o.Src, o.Dst}
	case OpDev:
		return []string{"--dev", o.Dst}
	case OpProc:
		return []string{"--proc", o.Dst}
	default:
		return []string{"--remount-ro", o.Dst}
	}
}

// Placeholder is a protected path that does not exist yet inside a write
// root. Something must exist there to mount over, so it is created on the
// host (an empty file or directory) before the sandbox starts and removed
// after it ends. With the creation-time name rules on there are none: the
// missing name's creation is refused when it is tried.
type Placeholder struct {
	// Path is the first missing component of the protected path, on the
	// host.
	Path string
	// Dir says to create a directory rather than an empty file.
	Dir bool
	// Content is what a file placeholder holds; usually nothing.
	Content string
	// Rule is the rule that protects it.
	Rule string
}

// Plan is the filesystem side of a sandbox: the placeholders to create,
// the mount operations in order, and where each host tree appears.
type Plan struct {
	Placeholders []Placeholder
	Ops          []Op
	// Mapping places host trees in the sandbox; see Mapping.Host.
	Mapping Mapping
	// Helper is the sandbox path of Options.Helper; "" without one.
	Helper string
}

// Mount shows the host tree Host at Guest inside the sandbox. Both are
// clean absolute paths; Host is resolved (no symbolic link in it).
type Mount struct {
	Host, Guest string
	// Rule is the rule that shows it ("bindMounts[0]"), for debug output.
	Rule string
}

// Mapping places host trees in the sandbox. The host view has one mount,
// / at /, and no system directories; a confined view (Confined) starts
// from an empty root holding System, read-only at their own paths, a
// private /tmp, and Mounts. A guest root (GuestRoot: the microvm
// guest, whose shares are Mounts) is a confined view whose every tree
// that no mount shows and no System directory holds is its own.
type Mapping struct {
	Confined bool
	System   []string
	Mounts   []Mount
	// GuestRoot says the sandbox's root is a tree of its own that reaches
	// no host file (the microvm guest's root, its /tmp and /run): only
	// Mounts show host trees, and a path none of them shows, outside
	// System, is Private. Set with Confined.
	GuestRoot bool
}

// HostView is the mapping of the srt command line: the host's / is the
// sandbox's /.
func HostView() Mapping { return Mapping{Mounts: []Mount{{Host: "/", Guest: "/", Rule: "host root"}}} }

// ViewMapping is the mapping of policy View v (policy.CompileView).
func ViewMapping(v *policy.View) Mapping {
	m := Mapping{Confined: true, System: v.System}
	for _, vm := range v.Mounts {
		m.Mounts = append(m.Mounts, Mount{Host: vm.Host.Resolved, Guest: vm.Guest, Rule: vm.Host.Rule})
	}
	return m
}

// Host returns the host path that sandbox path g (clean, absolute) shows:
// through the deepest mount whose guest path holds it, since a deeper
// mount hides a shallower one there. ok is false for a path no mount
// shows (a confined view's system directories and /tmp, which carry no
// host rules); host is then g itself.
func (m Mapping) Host(g string) (host string, ok bool) {
	best := -1
	for i, mt := range m.Mounts {
		if policy.Within(g, mt.Guest) && (best < 0 || len(mt.Guest) > len(m.Mounts[best].Guest)) {
			best = i
		}
	}
	if best < 0 {
		return g, false
	}
	mt := m.Mounts[best]
	return filepath.Join(mt.Host, strings.TrimPrefix(g, mt.Guest)), true
}

// Private reports whether sandbox path g lies in a tree that is the
// sandbox's own and reaches no host file: a confined view's /tmp, where
// no mount shows a host tree; with GuestRoot, any path no mount shows and
// no System directory holds.
func (m Mapping) Private(g string) bool {
	if !m.Confined {
		return false
	}
	if m.GuestRoot {
		for _, s := range m.System {
			if policy.Within(g, s) {
				return false
			}
		}
	} else if !policy.Within(g, "/tmp") {
		return false
	}
	_, shown := m.Host(g)
	return !shown
}

// Identity reports whether every sandbox path is the host path of the same
// name (the host view).
func (m Mapping) Identity() bool {
	return !m.Confined && len(m.Mounts) == 1 && m.Mounts[0].Host == "/" && m.Mounts[0].Guest == "/"
}
