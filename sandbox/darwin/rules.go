package darwin

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/srt-go/srt/policy"
)

// writer builds a profile. The first error sticks; later calls are no-ops.
type writer struct {
	b   strings.Builder
	tag string // the log tag every deny rule carries
	err error
}

func (w *writer) comment(s string) {
	if w.err == nil {
		w.b.WriteString("\n; " + s + "\n")
	}
}

func (w *writer) line(s string) {
	if w.err == nil {
		w.b.WriteString(s + "\n")
	}
}

// rule writes (allow|deny OPS FILTERS) with one filter per line. A deny
// carries (with message TAG) so its log line can be attributed to the
// command. A rule with no filters is not written when filtered is set:
// an empty filter list would mean "everything".
func (w *writer) rule(allow bool, ops string, filters []string, filtered bool) {
	if w.err != nil || filtered && len(filters) == 0 {
		return
	}
	action := "deny"
	if allow {
		action = "allow"
	}
	w.b.WriteString("(" + action + " " + ops)
	for _, f := range filters {
		w.b.WriteString("\n    " + f)
	}
	if !allow {
		m, err := quote(w.tag)
		if err != nil {
			w.err = err
			return
		}
		w.b.WriteString("\n    (with message " + m + ")")
	}
	w.b.WriteString(")\n")
}

// f builds a one-string filter such as (subpath "/x"), recording an
// unsafe string as the writer's error.
func (w *writer) f(kind, s string) string {
	q, err := quote(s)
	if err != nil {
		if w.err == nil {
			w.err = err
		}
		return ""
	}
	return "(" + kind + " " + q + ")"
}

func anyOf(fs []string) string {
	if len(fs) == 1 {
		return fs[0]
	}
	return "(require-any " + strings.Join(fs, " ") + ")"
}

// privateRoots are the top-level symbolic links of macOS into /private.
// sandbox-exec matches rules against the resolved path, so a rule for
// /tmp/x alone never fires (seed 000, "SandboxSpec": every deny is
// written in its literal and its symlink-resolved spelling). The table
// makes both spellings appear even when the profile is generated where
// these are not links (the tests, on Linux).
var privateRoots = []string{"/tmp", "/var", "/etc"}

// aliases returns p and, when p lies in /tmp, /var or /etc or in their
// /private counterparts, the other spelling.
func aliases(p string) []string {
	out := []string{p}
	for _, r := range privateRoots {
		switch {
		case p == r || strings.HasPrefix(p, r+"/"):
			out = append(out, "/private"+p)
		case p == "/private"+r || strings.HasPrefix(p, "/private"+r+"/"):
			out = append(out, strings.TrimPrefix(p, "/private"))
		}
	}
	return out
}

// spellings returns every spelling of the given forms of one path (the
// literal and the resolved one), each with its /private alias, without
// duplicates, in a stable order.
func spellings(forms ...string) []string {
	var out []string
	for _, f := range forms {
		for _, a := range aliases(f) {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

func pathSpellings(p policy.Path) []string { return spellings(p.Literal, p.Resolved) }

// hostSpellings is spellings for a host path given by a caller (seed
// 000's spec): the path as given and symlink-resolved now.
func hostSpellings(p string) []string {
	p = filepath.Clean(p)
	return spellings(p, policy.Resolve(p))
}

// subpaths returns a (subpath S) filter for every spelling.
func (w *writer) subpaths(sp []string) []string {
	var out []string
	for _, s := range sp {
		out = append(out, w.f("subpath", s))
	}
	return out
}

func (w *writer) literals(sp []string) []string {
	var out []string
	for _, s := range sp {
		out = append(out, w.f("literal", s))
	}
	return out
}

// globRegexes converts each spelling of a pattern to a (regex ...) filter.
func (w *writer) globRegexes(patterns []string, fold bool) []string {
	var out []string
	for _, p := range patterns {
		r, err := GlobToRegex(p, fold)
		if err != nil {
			if w.err == nil {
				w.err = fmt.Errorf("pattern %q: %w", p, err)
			}
			return nil
		}
		out = append(out, w.f("regex", r))
	}
	return out
}

func globSpellings(g policy.Glob) []string { return spellings(g.Pattern, g.Resolved) }

// ancestors returns the directories above p, nearest first, "/" excluded.
func ancestors(p string) []string {
	var out []string
	for d := filepath.Dir(p); d != "/" && d != "."; d = filepath.Dir(d) {
		out = append(out, d)
	}
	return out
}

// unlinkSet collects the file-write-unlink denies that stop a rename from
// moving a protected path, or a directory above it, to a name no rule
// covers (seed 000, "Backend natif": "file-write-unlink est refusé sur
// chaque chemin refusé et ses ancêtres").
type unlinkSet struct {
	literal []string // directories, matched exactly
	pattern []string // glob patterns, matched as regexes
}

func (u *unlinkSet) addPath(sp []string) {
	for _, s := range sp {
		for _, a := range ancestors(s) {
			if !slices.Contains(u.literal, a) {
				u.literal = append(u.literal, a)
			}
		}
	}
}

// addGlob adds the directories above a pattern: those of its literal
// base, and every longer prefix ending at a component boundary that is
// not itself "**" (a "**" prefix would match every directory, and a name
// pattern below it already matches at any depth). For "**/.git/hooks/**"
// that is "**/.git": renaming .git away and back would otherwise carry
// hooks written under another name.
func (u *unlinkSet) addGlob(pattern string) {
	base, _ := doublestar.SplitPattern(pattern)
	if strings.HasPrefix(base, "/") {
		u.addPath([]string{base + "/x"})
	}
	parts := strings.Split(pattern, "/")
	for k := 1; k < len(parts); k++ {
		prefix := strings.Join(parts[:k], "/")
		if parts[k-1] == "**" || !strings.ContainsAny(prefix, "*?[{") {
			continue
		}
		if !slices.Contains(u.pattern, prefix) {
			u.pattern = append(u.pattern, prefix)
		}
	}
}

func (w *writer) unlinkFilters(u *unlinkSet) []string {
	out := w.literals(u.literal)
	return append(out, w.globRegexes(u.pattern, true)...)
}
