package supervisor

// The git rules on directories srt holds: is a directory a git directory,
// may a name come into being in it, and a new config written through the
// lock and rename.

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"path"
	"strings"

	"github.com/srt-go/srt/policy"
	"golang.org/x/sys/unix"
)

// isGitDir reports whether directory dir holds every entry of
// gitDirEntries, counting adding as present.
func isGitDir(dir int, adding string) bool {
	for _, e := range gitDirEntries {
		if e == adding {
			continue
		}
		var st unix.Stat_t
		if unix.Fstatat(dir, e, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			return false
		}
	}
	return true
}

// gitRules hold a sandbox's git-directory rules to the directories names
// come into being in.
type gitRules struct {
	// tmpdir is the sandbox's private TMPDIR: no rule applies in it (nor
	// in /dev or /proc).
	tmpdir string
	// allowConfig is filesystem.allowGitConfig: the config of any git
	// directory is an ordinary file (its hooks stay protected).
	allowConfig bool
}

// dirRule says why name may not come into being (as kind) in the
// directory w is in, when that directory is or becomes a git directory;
// "" when it may. Only the names below need a look at the directory.
func (c *gitRules) dirRule(w where, kind int) string {
	if policy.Within(w.real, c.tmpdir) || policy.Within(w.real, "/dev") || policy.Within(w.real, "/proc") {
		return ""
	}
	switch w.name {
	case "HEAD", "objects", "refs":
		// The last of the three makes a git directory: what is there
		// must be what a new one may hold.
		if !isGitDir(w.dir, "") && isGitDir(w.dir, w.name) {
			return gitDirUnsafe(w.dir)
		}
	case "config":
		if kind != kConfig && !c.allowConfig && isGitDir(w.dir, "") {
			return bareRule
		}
	case "hooks":
		if kind != kDir && isGitDir(w.dir, "") {
			return bareRule
		}
		// A directory renamed into place (kDir) is checked by the caller
		// (onlySamples).
	case "commondir", "config.worktree", "modules", "worktrees":
		if isGitDir(w.dir, "") {
			return bareRule
		}
	}
	if path.Base(path.Dir(w.real)) == "hooks" && !(kind == kFile && strings.HasSuffix(w.name, ".sample")) {
		if gp, err := unix.Openat(w.dir, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
			defer unix.Close(gp)
			if isGitDir(gp, "") {
				return bareRule
			}
		}
	}
	return ""
}

// dirRuleAt is dirRule for real path p, an existing object srt reached
// through a descriptor; root is the sandbox's root (-1: none yet).
func (c *gitRules) dirRuleAt(root int, p string, kind int) string {
	base, parent := path.Base(p), path.Base(path.Dir(p))
	if base != "config" && base != "hooks" && parent != "hooks" || root < 0 {
		return ""
	}
	d, err := openInRoot(root, path.Dir(p)+"/")
	if err != nil {
		return bareRule // cannot tell: fail closed
	}
	defer unix.Close(d)
	return c.dirRule(where{dir: d, name: base, real: p}, kind)
}

// gitDirUnsafe checks a directory about to become a git directory.
func gitDirUnsafe(dir int) string {
	for _, r := range policy.GitRedirects() {
		var st unix.Stat_t
		if unix.Fstatat(dir, r, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			return bareRule
		}
	}
	if b, mode, err := readConfig(dir, "config"); err == nil {
		// Made before the directory was a git directory, the config may
		// still be open for writing in the sandbox: put a copy of srt's
		// in its place, which nothing there holds.
		if !gitConfigHarmless(b) || replaceFile(dir, "config", b, mode) != nil {
			return bareRule
		}
	} else if err != unix.ENOENT {
		return bareRule
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dir, "hooks", &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && !onlySamples(dir, "hooks") || err != nil && err != unix.ENOENT {
		return bareRule
	}
	return ""
}

// onlySamples reports whether directory name in dir is empty or holds only
// regular *.sample files (what git init puts in hooks/).
func onlySamples(dir int, name string) bool {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".sample") {
			return false
		}
	}
	return true
}

// replaceFile renames a new file of srt's holding b (mode perm) over name
// in dir.
func replaceFile(dir int, name string, b []byte, perm uint32) error {
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := "." + name + ".srt-" + hex.EncodeToString(rnd[:])
	fd, err := unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	_, err = unix.Write(fd, b)
	if err == nil {
		err = unix.Fchmod(fd, perm)
	}
	unix.Close(fd)
	if err == nil {
		err = unix.Renameat(dir, tmp, dir, name)
	}
	if err != nil {
		unix.Unlinkat(dir, tmp, 0)
	}
	return err
}

// gitConfigRename replaces .git/config with the checked content of the
// lock file o, and removes o.
func gitConfigRename(o, w where, um int) unix.Errno {
	// O_NONBLOCK (readConfig): a lease on the lock must not hold up the
	// loop; the rename then fails (EAGAIN), and git says so.
	b, _, err := readConfig(o.dir, o.name)
	if err == unix.EFBIG || err == nil && !gitConfigHarmless(b) {
		return unix.EACCES
	}
	if err != nil {
		return errnoOf(err)
	}
	if err := replaceFile(w.dir, w.name, b, uint32(0o644&^um)); err != nil {
		return errnoOf(err)
	}
	unix.Unlinkat(o.dir, o.name, 0)
	return 0
}

// readConfig reads the regular file name in dir, at most 1 MiB (EFBIG
// beyond; EINVAL for anything but a regular file), opened with O_NONBLOCK
// so that a lease on it fails at once, and returns it with its mode bits.
func readConfig(dir int, name string) ([]byte, uint32, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, 0, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, 0, unix.EINVAL
	}
	b := make([]byte, 1<<20+1)
	nb, _ := io.ReadFull(f, b)
	if nb > 1<<20 {
		return nil, 0, unix.EFBIG
	}
	return b[:nb], st.Mode & 0o777, nil
}
