package port

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/srt-go/srt/sandbox/linux"
)

// writtenTreesName is the store's file in srtd's directory of srt's
// per-user state directory (linux.StateDir: 0700, the user's, read-only
// in every sandbox's view), next to the listener registry.
const writtenTreesName = "written-trees"

// treeFile is the Linux treeStore: one clean absolute path a line (paths
// of a Spec hold no newline, checkPath), appended under an exclusive
// flock(2) and read under a shared one, so that concurrent srtd
// processes of the user share it.
type treeFile struct {
	mu sync.Mutex
	f  *os.File
}

// openTreeStore opens (creating) the store at file, "" meaning
// writtenTreesName in the state directory, and drops the trees that no
// longer exist: a missing tree holds no link, and whatever moved it away
// had its new place within a tree of its own (rename(2) needs write
// access to both directories), which is recorded too. The file must be a
// regular file of this user's, not reached through a link, mode 0600 or
// stricter.
func openTreeStore(file string) (treeStore, error) {
	if file == "" {
		state, err := linux.StateDir()
		if err != nil {
			return nil, fmt.Errorf("srtd's written trees: %w", err)
		}
		dir := filepath.Join(state, "srtd")
		if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
			return nil, fmt.Errorf("srtd's written trees: %w", err)
		}
		file = filepath.Join(dir, writtenTreesName)
	}
	fd, err := unix.Open(file, unix.O_RDWR|unix.O_CREAT|unix.O_APPEND|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("srtd's written trees %s: %w", file, err)
	}
	f := os.NewFile(uintptr(fd), file)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("srtd's written trees %s: %w", file, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0 {
		f.Close()
		return nil, fmt.Errorf("srtd's written trees %s: not a regular file of uid %d with mode 0600; remove it", file, os.Geteuid())
	}
	t := &treeFile{f: f}
	if err := t.compact(); err != nil {
		f.Close()
		return nil, fmt.Errorf("srtd's written trees %s: %w", file, err)
	}
	return t, nil
}

// locked runs fn with the file locked (how: unix.LOCK_SH or LOCK_EX).
func (t *treeFile) locked(how int, fn func() error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		err := unix.Flock(int(t.f.Fd()), how)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
	defer unix.Flock(int(t.f.Fd()), unix.LOCK_UN)
	return fn()
}

// maxTreeFile bounds what read takes in: far more than any host's
// sessions write (64 Ki paths of 64 bytes), and a file past it is an
// error, not a shorter set.
const maxTreeFile = 4 << 20

// read returns the file's lines, deduplicated, in order, read through
// the open file (never its path again).
func (t *treeFile) read() ([]string, error) {
	fi, err := t.f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxTreeFile {
		return nil, fmt.Errorf("%s: %d bytes, at most %d; remove the trees that no longer matter", t.f.Name(), fi.Size(), maxTreeFile)
	}
	b := make([]byte, fi.Size())
	if _, err := t.f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if filepath.IsAbs(l) && !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out, nil
}

func (t *treeFile) load() ([]string, error) {
	var out []string
	err := t.locked(unix.LOCK_SH, func() (err error) {
		out, err = t.read()
		return err
	})
	return out, err
}

func (t *treeFile) add(trees []string) error {
	return t.locked(unix.LOCK_EX, func() error {
		_, err := t.f.WriteString(strings.Join(trees, "\n") + "\n")
		return err
	})
}

// compact rewrites the file with its trees that exist, once each.
func (t *treeFile) compact() error {
	return t.locked(unix.LOCK_EX, func() error {
		trees, err := t.read()
		if err != nil {
			return err
		}
		trees = slices.DeleteFunc(trees, func(p string) bool {
			_, err := os.Lstat(p)
			return errors.Is(err, os.ErrNotExist)
		})
		if err := t.f.Truncate(0); err != nil {
			return err
		}
		if len(trees) == 0 {
			return nil
		}
		_, err = t.f.WriteString(strings.Join(trees, "\n") + "\n")
		return err
	})
}
