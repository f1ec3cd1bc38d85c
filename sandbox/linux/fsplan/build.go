package fsplan

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/srt-go/srt/policy"
)

// Options are what the plan needs besides the policy.
type Options struct {
	// CreationRules says the creation-time name rules run (the seccomp
	// supervisor refuses a protected name when it is created), so a
	// missing protected path needs no placeholder.
	CreationRules bool
	// TmpDir is the sandbox's private TMPDIR: a tmpfs, mode 0700, at a
	// path every sandbox of this user shares (srt's state directory's
	// tmp), private to this sandbox's mount namespace. Empty means none.
	TmpDir string
	// Helper is srt's own binary (host path, resolved), which the
	// sandbox runs as ssh's ProxyCommand (GIT_SSH_COMMAND). A confined
	// view shows it at HelperGuest, wherever srt (or srtd) is installed;
	// the host view, where it is. Empty means none.
	Helper string
}

// HelperGuest is where a confined view shows Options.Helper.
const HelperGuest = "/.srt/srt"

// Build computes the mount operations that enforce p, in the view p.View
// asks for (nil: the host view). The order is the security argument,
// since bwrap(1) applies filesystem options "in the order they are given"
// and a mount hides everything mounted below it before:
//
//  1. The root. Host view: --ro-bind / /, everything read-only, and later
//     steps only change the subtrees they name. Confined view: bubblewrap's
//     empty tmpfs root, the system directories read-only at their own
//     paths (a symbolic link such as /bin stays a link), a private
//     writable /tmp that dies with the sandbox, and each mount's root,
//     bound read-only or writable as the policy says for its host path.
//  2. One operation per interesting host path (write roots, denies,
//     re-allowed reads, pinned parents, placeholders; decide), at every
//     guest path where a mount shows it, parents strictly before
//     children, each giving the path the state the policy computes for
//     it (readable? writable?). A denied directory becomes an empty
//     tmpfs, a denied file /dev/null (bound nodev, so opening it fails
//     with EACCES). A path that a deeper mount covers is left to that
//     mount: its own pass gives it the same rules. Sorting is stable by
//     guest depth, so at equal depth a mount's root precedes its rules.
//  3. /dev and /proc, fresh, and the kernel's global knobs under /proc
//     read-only (procKnobs).
//  4. Host view: srt's state directory read-only when a write root holds
//     it; then the private TMPDIR (Options.TmpDir).
//  5. --remount-ro for each denied directory's tmpfs, after everything
//     inside it is mounted, and, in a confined view, for the root last.
//
// Every source is a host path resolved by the policy, and bwrap resolves
// sources in the host's view, so a bind always shows host content, never
// an earlier step's.
func Build(p *policy.Policy, opts Options) Plan {
	m := HostView()
	if p.View != nil && !p.FilesystemDisabled {
		m = ViewMapping(p.View)
	}
	plan := Plan{Mapping: m}
	if p.FilesystemDisabled {
		plan.Ops = []Op{{Kind: OpBind, Src: "/", Dst: "/", Rule: "filesystem.disabled"}}
		plan.Ops = append(plan.Ops, runtimeOps(p, opts, m)...)
		plan.Helper = opts.Helper
		return plan
	}
	nodes, placeholders := decide(p, opts.CreationRules)
	plan.Placeholders = placeholders

	type guestOp struct {
		op    Op
		depth int
	}
	var ops []guestOp
	add := func(op Op) { ops = append(ops, guestOp{op, depth(op.Dst)}) }
	for _, s := range m.System {
		if t, err := os.Readlink(s); err == nil {
			add(Op{Kind: OpSymlink, Src: t, Dst: s, Rule: "system directory", Runtime: true})
			continue
		}
		add(Op{Kind: OpROBind, Src: s, Dst: s, Rule: "system directory", Runtime: true})
	}
	if m.Confined {
		add(Op{Kind: OpTmpfs, Dst: "/tmp", Rule: "private /tmp", Runtime: true})
	}
	var tmpfs []string
	for i, mt := range m.Mounts {
		root := state{p.Readable(mt.Host), p.Writable(mt.Host)}
		if op, ok := opFor(mt.Host, mt.Guest, dirKind(mt.Host), root, state{}, true, mt.Rule); ok {
			add(op)
			if op.Kind == OpTmpfs {
				tmpfs = append(tmpfs, mt.Guest)
			}
		}
		mounted := map[string]state{mt.Host: root}
		inherited := func(path string) state {
			for a := filepath.Dir(path); ; a = filepath.Dir(a) {
				if s, ok := mounted[a]; ok {
					return s
				}
				if a == "/" || a == "." {
					return root
				}
			}
		}
		for _, n := range nodes {
			if n.path == mt.Host || !policy.Within(n.path, mt.Host) {
				continue
			}
			g := filepath.Join(mt.Guest, strings.TrimPrefix(n.path, mt.Host))
			if skipPath(g) || shadowed(m.Mounts, i, g) {
				continue
			}
			want := n.want(p)
			op, ok := opFor(n.path, g, n.kind, want, inherited(n.path), n.pin, n.rule)
			if !ok {
				continue
			}
			add(op)
			if op.Kind == OpTmpfs {
				tmpfs = append(tmpfs, g)
			}
			mounted[n.path] = want
		}
	}
	slices.SortStableFunc(ops, func(a, b guestOp) int { return a.depth - b.depth })
	for _, o := range ops {
		plan.Ops = append(plan.Ops, o.op)
	}
	plan.Ops = append(plan.Ops, runtimeOps(p, opts, m)...)
	plan.Helper = opts.Helper
	if m.Confined && opts.Helper != "" {
		// The view shows srt's binary at a fixed path of its own root
		// (read-only with it, at the end), not at wherever it is
		// installed, which no bind may show. -try: a binary replaced
		// since srt started is gone, and ssh then fails, not the sandbox.
		plan.Ops = append(plan.Ops, Op{Kind: OpROBindTry, Src: opts.Helper, Dst: HelperGuest, Rule: "srt's binary for ssh's ProxyCommand", Runtime: true})
		plan.Helper = HelperGuest
	}
	for _, t := range tmpfs {
		plan.Ops = append(plan.Ops, Op{Kind: OpRemountRO, Dst: t, Rule: "read-only empty directory"})
	}
	if m.Confined {
		plan.Ops = append(plan.Ops, Op{Kind: OpRemountRO, Dst: "/", Rule: "read-only root", Runtime: true})
	}
	return plan
}

// opFor is the operation that gives guest path g (host path h, of kind
// kind) the state want, where it would otherwise have the state have; ok
// is false when it needs none. force makes a mount even when want equals
// have (a pinned parent, a mount's root).
func opFor(h, g string, kind policy.Kind, want, have state, force bool, rule string) (Op, bool) {
	switch {
	case !want.read:
		if !have.read && !force {
			return Op{}, false // an ancestor hides it already
		}
		if kind == policy.Dir {
			return Op{Kind: OpTmpfs, Dst: g, Rule: rule}, true
		}
		return Op{Kind: OpROBind, Src: "/dev/null", Dst: g, Rule: rule}, true
	case want == have && !force:
		return Op{}, false
	case want.write:
		return Op{Kind: OpBind, Src: h, Dst: g, Rule: rule}, true
	default:
		return Op{Kind: OpROBind, Src: h, Dst: g, Rule: rule}, true
	}
}

// procKnobs are the kernel's global knobs under /proc, made read-only as
// Docker makes them. bubblewrap covers only /proc/irq and /proc/bus when
// it runs in a user namespace, trusting that nobody in it is global root;
// but when srt runs as root, uid 0 inside is uid 0 outside, and a sysctl
// such as kernel.core_pattern checks the uid, not a capability: the
// command could make the host run a program of its choice as root.
var procKnobs = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/fs"}

// runtimeOps are steps 3 and 4 of Build.
func runtimeOps(p *policy.Policy, opts Options, m Mapping) []Op {
	ops := []Op{{Kind: OpDev, Dst: "/dev", Rule: "fresh /dev", Runtime: true}, {Kind: OpProc, Dst: "/proc", Rule: "the sandbox's /proc", Runtime: true}}
	for _, k := range procKnobs {
		ops = append(ops, Op{Kind: OpROBindTry, Src: k, Dst: k, Rule: "kernel knobs read-only", Runtime: true})
	}
	if opts.TmpDir == "" {
		return ops
	}
	// srt's state directory, when a write root holds it (allowWrite
	// ["/tmp"]): read-only, and a mount point, so that the command can
	// neither plant things for later runs nor rename it away and make a
	// host directory where its TMPDIR was (which the creation-time rules
	// take for the private tmpfs).
	state := filepath.Dir(opts.TmpDir)
	switch {
	case p.FilesystemDisabled:
	case !m.Confined:
		if p.Writable(policy.Resolve(state)) {
			ops = append(ops, Op{Kind: OpROBind, Src: state, Dst: state, Rule: "srt's state directory", Runtime: true})
		}
	default:
		// A confined view shows it wherever a bind holds it (host /tmp
		// bound at /hosttmp): read-only there too, and a mount point, or
		// a session could rename srt's state away and leave one of its
		// own making for srt to use next.
		res := policy.Resolve(state)
		for _, mt := range m.Mounts {
			if policy.Within(res, mt.Host) && p.Writable(res) {
				g := filepath.Join(mt.Guest, strings.TrimPrefix(res, mt.Host))
				ops = append(ops, Op{Kind: OpROBind, Src: res, Dst: g, Rule: "srt's state directory", Runtime: true})
			}
		}
	}
	return append(ops, Op{Kind: OpTmpfs, Dst: opts.TmpDir, Perms: 0o700, Rule: "private TMPDIR", Runtime: true})
}

// shadowed reports whether guest path g of mount i lies in another mount
// whose guest path is strictly deeper than mount i's.
func shadowed(mounts []Mount, i int, g string) bool {
	for j, o := range mounts {
		if j != i && len(o.Guest) > len(mounts[i].Guest) && policy.Within(o.Guest, mounts[i].Guest) && policy.Within(g, o.Guest) {
			return true
		}
	}
	return false
}

// skipPath reports paths bubblewrap provides itself (--dev, --proc); rules
// under them are not bind mounts.
func skipPath(path string) bool {
	return policy.Within(path, "/dev") || policy.Within(path, "/proc")
}

func dirKind(path string) policy.Kind {
	fi, err := os.Lstat(path)
	switch {
	case err != nil:
		return policy.Missing
	case fi.IsDir():
		return policy.Dir
	default:
		return policy.File
	}
}
