package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/srt-go/srt/policy/dirindex"
)

// walkFormat changes whenever what a deny walk stores per directory, or
// how it decides it, changes: part of every index key, so that a build
// never reuses another's results.
const walkFormat = "deny-walk 3"

// denyWalk is one deny glob's walk (expandDeny).
type denyWalk struct {
	pat  string
	segs []string
	// prune says directories no match can lie under are not entered:
	// false when a brace alternative may hold a "/", so that segments do
	// not line up with directory levels.
	prune bool
	// scope, for a write-deny, are the resolved write roots: only what
	// resolves inside one is matched (a match elsewhere is not writable,
	// so needs no mount); outside them the walk only looks for links
	// back in. nil for a read-deny: reads are possible everywhere.
	scope []string
	// ix is the run's index (nil: none), idx this walk's stored results.
	ix    *dirindex.Index
	idx   *dirindex.Walk
	seen  map[[2]uint64]bool
	onErr func(dir string, err error)
	out   []string
}

// expandDeny returns the existing paths matching an absolute deny
// pattern, each by the path it was reached at (makePath resolves it to
// its target, which the deny then covers at every spelling). The walk
// follows symbolic links to directories, each directory entered once by
// device and inode so that a loop ends; onErr hears of every directory
// that could not be read or searched (anything but "gone" and "not a
// directory"), so that a directory made unsearchable between runs does
// not hide what lies below it.
//
// With writeRoots not nil (a write-deny), only what is writable is
// matched: a directory inside a write root is walked as a read-deny's
// is; one outside every write root (a part of the base the sandbox
// cannot change, or a directory a link leads to) is entered, its
// subdirectories and links to directories looked into wherever they
// lead, and nothing in it matched unless it resolves into a write root
// (a file write root, a link to a file inside one): a match is writable
// only inside a write root, but may be reached from outside one through
// a link, or a chain of them, by that spelling (found by adversarial
// reviews: "p/lnk -> W/sub" with "**/.env" run from p; "p/l1 -> el",
// "el/l2 -> W/sub"). No write root at all: nothing is walked. A
// directory is marked seen only once read, so that one that cannot be
// read is reported at each spelling reached, its real path among them.
//
// ix, when not nil, holds what earlier runs read from each directory of
// this walk; a directory unchanged since (dirindex) is not read again.
func expandDeny(pattern string, writeRoots []Path, ix *dirindex.Index, onErr func(dir string, err error)) []string {
	base, pat := doublestar.SplitPattern(filepath.Clean(pattern))
	base = unescapeGlob(base)
	w := &denyWalk{pat: pat, segs: strings.Split(pat, "/"), prune: !strings.Contains(pat, "{"),
		ix: ix, seen: map[[2]uint64]bool{}, onErr: onErr}
	mode := "read"
	if writeRoots != nil {
		mode = "write"
		w.scope = []string{}
		for _, r := range writeRoots {
			if r.Kind != Missing {
				w.scope = append(w.scope, r.Resolved)
			}
		}
		if len(w.scope) == 0 {
			return nil
		}
	}
	// The key names what each directory's result depends on (the
	// pattern, the build) and what the walk visits (its scope): a walk of
	// the same pattern with other write roots keeps its own directories.
	w.idx = ix.Walk(walkFormat + "\x00" + buildID() + "\x00" + mode + "\x00" + pattern + "\x00" + strings.Join(w.scope, "\x00"))
	w.walk(base, resolveMissing(base), nil)
	return w.out
}

// inScope reports whether resolved path lies in the walk's scope.
func (w *denyWalk) inScope(path string) bool {
	if w.scope == nil {
		return true
	}
	return slices.ContainsFunc(w.scope, func(r string) bool { return Within(path, r) })
}

// walk walks directory dir, resolved to res, at rel below the base.
func (w *denyWalk) walk(dir, res string, rel []string) {
	st, err := w.ix.StatDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) && !errors.Is(err, syscall.ELOOP) {
			// Not searchable (EACCES below a mode-600 parent) or worse:
			// what lies below cannot be known.
			w.onErr(dir, err)
		}
		return // gone, not a directory, or a link loop: nothing below
	}
	id, ok := [2]uint64{st.Dev, st.Ino}, st.Ino != 0
	if !ok {
		if fi, err := os.Stat(dir); err == nil {
			id, ok = fileID(fi)
		}
	}
	if ok && w.seen[id] {
		return
	}
	inside := w.inScope(res)
	key := dir + "\x00" + strings.Join(rel, "/")
	r, hit := w.idx.Lookup(key, st)
	if !hit {
		// Read through a descriptor, and store the state taken from it:
		// the listing and its state are of one directory.
		d, dst, err := w.ix.OpenDir(dir)
		if err == nil {
			var ents []os.DirEntry
			if ents, err = d.ReadDir(); err == nil {
				r = w.read(ents, rel)
				w.idx.Store(key, dst, r)
			}
		}
		if err != nil {
			w.onErr(dir, err)
			return
		}
	}
	// Seen only once read: a directory that could not be read is
	// reported at every spelling the walk reaches, its real path among
	// them (a link another user made to it must not be the only one).
	w.seen[id] = ok
	for _, e := range r.Entries {
		full := filepath.Join(dir, e.Name)
		// Outside the scope, a match counts where it is itself a write
		// root (a file) or a link to something inside one.
		if e.Match && (inside || w.inScope(resolveMissing(full))) {
			w.out = append(w.out, full)
		}
		var sub string
		switch e.Kind {
		case dirindex.EnterDir:
			sub = filepath.Join(res, e.Name)
		case dirindex.EnterLink:
			// Followed wherever it leads: outside the scope the walk
			// matches nothing but keeps looking for links back into it
			// (a chain "p/l1 -> el", "el/l2 -> W/sub": found by an
			// adversarial review); the seen set ends loops.
			sub = resolveMissing(full)
		default:
			continue
		}
		w.walk(full, sub, append(slices.Clip(rel), e.Name))
	}
}

// read is what the walk takes from a directory's listing: its entries
// that match, and those to look into (directories, and links that may
// lead to one, under which a match may lie), in the listing's order.
func (w *denyWalk) read(ents []os.DirEntry, rel []string) dirindex.Result {
	slices.SortFunc(ents, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	var res dirindex.Result
	for _, e := range ents {
		sub := append(slices.Clip(rel), e.Name())
		ent := dirindex.Entry{Name: e.Name()}
		ent.Match, _ = doublestar.Match(w.pat, strings.Join(sub, "/"))
		if !w.prune || mayMatchBelow(w.segs, sub) {
			switch {
			case e.Type()&fs.ModeSymlink != 0:
				ent.Kind = dirindex.EnterLink
			case e.IsDir():
				ent.Kind = dirindex.EnterDir
			}
		}
		if ent.Match || ent.Kind != dirindex.EnterNone {
			res.Entries = append(res.Entries, ent)
		}
	}
	return res
}

// buildID names this build of srt for the index keys: its module
// version and VCS revision, or "unknown".
var buildID = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	id := bi.Main.Path + "@" + bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision", "vcs.time", "vcs.modified":
			id += " " + s.Key + "=" + s.Value
		}
	}
	return id
})

// indexUsable returns path, the index file, or "" when it lies inside a
// write root or a tree a sandbox may have written (roots, the link
// guard's): a run could then have written it.
func indexUsable(path string, roots []string) string {
	if path == "" {
		return ""
	}
	dir := filepath.Dir(filepath.Clean(path))
	for _, d := range slices.Compact([]string{dir, resolveMissing(dir)}) {
		for _, r := range roots {
			if Within(d, r) || Within(r, d) {
				return ""
			}
		}
	}
	return path
}

// indexNote is the debug note of an index that could not be saved.
func indexNote(err error) string { return fmt.Sprintf("directory index not saved: %v", err) }

// indexDir is the directory of index file path, or "".
func indexDir(path string) string {
	if path == "" {
		return ""
	}
	return filepath.Dir(filepath.Clean(path))
}
