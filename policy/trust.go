package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// The threat model behind this file (SECURITY.md, "Cross-run attacks"):
// the sandboxed command controls the contents of its write roots between
// runs (it can leave any symbolic link there, rename any directory, chmod
// what it owns), and any local user controls world-writable directories
// such as /tmp. Every path the policy resolves at start is therefore
// attacker-influenced input. A symbolic link is followed only when neither
// could have made it; otherwise the rule that crosses it is refused, or,
// for a path srt adds on its own (the default write paths, a glob's
// match), left out.

// linkGuard decides whether a symbolic link met while resolving a rule
// may be followed.
type linkGuard struct {
	// euid is the user srt runs as: links and directories it or root own
	// are its own.
	euid uint32
	// roots are the write roots, clean absolute paths: each as spelled and
	// as resolved. Anything inside one was within the sandbox's reach.
	roots []string
}

// untrustedLink explains why the link named by name in the resolved
// directory dir may have been made by the sandbox or by another user, or
// returns "" when only the user or root could have made it. A link
// inside a write root may come from an earlier run; one owned by someone
// else, or in a directory someone else can change (its owner, or a
// group- or world-writable directory without the sticky bit), from
// another local user. Sticky directories (/tmp) keep their entries for
// their owners (unlink(2), rename(2): EPERM for others), so a link the
// user owns there is the user's.
func (g *linkGuard) untrustedLink(dir string, link fs.FileInfo) string {
	for _, r := range g.roots {
		if Within(dir, r) {
			return fmt.Sprintf("it lies inside the write root %s, where the sandbox could have made it in an earlier run", r)
		}
	}
	if uid, ok := owner(link); ok && uid != 0 && uid != g.euid {
		return fmt.Sprintf("it is owned by another user (uid %d)", uid)
	}
	return othersCanChange(dir, g.euid)
}

// othersCanChange explains why users other than euid and root could add,
// rename or remove entries of directory dir, or returns "".
func othersCanChange(dir string, euid uint32) string {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Sprintf("its directory cannot be checked: %v", err)
	}
	if uid, ok := owner(fi); ok && uid != 0 && uid != euid {
		return fmt.Sprintf("its directory %s is owned by another user (uid %d)", dir, uid)
	}
	if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return fmt.Sprintf("its directory %s is writable by other users (mode %04o)", dir, fi.Mode().Perm())
	}
	return ""
}

// linkError is an untrusted symbolic link met while resolving a rule.
type linkError struct {
	// Link is the link as srt met it: its directory resolved, its own
	// name as listed.
	Link string
	// Why says who could have made it.
	Why string
	// Final says the link is the last component of the path resolved.
	Final bool
}

func (e *linkError) Error() string {
	return fmt.Sprintf("%s is a symbolic link, and %s", e.Link, e.Why)
}

// hint is what the user can do about a linkError met while resolving lit:
// name the target, or, when the link is on the way to the working
// directory (a relative rule), work from the directory's real path.
func hint(lit, cwd string, le *linkError) string {
	if Within(cwd, le.Link) && Within(lit, cwd) {
		return "work from the directory's real path (cd \"$(pwd -P)\") or name the target instead"
	}
	return "name the target instead"
}

// resolve is resolveMissing for an absolute clean path, walked by
// walkPath: a symbolic link is followed only when untrustedLink has
// nothing against it, else the result is a *linkError naming it.
func (g *linkGuard) resolve(lit string) (string, error) {
	return walkPath(lit, func(dir, link string, fi fs.FileInfo, final bool) error {
		if why := g.untrustedLink(dir, fi); why != "" {
			return &linkError{Link: link, Why: why, Final: final}
		}
		return nil
	})
}

// walkPath resolves the absolute path lit one component at a time with
// lstat(2), as the kernel does (path_resolution(7): ".." after a
// followed link goes to the parent of its target), calling onLink for
// each symbolic link met (its resolved directory, the link, its lstat,
// whether it is the last component) before following it; an error from
// onLink ends the walk. The part of lit that does not exist is kept as
// spelled. A component srt cannot look at for a reason the sandbox could
// have made is an error (uncheckable); more than 40 links, ELOOP.
func walkPath(lit string, onLink func(dir, link string, fi fs.FileInfo, final bool) error) (string, error) {
	cur := "/"
	rest := splitPath(lit)
	for follows := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil {
			if u := uncheckable(next, err); u != nil {
				return "", u
			}
			return filepath.Join(append([]string{next}, rest...)...), nil
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if err := onLink(cur, next, fi, len(rest) == 0); err != nil {
			return "", err
		}
		if follows++; follows > 40 {
			return "", fmt.Errorf("%s: %w", lit, syscall.ELOOP)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(splitPath(target), rest...)
	}
	return cur, nil
}

func splitPath(p string) []string { return strings.Split(p, "/") }

// ownDirectory explains why path cannot be a default write path, or
// returns "": it must be a real directory (not a link) owned by euid, in
// a directory no other user can change, reached through no link the
// sandbox or another user could have made (a planted ~/.npm/_logs -> /,
// or /tmp/claude made by another user, would otherwise make the next run
// write anywhere).
func (g *linkGuard) ownDirectory(path string) string {
	res, err := g.resolve(path)
	if err != nil {
		return err.Error()
	}
	fi, err := os.Lstat(res)
	if err != nil {
		return "it does not exist"
	}
	if !fi.IsDir() {
		return "it is not a directory"
	}
	if uid, ok := owner(fi); ok && uid != g.euid {
		return fmt.Sprintf("it is owned by uid %d, not by uid %d", uid, g.euid)
	}
	return othersCanChange(filepath.Dir(res), g.euid)
}

// ruleDefaultWrite is the Rule of the reference's always-writable paths.
const ruleDefaultWrite = "default write path"

// defaultWritePaths are the reference's always-writable paths. Each is a
// write root only where it is the user's own directory (ownDirectory).
func defaultWritePaths(home string) []string {
	return []string{"/tmp/claude", filepath.Join(home, ".npm/_logs"), filepath.Join(home, ".claude/debug")}
}

// guardWrites sets the policy's write roots from the allowWrite entries
// (explicit, each a literal entry or a glob's match) and the default write
// paths, and returns the guard that judges every other rule's links
// against them.
//
// An explicit entry whose resolution crosses a link the sandbox or another
// user could have made is refused (ErrUnenforceable); a glob's match or a
// default path that does is left out, with a note. The guard's roots are
// the entries as spelled and as resolved through accepted links, so a
// link inside a write root reached through a link of the user's own
// counts as inside it.
func (r *resolver) guardWrites(explicit []Path) (*linkGuard, error) {
	cands := explicit
	for _, d := range defaultWritePaths(r.home) {
		cands = append(cands, makePath(d, OriginDefault, ruleDefaultWrite))
	}
	g := &linkGuard{euid: euid()}
	for _, c := range cands {
		g.roots = append(g.roots, c.Literal)
	}
	for _, u := range r.untrusted {
		g.roots = append(g.roots, filepath.Clean(u))
		if res, err := filepath.EvalSymlinks(u); err == nil {
			g.roots = append(g.roots, res)
		}
	}
	var reached []string
	for _, c := range cands {
		if c.Origin == OriginDefault && g.ownDirectory(c.Literal) != "" {
			continue
		}
		if res, err := g.resolve(c.Literal); err == nil {
			reached = append(reached, res)
		}
	}
	g.roots = slices.Compact(slices.Sorted(slices.Values(append(g.roots, reached...))))
	var out []Path
	for _, c := range cands {
		res, err := g.resolve(c.Literal)
		var le *linkError
		switch {
		case c.Origin == OriginDefault:
			if why := g.ownDirectory(c.Literal); why != "" {
				if c.Kind != Missing {
					r.p.Notes = append(r.p.Notes, fmt.Sprintf("%s %s left out: %s", c.Rule, c.Literal, why))
				}
				continue
			}
		case err != nil && c.globMatch && errors.As(err, &le):
			r.p.Notes = append(r.p.Notes, fmt.Sprintf("%s: match %s left out: %v", c.Rule, c.Literal, err))
			continue
		case err != nil && !errors.As(err, &le):
			return nil, fmt.Errorf("%s: %w", c.Rule, err)
		case err != nil:
			return nil, fmt.Errorf("%s: %s: %w; a write root must not be reached through it, since a run could re-point it at any directory: %s: %w", c.Rule, c.Literal, err, hint(c.Literal, r.cwd, le), ErrUnenforceable)
		}
		out = append(out, c.at(res))
	}
	r.p.AllowWrite = out
	return g, nil
}

// guardRules resolves the entries of a read or deny list with the guard:
// an entry crossing a link the sandbox or another user could have made is
// refused, since the next run could re-point the link and move the rule
// off the file it protects (ErrUnenforceable). A deny glob's match keeps
// its plain resolution (the glob walk follows links on purpose, and its
// target is denied at every spelling); an allowRead glob's match crossing
// such a link is left out, so that a planted link cannot re-open a denied
// path.
func (r *resolver) guardRules(g *linkGuard, list []Path, kind listKind) ([]Path, error) {
	out := list[:0]
	for _, e := range list {
		res, err := g.resolve(e.Literal)
		var le *linkError
		switch {
		case err == nil:
			if !e.globMatch {
				e = e.at(res)
			}
		case e.globMatch && kind != allowReadList:
		case e.globMatch && errors.As(err, &le):
			r.p.Notes = append(r.p.Notes, fmt.Sprintf("%s: match %s left out: %v", e.Rule, e.Literal, err))
			continue
		case errors.As(err, &le) && le.Final && kind == denyWriteList && e.Origin == OriginUser:
			// A write-denied link itself (a dotfiles ~/.bashrc): its
			// target is protected, and the link is one of
			// Policy.LinkedDenies, which the backend protects or refuses.
		case !errors.As(err, &le):
			return nil, fmt.Errorf("%s: %w", e.Rule, err)
		default:
			return nil, fmt.Errorf("%s: %s: %w; the rule must not be spelled through it, since a run could re-point it and move the rule off what it protects: %s: %w", e.Rule, e.Literal, err, hint(e.Literal, r.cwd, le), ErrUnenforceable)
		}
		out = append(out, e)
	}
	return out, nil
}

// listKind says which settings list guardRules judges.
type listKind int

const (
	denyReadList listKind = iota
	allowReadList
	denyWriteList
)

// at returns p resolved to res (a resolution of p.Literal), with Kind
// taken from what is there now.
func (p Path) at(res string) Path {
	p.Resolved = res
	p.Kind = Missing
	if fi, err := os.Stat(res); err == nil {
		p.Kind = File
		if fi.IsDir() {
			p.Kind = Dir
		}
	}
	return p
}

// guarded resolves path e (its Literal) with the policy's guard, as
// guardRules does for a literal rule: a link the sandbox or another user
// could have made is refused (ErrUnenforceable).
func (p *Policy) guarded(e Path) (Path, error) {
	if p.guard == nil {
		return e, nil
	}
	res, err := p.guard.resolve(e.Literal)
	if err != nil {
		return e, fmt.Errorf("%s: %s: %w; a mount must not be reached through it, since a session could re-point it: name the target instead: %w", e.Rule, e.Literal, err, ErrUnenforceable)
	}
	return e.at(res), nil
}

// uncheckable returns why path could not be looked at, when the sandbox
// could have caused it: lstat(2) failed with err, not for want of the
// path (ENOENT, ENOTDIR) but because a directory on the way cannot be
// searched (EACCES: an earlier run's chmod 0600), and that directory
// belongs to the user, so that a run can chmod it back and reach what is
// behind it. A directory of another user's is left alone: the sandbox
// cannot search it either, or change that. nil when nothing is in the way
// (root searches every directory).
func uncheckable(path string, err error) error {
	if err == nil || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		// The directory reached, not a link spelling it: a link another
		// user made to the user's directory must not make it look like
		// that user's (found by an adversarial review).
		if fi, e := os.Stat(d); e == nil {
			if uid, ok := owner(fi); ok && uid != euid() {
				return nil
			}
			return fmt.Errorf("%s cannot be checked (%w): the directory %s is in the way, and a run of the sandbox could have changed its permissions to hide what is behind it; restore them (chmod u+rwx %s): %w", path, err, d, d, ErrUnenforceable)
		}
		if d == "/" {
			return nil
		}
	}
}

// unlistable returns why directory dir, which srt could not list or
// search (err), must make the run refuse: it is the user's (see
// uncheckable). nil for another user's directory. Whose it is is judged
// on the directory dir resolves to, not on a link spelling it (dir is
// the path a walk reached, perhaps through a link another user left in
// /tmp: found by an adversarial review).
func unlistable(dir string, err error) error {
	fi, e := os.Stat(dir)
	if e != nil {
		return uncheckable(dir, e)
	}
	if uid, ok := owner(fi); ok && uid != euid() {
		return nil
	}
	return fmt.Errorf("directory %s cannot be listed or searched (%w), and a run of the sandbox could have changed its permissions to hide what is in it; restore them (chmod u+rwx %s): %w", dir, err, dir, ErrUnenforceable)
}
