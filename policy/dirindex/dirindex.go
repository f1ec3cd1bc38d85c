// Package dirindex keeps, between runs of srt, what a deny glob's walk
// found in each directory it entered (the names that matched, the
// entries to look into), so that the next run reuses it instead of
// reading a directory that has not changed since (issue 19: start-up
// flat in tree size).
//
// A stored result is reused only when the directory, opened and
// statx(2)ed now, is the same inode with the same ctime and mtime (to the
// nanosecond) on a local file system whose ctime the kernel maintains
// (an allowlist of statfs types), and was not changed within RacyWindow
// of the moment it was read (racily clean, as git's index). ctime counts
// because nobody unprivileged can set it: every change to a directory's
// entries and utimensat(2) itself set it to now. Any doubt is a miss:
// the caller reads the directory. The index is an optimisation only; a
// missing, corrupt, foreign or oversized file is ignored, never an error.
package dirindex

import (
	"bytes"
	"cmp"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// MaxSize bounds the index file in bytes: a larger one is not read, and
// one that would be larger is not written (the old file is removed).
const MaxSize = 64 << 20

// RacyWindow is how recent a directory's ctime may be, relative to when
// it was read, for its result to be stored: a change within the same
// timestamp tick as the read could leave ctime unchanged.
const RacyWindow = 2 * time.Second

// magic starts an index file; formatVersion is the layout of what follows.
const (
	magic         = "srt-go dirindex\n"
	formatVersion = 3
)

// Stat is what identifies a directory's state: its device and inode,
// its ctime and mtime in nanoseconds since the epoch, and the statfs(2)
// type of its file system (0 where unknown).
type Stat struct {
	Dev, Ino     uint64
	Ctime, Mtime int64
	FSType       int64
}

// Result is what a walk took from one directory's listing: the entries
// that matched its pattern or are to be looked into next, in the
// listing's order.
type Result struct {
	Entries []Entry
}

// Entry is one directory entry a walk kept.
type Entry struct {
	Name string
	// Match says the entry matched the walk's pattern.
	Match bool
	// Kind says whether the walk looks into the entry.
	Kind Enter
}

// Enter says whether and how a walk looks into an entry.
type Enter uint8

const (
	// EnterNone is an entry the walk does not look into.
	EnterNone Enter = iota
	// EnterDir is a directory: its identity is part of the parent's
	// state, so it is looked into without a further check.
	EnterDir
	// EnterLink is a symbolic link: its target can change without the
	// directory changing, so the caller judges it anew on every run.
	EnterLink
)

type record struct {
	Stat   Stat
	Result Result
}

// stored is one walk's directories, by the path the walk reached each at.
type stored struct {
	// Used is when a run last used the walk (Unix nanoseconds), to drop
	// the oldest walks first (MaxWalks, MaxSize).
	Used int64
	// Dirs is the walk's map[string]record (encodeDirs), decoded only
	// when a run makes that walk.
	Dirs []byte
}

type fileData struct {
	Version int
	Walks   map[string]stored
}

// MaxWalks bounds how many walks the file keeps (other settings' and
// other trees' walks, most recently used first).
const MaxWalks = 64

// Index is the set of stored walks of one index file. The zero value and
// nil are a disabled index: every Lookup misses and Save does nothing.
// An Index is not safe for concurrent use.
type Index struct {
	path string
	// loaded says the file was read (on the first Walk).
	loaded bool
	old    map[string]stored
	walks  map[string]*Walk
	// fsTypes and stats cache, for one run, the file system type of each
	// device and the state of each directory by path (StatDir): the deny
	// walks and the mandatory walk pass the same directories.
	fsTypes map[uint64]int64
	stats   map[string]Stat
	// now is time.Now, replaceable by tests.
	now func() time.Time
}

// Open loads the index file at path (absolute; "" disables the index).
// The file is used only if it is a regular file of the caller's own with
// mode 0600 or stricter, in a directory of the caller's own that no one
// else can write, reached through no symbolic link (openat2
// RESOLVE_NO_SYMLINKS on Linux), at most MaxSize bytes, of this format;
// else the index starts empty.
func Open(path string) *Index { return OpenWithClock(path, time.Now) }

// OpenWithClock is Open with now in place of time.Now for the racily
// clean check (Walk.Store), for tests that cannot wait RacyWindow.
func OpenWithClock(path string, now func() time.Time) *Index {
	return &Index{path: path, old: map[string]stored{}, walks: map[string]*Walk{}, now: now,
		fsTypes: map[uint64]int64{}, stats: map[string]Stat{}}
}

// load reads the file, once; what cannot be trusted or decoded is left
// out (see Open).
func (ix *Index) load() {
	if ix.loaded {
		return
	}
	ix.loaded = true
	if !privateDir(filepath.Dir(ix.path)) {
		return
	}
	f, err := openPrivate(ix.path)
	if err != nil {
		return
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil || len(b) > MaxSize || !bytes.HasPrefix(b, []byte(magic)) {
		return
	}
	var d fileData
	if gob.NewDecoder(bytes.NewReader(b[len(magic):])).Decode(&d) != nil || d.Version != formatVersion {
		return
	}
	ix.old = d.Walks
	if ix.old == nil {
		ix.old = map[string]stored{}
	}
}

// StatDir is the package's StatDir, remembered for the rest of the run;
// on a nil Index, not remembered.
func (ix *Index) StatDir(path string) (Stat, error) {
	if ix == nil {
		return StatDir(path, nil)
	}
	if st, ok := ix.stats[path]; ok {
		return st, nil
	}
	st, err := StatDir(path, ix.fsTypes)
	if err == nil {
		ix.stats[path] = st
	}
	return st, err
}

// OpenDir is the package's OpenDir with the run's file system types.
func (ix *Index) OpenDir(path string) (*Dir, Stat, error) {
	if ix == nil {
		return OpenDir(path, nil)
	}
	return OpenDir(path, ix.fsTypes)
}

// Walk returns the stored results of the walk named key (the caller's
// description of everything a result depends on: pattern, base, how
// links are followed, the program's version). Calling it twice with one
// key returns the same Walk.
func (ix *Index) Walk(key string) *Walk {
	if ix == nil || ix.path == "" {
		return nil
	}
	if w := ix.walks[key]; w != nil {
		return w
	}
	ix.load()
	w := &Walk{ix: ix, fresh: map[string]record{}}
	if s, ok := ix.old[key]; ok {
		var err error
		if w.old, err = decodeDirs(s.Dirs); err != nil {
			w.old = nil // corrupt: every Lookup misses
		}
	}
	ix.walks[key] = w
	return w
}

// Walk is one walk's stored results. A nil *Walk misses every Lookup.
type Walk struct {
	ix         *Index
	old, fresh map[string]record
	// stored says Store recorded something: the file needs writing.
	stored bool
	// hits counts the Lookups that found a result.
	hits int
}

// Stats returns how many directories the walk took from the index (hits)
// and how many it holds for the next run (kept), for debug output and
// tests. Zero for a nil Walk.
func (w *Walk) Stats() (hits, kept int) {
	if w == nil {
		return 0, 0
	}
	return w.hits, len(w.fresh)
}

// changed reports whether the walk's directories differ from the file's.
func (w *Walk) changed() bool { return w.stored || len(w.fresh) != len(w.old) }

// Lookup returns the result stored for directory dir (the path the walk
// reached it at) when st, its state now, shows it unchanged since (see
// the package comment); ok is false otherwise.
func (w *Walk) Lookup(dir string, st Stat) (r Result, ok bool) {
	if w == nil || !Cacheable(st) {
		return Result{}, false
	}
	rec, ok := w.old[dir]
	if !ok || rec.Stat != st {
		return Result{}, false
	}
	w.fresh[dir] = rec
	w.hits++
	return rec.Result, true
}

// Store records the result of reading directory dir, whose state st was
// taken before it was read. A directory on a file system off the
// allowlist, or changed within RacyWindow of now, is not stored.
func (w *Walk) Store(dir string, st Stat, r Result) {
	if w == nil || !Cacheable(st) {
		return
	}
	if w.ix.now().UnixNano()-st.Ctime < int64(RacyWindow) || w.ix.now().UnixNano()-st.Mtime < int64(RacyWindow) {
		return
	}
	w.fresh[dir] = record{Stat: st, Result: Result{Entries: slices.Clip(r.Entries)}}
	w.stored = true
}

// Stats sums Walk.Stats over the walks of this run.
func (ix *Index) Stats() (hits, kept int) {
	if ix == nil {
		return 0, 0
	}
	for _, w := range ix.walks {
		h, k := w.Stats()
		hits, kept = hits+h, kept+k
	}
	return hits, kept
}

// Save writes the index back: each walk of this run holds exactly the
// directories it entered, other walks in the file are kept, the oldest
// dropped first past MaxSize. The file is written to a temporary file
// and renamed over the old one, so a concurrent run reads either whole.
// It does nothing for a disabled index, when every walk found what the
// file holds, or when the directory cannot be made private; the error is
// for debug output only.
func (ix *Index) Save() error {
	if ix == nil || ix.path == "" || !slices.ContainsFunc(slices.Collect(maps.Values(ix.walks)), (*Walk).changed) {
		return nil
	}
	d := fileData{Version: formatVersion, Walks: map[string]stored{}}
	now := ix.now().UnixNano()
	size := 0
	for k, w := range ix.walks {
		s := stored{Used: now, Dirs: ix.old[k].Dirs}
		if w.changed() || s.Dirs == nil {
			s.Dirs = encodeDirs(w.fresh)
		}
		d.Walks[k] = s
		size += len(k) + len(s.Dirs)
	}
	// Other walks (other settings' patterns, other trees), the most
	// recently used first, while they fit.
	others := make([]string, 0, len(ix.old))
	for k := range ix.old {
		if ix.walks[k] == nil {
			others = append(others, k)
		}
	}
	slices.SortFunc(others, func(a, b string) int { return cmp.Compare(ix.old[b].Used, ix.old[a].Used) })
	for _, k := range others {
		n := len(k) + len(ix.old[k].Dirs)
		if len(d.Walks) >= MaxWalks || size+n > MaxSize-1<<20 {
			break
		}
		d.Walks[k] = ix.old[k]
		size += n
	}
	b, err := encode(d)
	if err != nil {
		return err
	}
	dir, name := filepath.Split(ix.path)
	if len(b) > MaxSize {
		_ = writeIndex(dir, name, nil)
		return fmt.Errorf("index of %d bytes exceeds %d: %w", len(b), MaxSize, errTooLarge)
	}
	return writeIndex(dir, name, b)
}

var (
	errNotPrivate = errors.New("not a private directory of this user's")
	errTooLarge   = errors.New("index too large")
)

func encode(d fileData) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(magic)
	if err := gob.NewEncoder(&buf).Encode(d); err != nil {
		return nil, fmt.Errorf("encode index: %w", err)
	}
	return buf.Bytes(), nil
}

// DefaultPath returns where srt keeps its index: srt-go/dirindex in
// $XDG_RUNTIME_DIR when that is /run/user/<euid> (the only runtime
// directory CandidateDirs can know without the variable) and a private
// directory of the caller's own, else in ~/.cache; "" when neither is
// known.
func DefaultPath() string {
	if d := DefaultDir(); d != "" {
		return filepath.Join(d, "dirindex")
	}
	return ""
}

// DefaultDir is the directory of DefaultPath: /run/user/<euid>/srt-go or
// ~/.cache/srt-go.
func DefaultDir() string {
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.Clean(x) == runtimeDir() && privateDir(x) {
		return filepath.Join(runtimeDir(), "srt-go")
	}
	return homeDir()
}

// CandidateDirs are every directory DefaultDir can be in some
// environment of this user's (/run/user/<euid>/srt-go, and
// ~/.cache/srt-go for $HOME), plus $XDG_RUNTIME_DIR/srt-go when that is
// set: each sandbox denies them all, so that a run whose environment
// names one cannot write the index a run with another environment
// trusts (found by an adversarial review: a run with XDG_RUNTIME_DIR
// set and allowWrite ["~"] wrote ~/.cache/srt-go/dirindex).
func CandidateDirs() []string {
	out := []string{filepath.Join(runtimeDir(), "srt-go")}
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) {
		out = append(out, filepath.Join(filepath.Clean(x), "srt-go"))
	}
	if h := homeDir(); h != "" {
		out = append(out, h)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// runtimeDir is /run/user/<euid>, the runtime directory systemd-logind
// makes for a user.
func runtimeDir() string { return fmt.Sprintf("/run/user/%d", os.Geteuid()) }

// homeDir is ~/.cache/srt-go, or "" when $HOME is unknown or relative.
func homeDir() string {
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return ""
	}
	return filepath.Join(filepath.Clean(home), ".cache", "srt-go")
}
