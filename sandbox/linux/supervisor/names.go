package supervisor

// The creation-time name rules: which names may not come into being. Pure:
// no system calls, so the rules build and are tested on every OS.

import (
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/sandbox/linux/fsplan"
)

// nameRule is one write-deny pattern, absolute or "**/…".
type nameRule struct {
	pattern string
	rule    string
	segs    []string
	hooks   bool // the mandatory **/.git/hooks/**
	config  bool // the mandatory **/.git/config
	// need are substrings every path the pattern matches contains ("/.git"
	// and "/hooks" for **/.git/hooks/**, ".key" for **/*.key): a cheap
	// first cut before doublestar.Match, which decides.
	need []string
}

// nameRules are the name rules of a sandbox.
type nameRules struct {
	rules []nameRule
	// tmpdir is the sandbox's private TMPDIR: no rule applies in it (nor
	// in /dev, /proc or the mapping's private trees).
	tmpdir string
	// m places the host's trees in the sandbox: a name is judged at the
	// host path it creates, where the policy's rules are written (a
	// confined view shows a host tree at another path).
	m fsplan.Mapping
}

// exempt reports whether sandbox path p is outside every rule: in the
// private TMPDIR, /dev, /proc or a private tree of the mapping.
func (c *nameRules) exempt(p string) bool {
	return policy.Within(p, c.tmpdir) || policy.Within(p, "/dev") || policy.Within(p, "/proc") || c.m.Private(p)
}

// host is the host path sandbox path p names (p itself in the host view,
// or where no mount shows it).
func (c *nameRules) host(p string) string {
	h, _ := c.m.Host(p)
	return h
}

// kinds of new names, for the git exceptions.
const (
	kFile    = iota // open O_CREAT, mknod
	kDir            // mkdir
	kOther          // rename, link, symlink, write to an existing name
	kConfig         // a rename onto .git/config whose content srt checks
	kExisted        // a write open of a name that exists
	kSource         // the name a rename takes away
)

// newNameRules returns the rules of pol: the mandatory patterns, every
// denyWrite and denyRead glob, and every denyWrite path with what is below
// it.
// Paths are judged through mapping m (its zero value: the host view).
func newNameRules(pol *policy.Policy, tmpdir string, m fsplan.Mapping) *nameRules {
	c := &nameRules{tmpdir: tmpdir, m: m}
	add := c.add
	for _, p := range pol.MandatoryPatterns {
		add(p, "mandatory write-deny "+p)
	}
	// A name the sandbox cannot read it cannot create either (missing
	// denyRead literals reach DenyWrite in policy.Compile): a new file
	// matching a denyRead glob would otherwise be readable where one the
	// host made is not.
	for _, g := range slices.Concat(pol.DenyWriteGlobs, pol.DenyReadGlobs) {
		add(g.Pattern, g.Rule)
		if g.Resolved != g.Pattern {
			add(g.Resolved, g.Rule)
		}
	}
	for _, e := range pol.DenyWrite {
		if e.Resolved == "" {
			continue
		}
		if e.Kind == policy.Missing && e.Origin == policy.OriginMandatory && matchesAny(pol.MandatoryPatterns, e.Resolved) {
			// A missing mandatory name (.git/hooks where no repository is
			// yet) is the business of its pattern, which lets git init
			// make an empty hooks directory and a checked config.
			continue
		}
		add(policy.EscapeGlob(e.Resolved), e.Rule)
		add(policy.EscapeGlob(e.Resolved)+"/**", e.Rule)
		if e.Literal != e.Resolved && filepath.IsAbs(e.Literal) {
			// A protected link (Policy.LinkedDenies): once deleted, its
			// name must not come back as a file or a link elsewhere.
			add(policy.EscapeGlob(e.Literal), e.Rule)
		}
	}
	return c
}

// matchesAny reports whether one of patterns matches p.
func matchesAny(patterns []string, p string) bool {
	for _, pat := range patterns {
		if ok, _ := doublestar.Match(pat, p); ok {
			return true
		}
	}
	return false
}

// add adds write-deny pattern p (absolute or "**/…"), reported as rule.
func (c *nameRules) add(p, rule string) {
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	c.rules = append(c.rules, nameRule{pattern: p, rule: rule, segs: segs,
		hooks: p == "**/.git/hooks/**", config: p == "**/.git/config", need: literalParts(segs)})
}

// literalParts returns substrings that every path matched by the pattern
// segments segs contains: "/seg" for a segment without glob syntax, the
// literal tail of a "*tail" segment. Anything else adds nothing.
func literalParts(segs []string) []string {
	var need []string
	for _, seg := range segs {
		switch {
		case seg == "" || seg == "**":
		case !strings.ContainsAny(seg, `*?[]{}\`):
			need = append(need, "/"+seg)
		case seg[0] == '*' && len(seg) > 1 && !strings.ContainsAny(seg[1:], `*?[]{}\`):
			need = append(need, seg[1:])
		}
	}
	return need
}

// denied returns the rule that forbids name p (a sandbox path) coming
// into being as kind, or "".
func (c *nameRules) denied(p string, kind int) string {
	if c.exempt(p) {
		return ""
	}
	p = c.host(p)
	if kind != kDir && kind != kSource && path.Base(p) == ".git" {
		return gitFileRule
	}
	if kind != kSource && path.Base(p) == "commondir" {
		// Next to a HEAD it makes a git directory of objects and refs
		// elsewhere, whose config and hooks git then uses.
		return commondirRule
	}
	for _, r := range c.rules {
		if !containsAll(p, r.need) {
			continue
		}
		if ok, _ := doublestar.Match(r.pattern, p); !ok {
			continue
		}
		if r.hooks {
			dir, base := path.Split(p)
			if kind == kDir && path.Base(p) == "hooks" && strings.HasSuffix(path.Dir(p), "/.git") {
				continue
			}
			if kind == kFile && strings.HasSuffix(base, ".sample") && strings.HasSuffix(dir, "/.git/hooks/") {
				continue
			}
		}
		if r.config && kind == kConfig {
			continue
		}
		return r.rule
	}
	return ""
}

func containsAll(p string, need []string) bool {
	for _, n := range need {
		if !strings.Contains(p, n) {
			return false
		}
	}
	return true
}

// pinned returns the absolute rule (a protected path, a denyWrite or
// missing denyRead entry, not an any-depth pattern) that protects
// sandbox path p where it is, or "".
func (c *nameRules) pinned(p string) string {
	if c.exempt(p) {
		return ""
	}
	p = c.host(p)
	for _, r := range c.rules {
		if !strings.HasPrefix(r.pattern, "/") || !containsAll(p, r.need) {
			continue
		}
		if ok, _ := doublestar.Match(r.pattern, p); ok {
			return r.rule
		}
	}
	return ""
}

// symlinkDenied: a symlink at p stands for a directory whose names appear
// below p, so p must not end in a rule's directory part (".git" for
// **/.git/hooks/**, "secrets" for /w/secrets/**).
func (c *nameRules) symlinkDenied(p string) string {
	if r := c.denied(p, kOther); r != "" {
		return r
	}
	if c.exempt(p) {
		return ""
	}
	segs := strings.Split(strings.TrimPrefix(c.host(p), "/"), "/")
	for _, r := range c.rules {
		if prefixByLiteral(r.segs, segs, false) {
			return r.rule
		}
	}
	return ""
}

// prefixByLiteral reports whether path segments s can be consumed by a
// prefix of pattern segments pat, the last one of s by a non-"**" pattern
// segment (lit), leaving a non-empty rest of the pattern.
func prefixByLiteral(pat, s []string, lit bool) bool {
	if len(s) == 0 {
		return lit && len(pat) > 0 && !(len(pat) == 1 && pat[0] == "**")
	}
	if len(pat) == 0 {
		return false
	}
	if pat[0] == "**" {
		// ** absorbs s[0] (and maybe more), or nothing.
		return prefixByLiteral(pat, s[1:], false) || prefixByLiteral(pat[1:], s, lit)
	}
	if ok, _ := doublestar.Match(pat[0], s[0]); !ok {
		return false
	}
	return prefixByLiteral(pat[1:], s[1:], true)
}

// isGitConfig reports whether p is what the mandatory **/.git/config
// names (false when allowGitConfig left that rule out).
func (c *nameRules) isGitConfig(p string) bool {
	p = c.host(p)
	for _, r := range c.rules {
		if r.config {
			ok, _ := doublestar.Match(r.pattern, p)
			return ok
		}
	}
	return false
}
