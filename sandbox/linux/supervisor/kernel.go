package supervisor

// The name rules as the in-kernel check (sandbox/linux/namelsm) takes
// them: the same patterns and rule texts the supervisor matches.

import (
	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/sandbox/linux/fsplan"
)

// KernelRules are a sandbox's name rules, for the in-kernel check.
type KernelRules struct{ c *nameRules }

// NewKernelRules returns the name rules of pol (newNameRules).
func NewKernelRules(pol *policy.Policy, tmpdir string, m fsplan.Mapping) KernelRules {
	return KernelRules{newNameRules(pol, tmpdir, m)}
}

// KernelRulesOf returns rules made of patterns alone, each reported as
// itself (tests).
func KernelRulesOf(patterns ...string) KernelRules {
	c := &nameRules{tmpdir: "/tmp/srt-0/tmp"}
	for _, p := range patterns {
		c.add(p, p)
	}
	return KernelRules{c}
}

// Patterns returns each rule's pattern and its text, in order.
func (k KernelRules) Patterns() (patterns, rules []string) {
	for _, r := range k.c.rules {
		patterns = append(patterns, r.pattern)
		rules = append(rules, r.rule)
	}
	return patterns, rules
}

// Kinds of names for Denied.
const (
	KindFile    = "file"    // open O_CREAT, mknod of a regular file
	KindDir     = "dir"     // mkdir
	KindOther   = "other"   // link's new name, another mknod
	KindExisted = "existed" // a write open, truncate or link of an existing name
	KindSymlink = "symlink" // symlink
)

// Denied returns the rule that refuses host path p coming into being as
// kind (one of the Kind constants), or "": what the supervisor decides
// by name alone (its git-directory rules, which look into directories,
// are not part of it).
func (k KernelRules) Denied(p, kind string) string {
	switch kind {
	case KindFile:
		return k.c.denied(p, kFile)
	case KindDir:
		return k.c.denied(p, kDir)
	case KindExisted:
		return k.c.denied(p, kExisted)
	case KindSymlink:
		return k.c.symlinkDenied(p)
	default:
		return k.c.denied(p, kOther)
	}
}
