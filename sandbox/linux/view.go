package linux

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/srt-go/srt/policy"
)

// planView is PlanMounts for a policy with a View (policy.CompileView):
// the sandbox's root is bubblewrap's empty tmpfs, made read-only last, and
// only the View's system directories and mounts appear in it.
//
// Order is the security argument, as in PlanMounts; here it runs in the
// guest's paths, because a mount may show a host tree elsewhere:
//
//  1. System directories, read-only (a symbolic link such as /bin stays a
//     link), and a private writable tmpfs at /tmp that dies with the
//     sandbox.
//  2. Each mount's root, bound read-only or writable as the policy says
//     for its host path.
//  3. Inside each mount, one operation per interesting host path
//     (protected paths, mandatory denies, writable holes such as runner
//     state directories, pinned parents), at the guest path it appears
//     at. A path that another mount deeper in the guest covers is left to
//     that mount: its own pass gives it the same rules.
//
// Every operation is sorted by the depth of its guest path, parents before
// children (stable, so at equal depth a mount's root precedes its rules).
//  4. --remount-ro for the root and for each denied directory's tmpfs.
func planView(p *policy.Policy) Plan {
	v := p.View
	var plan Plan
	type guestOp struct {
		op    Op
		depth int
	}
	var ops []guestOp
	add := func(op Op) { ops = append(ops, guestOp{op, depth(op.Dst)}) }

	for _, s := range v.System {
		if t, err := os.Readlink(s); err == nil {
			add(Op{Kind: OpSymlink, Src: t, Dst: s, Rule: "system directory"})
			continue
		}
		add(Op{Kind: OpROBind, Src: s, Dst: s, Rule: "system directory"})
	}
	add(Op{Kind: OpTmpfs, Dst: "/tmp", Rule: "private /tmp"})

	guests := make([]string, len(v.Mounts))
	for i, m := range v.Mounts {
		guests[i] = m.Guest
	}
	// shadowed reports whether guest path g of mount i lies in another
	// mount whose guest path is strictly deeper than mount i's.
	shadowed := func(i int, g string) bool {
		for j, o := range guests {
			if j != i && len(o) > len(guests[i]) && policy.Within(o, guests[i]) && policy.Within(g, o) {
				return true
			}
		}
		return false
	}

	var tmpfs []string
	for i, m := range v.Mounts {
		root := m.Host.Resolved
		rootState := [2]bool{true, p.Writable(root)}
		kind := OpROBind
		if rootState[1] {
			kind = OpBind
		}
		add(Op{Kind: kind, Src: root, Dst: m.Guest, Rule: m.Host.Rule})
		if m.Host.Kind != policy.Dir {
			continue
		}
		nodes := viewNodes(p, root, &plan)
		mounted := map[string][2]bool{root: rootState}
		inherited := func(path string) [2]bool {
			for a := filepath.Dir(path); ; a = filepath.Dir(a) {
				if s, ok := mounted[a]; ok {
					return s
				}
				if a == "/" {
					return rootState
				}
			}
		}
		guestOf := func(h string) string { return filepath.Clean(m.Guest + "/" + strings.TrimPrefix(h, root)) }
		for _, n := range nodes {
			g := guestOf(n.path)
			if shadowed(i, g) {
				continue
			}
			want := [2]bool{p.Readable(n.path), p.Writable(n.path)}
			have := inherited(n.path)
			switch {
			case !want[0]:
				if !have[0] {
					continue
				}
				if n.kind == policy.Dir {
					add(Op{Kind: OpTmpfs, Dst: g, Rule: n.rule})
					tmpfs = append(tmpfs, g)
				} else {
					add(Op{Kind: OpROBind, Src: "/dev/null", Dst: g, Rule: n.rule})
				}
			case want == have && !n.pin:
				continue
			case want[1]:
				add(Op{Kind: OpBind, Src: n.path, Dst: g, Rule: n.rule})
			default:
				add(Op{Kind: OpROBind, Src: n.path, Dst: g, Rule: n.rule})
			}
			mounted[n.path] = want
		}
	}
	slices.SortStableFunc(ops, func(a, b guestOp) int { return a.depth - b.depth })
	for _, o := range ops {
		plan.Ops = append(plan.Ops, o.op)
	}
	for _, t := range tmpfs {
		plan.Ops = append(plan.Ops, Op{Kind: OpRemountRO, Dst: t, Rule: "read-only empty directory"})
	}
	plan.Ops = append(plan.Ops, Op{Kind: OpRemountRO, Dst: "/", Rule: "read-only root"})
	return plan
}

// viewNodes returns the host paths strictly below root that need a mount
// of their own, parents first: write roots, denies (a missing one gets a
// placeholder added to plan when it could be created), and the pinned
// parents of denies inside writable trees (see PlanMounts).
func viewNodes(p *policy.Policy, root string, plan *Plan) []*node {
	nodes := map[string]*node{}
	add := func(path string, kind policy.Kind, rule string, pin bool) {
		if path == root || !policy.Within(path, root) {
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
		if !policy.Within(d.Resolved, root) || hiddenAlready(p, d) {
			continue
		}
		wr := writeRootOf(p, d.Resolved)
		if wr == "" {
			continue // read-only already, cannot be created or renamed
		}
		kind := d.Kind
		if kind == policy.Missing {
			ph := placeholderFor(d, wr)
			if !slices.ContainsFunc(plan.Placeholders, func(o Placeholder) bool { return o.Path == ph.Path }) {
				plan.Placeholders = append(plan.Placeholders, ph)
			}
			kind = policy.File
			if ph.Dir {
				kind = policy.Dir
			}
			add(ph.Path, kind, d.Rule, false)
		} else {
			add(d.Resolved, kind, d.Rule, false)
		}
		pinParents(d, wr, add)
	}
	for _, d := range p.DenyRead {
		if !policy.Within(d.Resolved, root) {
			continue
		}
		if wr := writeRootOf(p, d.Resolved); wr != "" {
			pinParents(d, wr, add)
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
	return out
}
