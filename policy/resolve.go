package policy

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/srt-go/srt/policy/dirindex"
	"github.com/srt-go/srt/settings"
)

// resolver turns settings path entries into Paths.
type resolver struct {
	cwd, home string
	// untrusted are Env.Untrusted.
	untrusted []string
	p         *Policy
	// err is the first rule that cannot be enforced (an invalid glob).
	err error
	// unlisted are the user's directories a deny glob's walk could not
	// read: what they hold is unknown (Compile refuses those inside a
	// write root).
	unlisted []Path
	// index holds what earlier runs' deny walks read (nil: none).
	index *dirindex.Index
}

// walkMode says how entries expands a list's globs.
type walkMode int

const (
	// walkNoFollow matches links but does not follow them (allow lists).
	walkNoFollow walkMode = iota
	// walkDenyRead follows links everywhere: reads are possible
	// everywhere.
	walkDenyRead
	// walkDenyWrite follows links, within the write roots only
	// (expandDeny).
	walkDenyWrite
)

// abs expands "~", "~/x" and relative paths (against the working
// directory, as the reference does) and cleans the result.
func (r *resolver) abs(path string) string {
	switch {
	case path == "~":
		path = r.home
	case strings.HasPrefix(path, "~/"):
		path = filepath.Join(r.home, path[2:])
	case !filepath.IsAbs(path):
		path = filepath.Join(r.cwd, path)
	}
	return filepath.Clean(path)
}

// globAbs is abs for a pattern: the working directory or home joined in
// front of a relative pattern is escaped, so that a "[", "*" or "{" in
// their names matches itself (a project in /tmp/p[x] would otherwise
// turn "**/.env" into a pattern matching nothing there).
func (r *resolver) globAbs(pattern string) string {
	switch {
	case pattern == "~":
		return EscapeGlob(filepath.Clean(r.home))
	case strings.HasPrefix(pattern, "~/"):
		return EscapeGlob(filepath.Clean(r.home)) + "/" + pattern[2:]
	case !filepath.IsAbs(pattern):
		return strings.TrimSuffix(EscapeGlob(filepath.Clean(r.cwd)), "/") + "/" + pattern
	}
	return pattern
}

// EscapeGlob returns s with every character doublestar treats as syntax
// (*?[]{}\) escaped with a backslash: a pattern that matches s only.
func EscapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]{}\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// unescapeGlob undoes EscapeGlob (for a pattern's literal base, which is
// a path on disk).
func unescapeGlob(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// isGlob reports whether a non-literal entry is a pattern.
func isGlob(s string) bool { return strings.ContainsAny(s, "*?[{") }

// entries resolves one settings list. Globs are expanded against the
// filesystem now: in a deny list the walk follows symbolic links to
// directories, so that a match reached through a link (linkdir/secret.txt
// with linkdir -> ../shared) is denied at its target too, which covers
// every spelling; a write-deny's walk keeps to the write roots, which
// must be set (expandDeny); elsewhere links are matched but not followed.
// Literal entries are resolved later, by guardLiterals.
func (r *resolver) entries(key string, list []settings.PathEntry, mode walkMode) []Path {
	var out []Path
	for i, e := range list {
		rule := fmt.Sprintf("%s[%d]", key, i)
		path := r.abs(e.Path)
		if e.Literal || !isGlob(e.Path) {
			out = append(out, makePath(path, OriginUser, rule))
			continue
		}
		// "dir/**" means the directory itself.
		if base, ok := strings.CutSuffix(path, "/**"); ok && !isGlob(base) {
			out = append(out, makePath(base, OriginUser, rule))
			continue
		}
		if !doublestar.ValidatePattern(path) {
			if r.err == nil {
				r.err = fmt.Errorf("%s: %q is not a valid glob, so it would protect nothing: %w", rule, e.Path, ErrUnenforceable)
			}
			continue
		}
		var matches []string
		onErr := func(dir string, err error) {
			if u := unlistable(dir, err); u != nil {
				r.unlisted = append(r.unlisted, Path{Literal: dir, Resolved: resolveMissing(dir), Rule: rule, Origin: OriginUser, uncheckable: u})
			}
		}
		switch mode {
		case walkDenyRead:
			matches = expandDeny(r.globAbs(e.Path), nil, r.index, onErr)
		case walkDenyWrite:
			// Never nil: no write root means nothing to walk.
			matches = expandDeny(r.globAbs(e.Path), append([]Path{}, r.p.AllowWrite...), r.index, onErr)
		default:
			matches = expandGlob(r.globAbs(e.Path))
		}
		switch {
		case len(matches) > 0:
		case mode == walkDenyWrite:
			r.p.Notes = append(r.p.Notes, fmt.Sprintf("%s: %q matches nothing writable now", rule, e.Path))
		default:
			r.p.Notes = append(r.p.Notes, fmt.Sprintf("%s: %q matches nothing now", rule, e.Path))
		}
		for _, m := range matches {
			mp := makePath(m, OriginUser, rule)
			mp.globMatch = true
			out = append(out, mp)
		}
	}
	return out
}

// Glob is one glob rule of the settings, kept as a pattern.
type Glob struct {
	// Pattern is the entry made absolute ("~" and relative forms
	// expanded, cleaned), with its glob characters as written
	// (doublestar syntax: "**", "*", "?", "[...]", "{a,b}").
	Pattern string
	// Resolved is Pattern with the directory part before the first glob
	// character symlink-resolved (as Path.Resolved); equal to Pattern
	// when that part holds no link.
	Resolved string
	// Rule names the settings entry, e.g. "filesystem.denyWrite[2]".
	Rule string
}

// globs returns the entries of list that are patterns (not literal, not
// "dir/**"), as Globs.
func (r *resolver) globs(key string, list []settings.PathEntry) []Glob {
	var out []Glob
	for i, e := range list {
		if e.Literal || !isGlob(e.Path) {
			continue
		}
		if base, ok := strings.CutSuffix(r.abs(e.Path), "/**"); ok && !isGlob(base) {
			continue
		}
		path := filepath.Clean(r.globAbs(e.Path))
		base, pat := doublestar.SplitPattern(path)
		res := path
		if base != "" && base != "." {
			res = EscapeGlob(resolveMissing(unescapeGlob(base))) + "/" + pat
		}
		out = append(out, Glob{Pattern: path, Resolved: res, Rule: fmt.Sprintf("%s[%d]", key, i)})
	}
	return out
}

// Resolve returns path (absolute) with every symlink resolved; where the
// path does not exist, its longest existing prefix is resolved and the
// rest kept, as for Path.Resolved.
func Resolve(path string) string { return resolveMissing(filepath.Clean(path)) }

// expandGlob returns the existing paths matching an absolute pattern.
// doublestar gives real "**" semantics ("**/.env" matches ".env" too).
// Symbolic links are matched but not followed while walking.
func expandGlob(pattern string) []string {
	base, pat := doublestar.SplitPattern(filepath.Clean(pattern))
	base = unescapeGlob(base)
	var out []string
	_ = doublestar.GlobWalk(os.DirFS(base), pat, func(p string, _ fs.DirEntry) error {
		out = append(out, filepath.Join(base, p))
		return nil
	}, doublestar.WithNoFollow())
	return out
}

// mayMatchBelow reports whether a pattern split into segments could
// match a path strictly below the directory whose relative path is dir.
func mayMatchBelow(segs, dir []string) bool {
	for i, d := range dir {
		if i >= len(segs) {
			return false
		}
		if segs[i] == "**" {
			return true
		}
		if ok, _ := doublestar.Match(segs[i], d); !ok {
			return false
		}
	}
	return len(segs) > len(dir)
}

// makePath builds a Path for an absolute, clean path, from a rule of
// origin o.
func makePath(lit string, o Origin, rule string) Path {
	p := Path{Literal: lit, Rule: rule, Origin: o, literalParent: resolveMissing(filepath.Dir(lit))}
	fi, err := os.Lstat(lit)
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		p.symlink = true
	}
	p.uncheckable = uncheckable(lit, err)
	p.Resolved = resolveMissing(lit)
	fi, err = os.Stat(p.Resolved)
	if err == nil {
		p.Kind = File
		if fi.IsDir() {
			p.Kind = Dir
		}
		p.nlink = links(fi)
	} else if p.uncheckable == nil {
		p.uncheckable = uncheckable(p.Resolved, err)
	}
	return p
}

// resolveMissing resolves every symlink in path. Where path does not exist,
// the longest existing prefix is resolved and the rest appended; a dangling
// link resolves to its target's spelling.
func resolveMissing(path string) string { return resolveMissingDepth(path, 40) }

// resolveMissingDepth is resolveMissing with a bound on link chains, so a
// loop of dangling links ends.
func resolveMissingDepth(path string, n int) string {
	if n == 0 {
		return path
	}
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	if t, err := os.Readlink(path); err == nil {
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(path), t)
		}
		return resolveMissingDepth(filepath.Clean(t), n-1)
	}
	dir, base := filepath.Split(path)
	dir = filepath.Clean(dir)
	if dir == path {
		return path
	}
	return filepath.Join(resolveMissingDepth(dir, n-1), base)
}
