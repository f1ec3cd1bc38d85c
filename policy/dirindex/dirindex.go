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
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxSize bounds one walk's file in bytes: a larger one is not read, and
// one that would be larger is not written (the old file is removed).
// With MaxWalks, the index holds at most 1 GiB; a 100,000-file tree's
// walk takes about 1 MB.
const MaxSize = 16 << 20

// RacyWindow is how recent a directory's ctime may be, relative to when
// it was read, for its result to be stored: a change within the same
// timestamp tick as the read could leave ctime unchanged.
const RacyWindow = 2 * time.Second

// magic starts a walk's file; formatVersion is the layout of what
// follows: the version (uvarint), the walk's key (uvarint length, bytes)
// and its directories (encodeDirs).
const (
	magic         = "srt-go dirindex\n"
	formatVersion = 4
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

// MaxWalks bounds how many walks the index keeps (other settings' and
// other trees' walks; the most recently used, by file mtime, first).
const MaxWalks = 64

// Index is the set of stored walks at one path: each walk is a file of
// its own, path + "." + a hash of its key, so that a start reads and
// writes only the walks it makes (one file of every walk cost a small
// start ~1,500 page faults once the index held other trees' walks). The
// zero value and nil are a disabled index: every Lookup misses and Save
// does nothing. An Index is not safe for concurrent use.
type Index struct {
	path string
	// private says path's directory is a private one of the caller's
	// (checked on the first Walk); privateKnown that it was checked.
	private, privateKnown bool
	walks                 map[string]*Walk
	// fsTypes and stats cache, for one run, the file system type of each
	// device and the state of each directory by path (StatDir): the deny
	// walks and the mandatory walk pass the same directories.
	fsTypes map[uint64]int64
	stats   map[string]Stat
	// now is time.Now, replaceable by tests.
	now func() time.Time
}

// Open returns the index at path (absolute; "" disables the index). A
// walk's file is used only if it is a regular file of the caller's own
// with mode 0600 or stricter, in a directory of the caller's own that no
// one else can write, reached through no symbolic link (openat2
// RESOLVE_NO_SYMLINKS on Linux), at most MaxSize bytes, of this format
// and of this very key; else the walk starts empty.
func Open(path string) *Index { return OpenWithClock(path, time.Now) }

// OpenWithClock is Open with now in place of time.Now for the racily
// clean check (Walk.Store), for tests that cannot wait RacyWindow.
func OpenWithClock(path string, now func() time.Time) *Index {
	return &Index{path: path, walks: map[string]*Walk{}, now: now,
		fsTypes: map[uint64]int64{}, stats: map[string]Stat{}}
}

// walkFile is the file of the walk named key.
func (ix *Index) walkFile(key string) string {
	h := sha256.Sum256([]byte(key))
	return ix.path + "." + hex.EncodeToString(h[:16])
}

// read returns the directories stored for key, and whether its file was
// there and trusted (see Open); a used walk's file gets the run's time as
// its mtime, for MaxWalks.
func (ix *Index) read(key string) (map[string]record, bool) {
	if !ix.privateKnown {
		ix.privateKnown, ix.private = true, privateDir(filepath.Dir(ix.path))
	}
	if !ix.private {
		return nil, false
	}
	f, err := openPrivate(ix.walkFile(key))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil || len(b) > MaxSize {
		return nil, false
	}
	dirs, ok := decodeWalk(b, key)
	if ok {
		touch(f, ix.now())
	}
	return dirs, ok
}

// encodeWalk is the content of key's file.
func encodeWalk(version uint64, key string, dirs []byte) []byte {
	b := binary.AppendUvarint([]byte(magic), version)
	b = appendString(b, key)
	return append(b, dirs...)
}

// decodeWalk returns the directories of a walk's file b, if it is of
// this format and of key.
func decodeWalk(b []byte, key string) (map[string]record, bool) {
	rest, ok := bytes.CutPrefix(b, []byte(magic))
	if !ok {
		return nil, false
	}
	v, n := binary.Uvarint(rest)
	if n <= 0 || v != formatVersion {
		return nil, false
	}
	rest = rest[n:]
	l, n := binary.Uvarint(rest)
	if n <= 0 || uint64(len(rest)-n) < l || string(rest[n:n+int(l)]) != key {
		return nil, false
	}
	dirs, err := decodeDirs(rest[n+int(l):])
	return dirs, err == nil
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
	w := &Walk{ix: ix, fresh: map[string]record{}}
	w.old, w.onDisk = ix.read(key)
	ix.walks[key] = w
	return w
}

// Walk is one walk's stored results. A nil *Walk misses every Lookup.
type Walk struct {
	ix         *Index
	old, fresh map[string]record
	// onDisk says old came from the walk's file.
	onDisk bool
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

// Save writes back the walks of this run that changed, each holding
// exactly the directories it entered, to its own file (written to a
// temporary file and renamed over the old one, so a concurrent run reads
// either whole), then drops the least recently used walks past MaxWalks.
// It does nothing for a disabled index or when every walk found what its
// file holds; the error is for debug output only.
func (ix *Index) Save() error {
	if ix == nil || ix.path == "" || !slices.ContainsFunc(slices.Collect(maps.Values(ix.walks)), (*Walk).changed) {
		return nil
	}
	dir, name := filepath.Split(ix.path)
	now := ix.now()
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(ix.walks)) {
		w := ix.walks[k]
		if !w.changed() {
			continue
		}
		file := filepath.Base(ix.walkFile(k))
		b := encodeWalk(formatVersion, k, encodeDirs(w.fresh))
		switch {
		case len(w.fresh) == 0:
			b = nil // nothing to keep: remove what the file held
		case len(b) > MaxSize:
			errs = append(errs, fmt.Errorf("walk of %d bytes exceeds %d: %w", len(b), MaxSize, errTooLarge))
			b = nil
		}
		if b == nil && !w.onDisk {
			continue
		}
		if err := writeIndex(dir, file, b, now); err != nil {
			return errors.Join(append(errs, err)...)
		}
	}
	return errors.Join(append(errs, ix.prune(dir, name))...)
}

// prune removes the walk files of the index beyond MaxWalks, the least
// recently used (oldest mtime) first, and the single-file index of
// format 3 and before.
func (ix *Index) prune(dir, name string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("index directory: %w", err)
	}
	type walkFile struct {
		name string
		used time.Time
	}
	var files []walkFile
	var errs []error
	for _, e := range ents {
		switch {
		case e.Name() == name && e.Type().IsRegular():
			errs = append(errs, writeIndex(dir, name, nil, time.Time{}))
		case strings.HasPrefix(e.Name(), name+".") && e.Type().IsRegular():
			if fi, err := e.Info(); err == nil {
				files = append(files, walkFile{e.Name(), fi.ModTime()})
			}
		}
	}
	if len(files) <= MaxWalks {
		return errors.Join(errs...)
	}
	slices.SortFunc(files, func(a, b walkFile) int { return cmp.Or(b.used.Compare(a.used), cmp.Compare(a.name, b.name)) })
	for _, f := range files[MaxWalks:] {
		errs = append(errs, writeIndex(dir, f.name, nil, time.Time{}))
	}
	return errors.Join(errs...)
}

var (
	errNotPrivate = errors.New("not a private directory of this user's")
	errTooLarge   = errors.New("index too large")
)

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
// ~/.cache/srt-go for $HOME and for the home the password database
// gives the euid), plus $XDG_RUNTIME_DIR/srt-go when that is set: each
// sandbox denies them all, so that a run whose environment names one
// cannot write the index a run with another environment trusts (found
// by adversarial reviews: a run with XDG_RUNTIME_DIR set and allowWrite
// ["~"] wrote ~/.cache/srt-go/dirindex; one with another $HOME, the
// real home's).
func CandidateDirs() []string {
	out := []string{filepath.Join(runtimeDir(), "srt-go")}
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) {
		out = append(out, filepath.Join(filepath.Clean(x), "srt-go"))
	}
	if h := homeDir(); h != "" {
		out = append(out, h)
	}
	if h := passwdHomeDir(); h != "" {
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

// passwdHomeDir is ~/.cache/srt-go for the euid's home in the password
// database (os/user: /etc/passwd, or NSS with cgo), or "" when it has
// none or it is relative.
func passwdHomeDir() string {
	u, err := user.LookupId(strconv.Itoa(os.Geteuid()))
	if err != nil || !filepath.IsAbs(u.HomeDir) {
		return ""
	}
	return filepath.Join(filepath.Clean(u.HomeDir), ".cache", "srt-go")
}
