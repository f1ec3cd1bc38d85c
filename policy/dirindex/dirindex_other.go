//go:build !linux

package dirindex

import (
	"os"
	"syscall"
	"time"
)

// Cacheable reports whether a directory in state st may have its result
// stored and reused: never off Linux (no statx ctime check here).
func Cacheable(Stat) bool { return false }

// Dir is an open directory (OpenDir).
type Dir struct{ f *os.File }

// ReadDir reads the directory's entries and closes it.
func (d *Dir) ReadDir() ([]os.DirEntry, error) {
	defer d.Close()
	return d.f.ReadDir(-1)
}

// Close closes the directory unless ReadDir did.
func (d *Dir) Close() { d.f.Close() }

// StatDir returns an empty state (not cacheable) for directory path; an
// error wrapping ENOTDIR when it is not a directory.
func StatDir(path string, _ map[uint64]int64) (Stat, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Stat{}, err
	}
	if !fi.IsDir() {
		return Stat{}, &os.PathError{Op: "stat", Path: path, Err: syscall.ENOTDIR}
	}
	return Stat{}, nil
}

// OpenDir opens directory path for reading; the Stat is empty (not
// cacheable, and no device or inode: the caller stats the path).
func OpenDir(path string, _ map[uint64]int64) (*Dir, Stat, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, Stat{}, err
	}
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		f.Close()
		return nil, Stat{}, &os.PathError{Op: "open", Path: path, Err: syscall.ENOTDIR}
	}
	return &Dir{f: f}, Stat{}, nil
}

func openPrivate(string) (*os.File, error) { return nil, errNotPrivate }

func privateDir(string) bool { return false }

func writeIndex(string, string, []byte, time.Time) error { return errNotPrivate }

func touch(*os.File, time.Time) {}
