package supervisor

// rename, renameat and renameat2: both names are checked, and so is what
// a directory brings along to its new place; a new .git/config is
// written by srt from the checked content (gitConfigRename).

import (
	"os"
	"path"

	"golang.org/x/sys/unix"
)

// renameAt checks both ends (and, for a directory, what it brings along)
// and renames.
func renameAt(c *creator, o, w where, flags uint64, pid int) verdict {
	var ost, wst unix.Stat_t
	if err := unix.Fstatat(o.dir, o.name, &ost, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return failed(errnoOf(err))
	}
	wErr := unix.Fstatat(w.dir, w.name, &wst, unix.AT_SYMLINK_NOFOLLOW)
	if mountPoint(o.dir, o.name) || wErr == nil && mountPoint(w.dir, w.name) {
		return failed(unix.EBUSY) // see mountPoint
	}
	exchange := flags&unix.RENAME_EXCHANGE != 0
	srcKind := kSource
	if exchange {
		srcKind = kOther // the other name comes into being there
		if wErr == nil && wst.Mode&unix.S_IFMT == unix.S_IFDIR {
			srcKind = kDir
		}
	}
	if r := c.names.denied(o.real, srcKind); r != "" {
		return refused(r, o.real)
	}
	kind := kOther
	if !exchange && ost.Mode&unix.S_IFMT == unix.S_IFREG && path.Dir(o.real) == path.Dir(w.real) &&
		(c.names.isGitConfig(w.real) || w.name == "config" && !c.git.allowConfig && isGitDir(w.dir, "")) {
		kind = kConfig
	}
	if ost.Mode&unix.S_IFMT == unix.S_IFDIR {
		kind = kDir // what it holds is checked below (treeDenied)
	}
	if r := c.names.denied(w.real, kind); r != "" {
		return refused(r, w.real)
	}
	if r := c.git.dirRule(w, kind); r != "" {
		return refused(r, w.real)
	}
	if exchange {
		// The other end is a name coming into being too: what w holds
		// lands at o. In a git directory, its config and hooks are not
		// exchanged at all (a symlink or a crafted config would go in).
		wKind := kOther
		if wErr == nil && wst.Mode&unix.S_IFMT == unix.S_IFDIR {
			wKind = kDir
		}
		if r := c.git.dirRule(o, wKind); r != "" {
			return refused(r, o.real)
		}
		for _, e := range []where{o, w} {
			if (e.name == "config" || e.name == "hooks") && isGitDir(e.dir, "") {
				return refused(bareRule, e.real)
			}
		}
	}
	// A directory moved in as a git directory's hooks brings its files.
	if ost.Mode&unix.S_IFMT == unix.S_IFDIR && w.name == "hooks" && isGitDir(w.dir, "") && !onlySamples(o.dir, o.name) {
		return refused(bareRule, w.real)
	}
	if exchange && wErr == nil && wst.Mode&unix.S_IFMT == unix.S_IFDIR && o.name == "hooks" && isGitDir(o.dir, "") && !onlySamples(w.dir, w.name) {
		return refused(bareRule, o.real)
	}
	if ost.Mode&unix.S_IFMT == unix.S_IFLNK {
		if r := c.names.symlinkDenied(w.real); r != "" {
			return refused(r, w.real)
		}
	}
	if ost.Mode&unix.S_IFMT == unix.S_IFDIR {
		if r, t := treeDenied(c.names, o.dir, o.name, o.real, w.real); r != "" {
			return refused(r, t)
		}
	}
	if exchange && wErr == nil {
		if wst.Mode&unix.S_IFMT == unix.S_IFLNK {
			if r := c.names.symlinkDenied(o.real); r != "" {
				return refused(r, o.real)
			}
		}
		if wst.Mode&unix.S_IFMT == unix.S_IFDIR {
			if r, t := treeDenied(c.names, w.dir, w.name, w.real, o.real); r != "" {
				return refused(r, t)
			}
		}
	}
	if kind == kConfig {
		if e := gitConfigRename(o, w, c.umasks.of(pid)); e != 0 {
			if e == unix.EACCES {
				return refused(gitConfigRule, w.real)
			}
			return failed(e)
		}
		return verdict{}
	}
	return done(unix.Renameat2(o.dir, o.name, w.dir, w.name, uint(flags)))
}

// treeDenied walks the directory name in dir (real path from) and
// reports a name below it that a rule forbids at one end of the rename
// but not at the other: one that would come into being at to, or one an
// absolute rule protects that would leave its protected place at from
// (renaming a parent must not get around a deny, seed 003; the mounts pin
// those parents, and this holds where a mount is not there). A name the
// any-depth patterns protect may move: a git directory moved whole keeps
// its hooks protected by what it holds (git_linux.go).
// Above 20000 entries it answers EXDEV-worthy "too large" as a refusal
// ("mv" then copies, name by name, through the rules).
func treeDenied(c *nameRules, dir int, name, from, to string) (string, string) {
	count := 0
	var walk func(dfd int, ent, rel string) (string, string)
	walk = func(dfd int, ent, rel string) (string, string) {
		fd, err := unix.Openat(dfd, ent, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			// Fail closed: a directory srt cannot list (mode 000)
			// could hold anything.
			return "a directory that cannot be listed cannot be checked (" + unix.ErrnoName(errnoOf(err)) + ")", to + rel
		}
		f := os.NewFile(uintptr(fd), rel)
		defer f.Close()
		ents, err := f.ReadDir(-1)
		if err != nil {
			return "a directory that cannot be listed cannot be checked", to + rel
		}
		for _, e := range ents {
			count++
			if count > 20000 {
				return "a directory too large to check (more than 20000 names)", to
			}
			r := rel + "/" + e.Name()
			if rt, rf := c.denied(to+r, kOther), c.denied(from+r, kOther); rt != "" && rf == "" {
				return rt, to + r
			} else if ra := c.pinned(from + r); ra != "" && rt == "" {
				return ra, from + r
			}
			if e.IsDir() {
				if rule, t := walk(fd, e.Name(), r); rule != "" {
					return rule, t
				}
			}
		}
		return "", ""
	}
	return walk(dir, name, "")
}
