package namelsm

// The compiler: name rules → the BPF program's map entries. Pure but for
// the mount table it is given (Mount), so that it builds and is tested on
// every OS.

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Rule is one write-deny pattern of the supervisor's name rules
// (supervisor.KernelRules): absolute or "**/…", and the rule text a
// refusal reports.
type Rule struct {
	Pattern string
	Rule    string
}

// Mount is one line of a mount table (proc_pid_mountinfo(5)): the host
// directory Point shows directory Root of the file system on device Dev
// (userspace encoding, as stat's st_dev).
type Mount struct {
	Dev   uint64
	Root  string
	Point string
}

// ErrInexact is wrapped by Compile's error when a rule has a shape the
// program cannot check exactly: the run must use the supervisor instead.
var ErrInexact = errors.New("a rule the in-kernel check cannot express exactly")

// Key kinds (namelsm.bpf.c's K_*).
const (
	kindSuffix     = 1
	kindWin        = 2
	kindExt        = 3
	kindTree       = 4
	kindAnchor     = 5
	kindSymSuf     = 6
	kindSymAnchor  = 7
	kindUnder      = 8
	maxUnders      = 32
	maxK           = 8  // MAXK
	maxExt         = 32 // MAXEXT
	firstRuleID    = 16
	hooksPattern   = "**/.git/hooks/**"
	fnvBasis       = 0xcbf29ce484222325
	fnvPrime       = 0x100000001b3
	ruleDeep       = 1
	ruleGitFile    = 2
	ruleCommondir  = 3
	ruleBare       = 4
	ruleRenameBack = 5
)

// Texts of the program's own rules. gitFileRule and commondirRule are the
// supervisor's (supervisor/git.go), word for word.
const (
	DeepRule      = "a path deeper than the in-kernel name check walks (64 components)"
	GitFileRule   = "mandatory write-deny: a .git that is not a directory (a gitdir: file points git at hooks and config no rule protects)"
	CommondirRule = "mandatory write-deny: a commondir file (it points git at another directory's config and hooks)"
	BareRule      = "mandatory write-deny: HEAD, objects and refs outside a .git directory (a git directory made during the run; the in-kernel check cannot look into it)"
	RenameRule    = "a rename the supervisor did not perform (the seccomp filter hands every rename to srt)"
)

// Value is a rules map value (struct value): the rule id, and the
// K_UNDER directories (bits) one of which the name must be below (0:
// anywhere); for a K_UNDER key, its directory's bit.
type Value struct {
	Rule, Anchors uint32
}

// Compiled is what the program's maps hold for a set of rules.
type Compiled struct {
	Keys   map[Key]Value
	Config Config
	// Rules are the rule texts by id (index id).
	Rules []string
}

// Key is a rules map key (namelsm.bpf.c's struct key).
type Key struct {
	H    uint64
	Kind uint32
	Dev  uint32
}

// Config is the program's configuration (struct config).
type Config struct {
	SuffixMask, WinMask, SymSufMask, Full uint32
	ExtMask                               uint64
	HooksRule, Git, Anchors, Unders       uint32
}

// hashName is FNV-1a 64 of one component, as walk_one computes it.
func hashName(s string) uint64 {
	h := uint64(fnvBasis)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

// hashTail is the reversed FNV-1a 64 of s (walk_one's ext[len(s)]).
func hashTail(s string) uint64 {
	h := uint64(fnvBasis)
	for i := len(s) - 1; i >= 0; i-- {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

// hashWindow folds component hashes leaf to root (win_one, suffixes):
// comps are given root to leaf, as in a pattern.
func hashWindow(comps []string) uint64 {
	h := uint64(fnvBasis)
	for i := len(comps) - 1; i >= 0; i-- {
		h = (h ^ hashName(comps[i])) * fnvPrime
	}
	return h
}

// hashPath folds component hashes root to leaf (anchor_one).
func hashPath(comps []string) uint64 {
	h := uint64(fnvBasis)
	for _, c := range comps {
		h = (h ^ hashName(c)) * fnvPrime
	}
	return h
}

// literal reports whether seg is a plain name with no glob syntax.
func literal(seg string) bool {
	return seg != "" && seg != "." && seg != ".." && !strings.ContainsAny(seg, `*?[]{}\`)
}

// unescape undoes policy.EscapeGlob; false when p has glob syntax left.
func unescape(p string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '\\' && i+1 < len(p) {
			i++
			b.WriteByte(p[i])
			continue
		}
		if strings.IndexByte(`*?[]{}\`, c) >= 0 {
			return "", false
		}
		b.WriteByte(c)
	}
	return b.String(), true
}

// KernelDev is the kernel's encoding of a device number (sb->s_dev:
// MKDEV, major << 20 | minor) from the userspace one (st_dev).
func KernelDev(dev uint64) uint32 {
	major := (dev>>8)&0xfff | (dev>>32)&^0xfff
	minor := dev&0xff | (dev>>12)&^0xff
	return uint32(major<<20 | minor)
}

// mountOf returns the mount of mounts that shows host path p: the last
// one whose Point is the longest prefix of p.
func mountOf(mounts []Mount, p string) (Mount, bool) {
	best, found := Mount{}, false
	for _, m := range mounts {
		if within(p, m.Point) && (!found || len(m.Point) >= len(best.Point)) {
			best, found = m, true
		}
	}
	return best, found
}

func within(p, dir string) bool {
	return dir == "/" || p == dir || strings.HasPrefix(p, dir+"/")
}

// relComps are the components of host path p from its file system's
// root, as the dentry chain spells them.
func relComps(m Mount, p string) []string {
	rel := path.Join(m.Root, strings.TrimPrefix(p, strings.TrimSuffix(m.Point, "/")))
	return split(rel)
}

func split(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// subsumed reports whether pattern p matches no path that a pattern of
// anyDepth does not: "/abs/**/tail" next to "**/tail" (a denyWrite glob
// and its resolved form, with the same rule text), or a relative pattern
// whose first component is literal, which matches no absolute path.
func subsumed(p string, patterns map[string]bool) bool {
	if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "**/") {
		first, _, _ := strings.Cut(p, "/")
		return literal(first)
	}
	if i := strings.Index(p, "/**/"); strings.HasPrefix(p, "/") && i >= 0 {
		return patterns[p[i+1:]]
	}
	return false
}

// unreachable reports whether absolute pattern p can match no path in or
// above a directory of writable: the directory its literal components
// name (up to the first one with glob syntax) is neither in a writable
// one nor above one. A nil writable reaches everything.
func unreachable(p string, writable []string) bool {
	if writable == nil {
		return false
	}
	var lit []string
	for _, seg := range split(p) {
		u, ok := unescape(seg)
		if !ok || seg == "**" {
			break
		}
		lit = append(lit, u)
	}
	dir := "/" + strings.Join(lit, "/")
	for _, w := range writable {
		if within(dir, w) || within(w, dir) {
			return false
		}
	}
	return true
}

// Compile turns rules into the program's map entries. mounts is the host's
// mount table (srt's own); writable are the host directories the sandbox
// can write in (its write roots): the names of the mount points above
// their file systems' roots are not in a dentry chain, so no any-depth
// rule may name one of them; an absolute rule that reaches none of them
// is left out. It returns an error wrapping ErrInexact when
// a rule cannot be checked exactly.
func Compile(rules []Rule, mounts []Mount, writable []string) (*Compiled, error) {
	c := &Compiled{Keys: map[Key]Value{}, Rules: make([]string, firstRuleID)}
	c.Rules[ruleDeep] = DeepRule
	c.Rules[ruleGitFile] = GitFileRule
	c.Rules[ruleCommondir] = CommondirRule
	c.Rules[ruleBare] = BareRule
	c.Rules[ruleRenameBack] = RenameRule
	c.Config.Git = 1
	lits := map[string]bool{}
	var conflict error
	put := func(k Key, v Value) {
		old, ok := c.Keys[k]
		switch {
		case !ok:
			c.Keys[k] = v
		case old.Anchors == 0 && v.Anchors == 0:
			if old.Rule == c.Config.HooksRule && c.Rules[old.Rule] != c.Rules[v.Rule] {
				// Another rule on the same key: it wins over the hooks
				// rule, whose exceptions would otherwise apply to it.
				c.Keys[k] = v
			}
		case old.Anchors == 0:
			// Anywhere already.
		case v.Anchors == 0:
			c.Keys[k] = v
		case c.Rules[old.Rule] == c.Rules[v.Rule]:
			old.Anchors |= v.Anchors
			c.Keys[k] = old
		default:
			conflict = fmt.Errorf("%w: %s and %s below different directories on one key", ErrInexact, c.Rules[old.Rule], c.Rules[v.Rule])
		}
	}
	// anyDepth compiles "**/"+rest (segs: rest's components) for rule id,
	// below the K_UNDER directories under (0: anywhere).
	anyDepth := func(p string, segs []string, id, under uint32) error {
		tree := segs[len(segs)-1] == "**"
		if tree {
			segs = segs[:len(segs)-1]
		}
		if len(segs) == 1 && !tree && len(segs[0]) > 1 && segs[0][0] == '*' && literal(segs[0][1:]) && len(segs[0])-1 <= maxExt {
			tail := segs[0][1:]
			c.Config.ExtMask |= 1 << len(tail)
			put(Key{H: hashTail(tail), Kind: kindExt | uint32(len(tail))<<8}, Value{id, under})
			return nil
		}
		if len(segs) == 0 || len(segs) > maxK {
			return fmt.Errorf("%w: %s (%d components)", ErrInexact, p, len(segs))
		}
		for _, s := range segs {
			if !literal(s) {
				return fmt.Errorf("%w: %s", ErrInexact, p)
			}
			lits[s] = true
		}
		k := uint32(len(segs))
		if tree {
			c.Config.WinMask |= 1 << k
			c.Config.Full = 1
			put(Key{H: hashWindow(segs), Kind: kindWin | k<<8}, Value{id, under})
		} else {
			c.Config.SuffixMask |= 1 << k
			put(Key{H: hashWindow(segs), Kind: kindSuffix | k<<8}, Value{id, under})
		}
		// A symlink whose name ends in the rule's directory part
		// (names.go's symlinkDenied).
		for j := 1; j < len(segs); j++ {
			c.Config.SymSufMask |= 1 << j
			put(Key{H: hashWindow(segs[:j]), Kind: kindSymSuf | uint32(j)<<8}, Value{id, under})
		}
		return nil
	}
	// anchor returns the device and components from its file system's
	// root of literal host path lit.
	anchor := func(p, lit string) (uint32, []string, error) {
		m, ok := mountOf(mounts, lit)
		if !ok {
			return 0, nil, fmt.Errorf("%w: %s (no mount shows it)", ErrInexact, p)
		}
		comps := relComps(m, lit)
		if len(comps) == 0 || len(comps) > 64 {
			return 0, nil, fmt.Errorf("%w: %s (a file system's root, or too deep)", ErrInexact, p)
		}
		return KernelDev(m.Dev), comps, nil
	}
	unders := map[Key]uint32{}
	patterns := map[string]bool{}
	for _, r := range rules {
		if strings.HasPrefix(r.Pattern, "**/") {
			patterns[r.Pattern] = true
		}
	}
	for _, r := range rules {
		p := r.Pattern
		if subsumed(p, patterns) {
			continue
		}
		if strings.HasPrefix(p, "/") && unreachable(p, writable) {
			// Nothing the sandbox can write is in or above it: no
			// name it matches can come into being there.
			continue
		}
		id := uint32(len(c.Rules))
		c.Rules = append(c.Rules, r.Rule)
		if p == hooksPattern {
			c.Config.HooksRule = id
		}
		if rest, ok := strings.CutPrefix(p, "**/"); ok {
			if err := anyDepth(p, strings.Split(rest, "/"), id, 0); err != nil {
				return nil, err
			}
			continue
		}
		if !strings.HasPrefix(p, "/") {
			return nil, fmt.Errorf("%w: %s", ErrInexact, p)
		}
		if i := strings.Index(p, "/**/"); i > 0 {
			// "/dir/**/rest": rest at any depth below dir.
			lit, ok := unescape(p[:i])
			if !ok || path.Clean(lit) != lit {
				return nil, fmt.Errorf("%w: %s", ErrInexact, p)
			}
			dev, comps, err := anchor(p, lit)
			if err != nil {
				return nil, err
			}
			uk := Key{H: hashPath(comps), Kind: kindUnder, Dev: dev}
			bit, ok := unders[uk]
			if !ok {
				if len(unders) == maxUnders {
					return nil, fmt.Errorf("%w: more than %d directories with rules below them", ErrInexact, maxUnders)
				}
				bit = 1 << len(unders)
				unders[uk] = bit
				c.Keys[uk] = Value{0, bit}
			}
			c.Config.Anchors, c.Config.Unders, c.Config.Full = 1, 1, 1
			if err := anyDepth(p, strings.Split(p[i+4:], "/"), id, bit); err != nil {
				return nil, err
			}
			// A symlink at dir or above it (symlinkDenied).
			hp := lit
			for j := len(comps); j >= 1 && hp != "/"; j-- {
				put(Key{H: hashPath(comps[:j]), Kind: kindSymAnchor, Dev: dev}, Value{id, 0})
				hp = path.Dir(hp)
			}
			continue
		}
		tree := strings.HasSuffix(p, "/**")
		lit, ok := unescape(strings.TrimSuffix(p, "/**"))
		if !ok || path.Clean(lit) != lit {
			return nil, fmt.Errorf("%w: %s", ErrInexact, p)
		}
		dev, comps, err := anchor(p, lit)
		if err != nil {
			return nil, err
		}
		kind := uint32(kindAnchor)
		if tree {
			kind = kindTree
		}
		c.Config.Anchors, c.Config.Full = 1, 1
		put(Key{H: hashPath(comps), Kind: kind, Dev: dev}, Value{id, 0})
		// A symlink at a proper ancestor stands for a directory whose
		// names would appear below it (symlinkDenied); the host's "/"
		// is no name.
		hp := path.Dir(lit)
		for j := len(comps) - 1; j >= 1 && hp != "/"; j-- {
			put(Key{H: hashPath(comps[:j]), Kind: kindSymAnchor, Dev: dev}, Value{id, 0})
			hp = path.Dir(hp)
		}
	}
	if conflict != nil {
		return nil, conflict
	}
	// The mount points above the write roots' file systems.
	for _, w := range writable {
		check := func(m Mount) error {
			if path.Clean(m.Root) == path.Clean(m.Point) {
				return nil
			}
			for _, s := range append(split(m.Point), split(m.Root)...) {
				if lits[s] {
					return fmt.Errorf("%w: a rule names %q, a component of mount %s (file system directory %s), which a dentry chain does not show", ErrInexact, s, m.Point, m.Root)
				}
			}
			return nil
		}
		if m, ok := mountOf(mounts, w); ok {
			if err := check(m); err != nil {
				return nil, err
			}
		}
		for _, m := range mounts {
			if within(m.Point, w) {
				if err := check(m); err != nil {
					return nil, err
				}
			}
		}
	}
	if len(c.Keys) > 4000 {
		return nil, fmt.Errorf("%w: %d map entries (4096 at most)", ErrInexact, len(c.Keys))
	}
	return c, nil
}
