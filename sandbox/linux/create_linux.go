package linux

// Creation-time name rules (filesystem.enforceNamesAtCreation, issue 8).
//
// Bind mounts protect the names that exist when the sandbox starts. A name
// that comes into being later — a ".env", a "*.key", the hooks of a
// repository created during the run — matches no mount. With this feature
// every call that can bring a name into being or write a file by name is
// notified to srt (the seccomp filter's write-intent notifications, see
// notify_linux.go), and srt does NOT let it run: it performs the call
// itself, from outside the sandbox, and returns the result.
//
//   - Race-free. The path is read once from the caller's memory; from then
//     on srt works on descriptors it holds: the sandbox's root
//     (/proc/PID/root), the parent directory opened in it with openat2
//     RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS (absolute symlinks and ".."
//     stay inside the sandbox's mount tree, whose read-only mounts still
//     apply), the parent's real path read back from that descriptor, and
//     the *at call relative to it. A created file's descriptor is handed to
//     the caller with SECCOMP_IOCTL_NOTIF_ADDFD|SECCOMP_ADDFD_FLAG_SEND, so
//     it is the call's return value. Nothing is answered CONTINUE.
//   - Serialized. One thread answers every notification of the sandbox, so
//     while srt walks a directory that is being renamed, no other name can
//     be created in the sandbox.
//   - Credentials. That thread has its own umask (unshare CLONE_FS) set to
//     the caller's before each creation, and, when srt runs as root, no
//     capabilities (capset): the kernel checks the calls as it would the
//     command's (same uid, no DAC override).
//
// Rules: every filesystem.denyWrite glob and every mandatory name at any
// depth (policy.MandatoryGlobs). A name matching one cannot be created,
// opened for writing, renamed to or from, linked or symlinked; a directory
// renamed into place must not bring a name that would match there and did
// not at its old place. git keeps working:
//   - ".git/hooks" may be created empty by mkdir, and in it only regular
//     "*.sample" files (git init's templates; git runs no hook by that
//     name). No hook can be renamed, linked or symlinked in.
//   - ".git/config" may come into being only by renaming a sibling file
//     (git's config.lock dance) whose content passes a list of harmless
//     keys (core.repositoryformatversion, remote.*.url, branch.*.merge, …;
//     never core.hooksPath, core.fsmonitor, include, alias, filter, …):
//     srt copies the checked content into a file of its own, renames it
//     over config and removes the lock, so a descriptor the command kept
//     on the lock cannot change config afterwards.
//
// Limits: a relative name's directory is resolved through the path of the
// caller's dirfd or working directory (/proc/PID/fd/N), so a caller that
// renames its own directory meanwhile may create the name in the new
// place — the rules are checked where it lands. A symlink whose name ends
// in a rule's directory part (".git", ".git/hooks", "secrets") is refused;
// a symlink to a directory elsewhere can still show that directory's
// names under a path a glob with a directory part covers.

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/seccomp"
	"github.com/srt-go/srt/violation"
	"golang.org/x/sys/unix"
)

// nameRule is one write-deny pattern, absolute or "**/…".
type nameRule struct {
	pattern string
	rule    string
	segs    []string
	hooks   bool // the mandatory **/.git/hooks/**
	config  bool // the mandatory **/.git/config
}

// creator performs the creation calls of a sandbox.
type creator struct {
	rules  []nameRule
	tmpdir string
}

func newCreator(pol *policy.Policy, tmpdir string) *creator {
	c := &creator{tmpdir: tmpdir}
	add := func(p, rule string) {
		c.rules = append(c.rules, nameRule{pattern: p, rule: rule, segs: strings.Split(strings.TrimPrefix(p, "/"), "/"),
			hooks: p == "**/.git/hooks/**", config: p == "**/.git/config"})
	}
	for _, p := range pol.MandatoryPatterns {
		add(p, "mandatory write-deny "+p)
	}
	for _, g := range pol.DenyWriteGlobs {
		add(g.Pattern, g.Rule)
		if g.Resolved != g.Pattern {
			add(g.Resolved, g.Rule)
		}
	}
	for _, e := range pol.DenyWrite {
		if e.Resolved == "" {
			continue
		}
		add(escapeGlob(e.Resolved), e.Rule)
		add(escapeGlob(e.Resolved)+"/**", e.Rule)
	}
	return c
}

func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]{}\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// kinds of new names, for the git exceptions.
const (
	kFile    = iota // open O_CREAT, mknod
	kDir            // mkdir
	kOther          // rename, link, symlink, write to an existing name
	kConfig         // a rename onto .git/config whose content srt checks
	kExisted        // a write open of a name that exists
)

// denied returns the rule that forbids name p coming into being as kind,
// or "".
func (c *creator) denied(p string, kind int) string {
	if policy.Within(p, c.tmpdir) || policy.Within(p, "/dev") || policy.Within(p, "/proc") {
		return ""
	}
	for _, r := range c.rules {
		if ok, _ := doublestar.Match(r.pattern, p); !ok {
			continue
		}
		if r.hooks {
			dir, base := path.Split(p)
			if kind == kDir && path.Base(p) == "hooks" && strings.HasSuffix(path.Dir(p), "/.git") {
				continue
			}
			if kind == kFile && strings.HasSuffix(base, ".sample") && strings.HasSuffix(dir, "/.git/hooks/") {
				continue
			}
		}
		if r.config && kind == kConfig {
			continue
		}
		return r.rule
	}
	return ""
}

// symlinkDenied: a symlink at p stands for a directory whose names appear
// below p, so p must not end in a rule's directory part (".git" for
// **/.git/hooks/**, "secrets" for /w/secrets/**).
func (c *creator) symlinkDenied(p string) string {
	if r := c.denied(p, kOther); r != "" {
		return r
	}
	if policy.Within(p, c.tmpdir) {
		return ""
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for _, r := range c.rules {
		if prefixByLiteral(r.segs, segs, false) {
			return r.rule
		}
	}
	return ""
}

// prefixByLiteral reports whether path segments s can be consumed by a
// prefix of pattern segments pat, the last one of s by a non-"**" pattern
// segment (lit), leaving a non-empty rest of the pattern.
func prefixByLiteral(pat, s []string, lit bool) bool {
	if len(s) == 0 {
		return lit && len(pat) > 0 && !(len(pat) == 1 && pat[0] == "**")
	}
	if len(pat) == 0 {
		return false
	}
	if pat[0] == "**" {
		// ** absorbs s[0] (and maybe more), or nothing.
		return prefixByLiteral(pat, s[1:], false) || prefixByLiteral(pat[1:], s, lit)
	}
	if ok, _ := doublestar.Match(pat[0], s[0]); !ok {
		return false
	}
	return prefixByLiteral(pat[1:], s[1:], true)
}

// callerUmask returns the Umask of /proc/PID/status (022 if unreadable).
func callerUmask(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err == nil {
		if _, rest, ok := bytes.Cut(b, []byte("\nUmask:")); ok {
			line, _, _ := bytes.Cut(rest, []byte("\n"))
			if v, err := strconv.ParseUint(strings.TrimSpace(string(line)), 8, 32); err == nil {
				return int(v)
			}
		}
	}
	return 0o022
}

// prepareCreatorThread is run by the notification loop's goroutine: it
// locks it to its thread (never unlocked: the thread dies with the loop),
// gives the thread its own umask, and drops the thread's capabilities so
// that, for srt running as root, the kernel checks srt's calls as it
// checks the command's.
func prepareCreatorThread() error {
	runtime.LockOSThread()
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return err
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	return unix.Capset(&hdr, &data[0])
}

// pathArg reads a string argument; "" with an error.
func pathArg(pid int, addr uint64) (string, unix.Errno) {
	if addr == 0 {
		return "", unix.EFAULT
	}
	s, err := readString(pid, uintptr(addr))
	if err != nil {
		if e, ok := err.(unix.Errno); ok && e == unix.ENAMETOOLONG {
			return "", e
		}
		return "", unix.EFAULT
	}
	return s, 0
}

// where is a name resolved in the sandbox: its parent directory as an
// O_PATH descriptor of srt's, the final component, and the real path.
type where struct {
	dir      int
	name     string
	real     string
	trailing bool // the caller wrote a trailing slash
}

func (w where) close() {
	if w.dir >= 0 {
		unix.Close(w.dir)
	}
}

func errnoOf(err error) unix.Errno {
	if e, ok := err.(unix.Errno); ok {
		return e
	}
	if pe, ok := err.(*os.PathError); ok {
		return errnoOf(pe.Err)
	}
	return unix.EACCES
}

// resolve finds the parent directory of p (relative to the caller's dirfd
// or working directory) inside the sandbox's root.
func resolve(pid, root int, dirfd int32, p string) (where, unix.Errno) {
	w := where{dir: -1}
	if p == "" {
		return w, unix.ENOENT
	}
	full := p
	if !strings.HasPrefix(p, "/") {
		link := "/proc/" + strconv.Itoa(pid) + "/cwd"
		if dirfd != unix.AT_FDCWD {
			if dirfd < 0 {
				return w, unix.EBADF
			}
			link = "/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(int(dirfd))
		}
		base, err := os.Readlink(link)
		if err != nil {
			return w, unix.EBADF
		}
		if !strings.HasPrefix(base, "/") {
			return w, unix.ENOTDIR
		}
		full = base + "/" + p
	}
	return resolveIn(root, full)
}

// resolveIn resolves the parent of the absolute path full in root.
func resolveIn(root int, full string) (where, unix.Errno) {
	w := where{dir: -1}
	trimmed := strings.TrimRight(full, "/")
	w.trailing = len(trimmed) != len(full)
	if trimmed == "" {
		return w, unix.EEXIST // "/"
	}
	i := strings.LastIndexByte(trimmed, '/')
	dir, name := trimmed[:i+1], trimmed[i+1:]
	if name == "." || name == ".." {
		return w, unix.EEXIST
	}
	fd, err := unix.Openat2(root, dir, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return w, errnoOf(err)
	}
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || !strings.HasPrefix(real, "/") {
		unix.Close(fd)
		return w, unix.ENOENT
	}
	w.dir, w.name, w.real = fd, name, path.Join(real, name)
	return w, 0
}

// followFinal follows w's final component while it is a symbolic link
// (open without O_NOFOLLOW, link with AT_SYMLINK_FOLLOW), resolving each
// target in the sandbox's root.
func followFinal(root int, w where) (where, unix.Errno) {
	for range 40 {
		var st unix.Stat_t
		if err := unix.Fstatat(w.dir, w.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
			return w, 0
		}
		buf := make([]byte, 4096)
		n, err := unix.Readlinkat(w.dir, w.name, buf)
		if err != nil {
			w.close()
			return where{dir: -1}, errnoOf(err)
		}
		target := string(buf[:n])
		if !strings.HasPrefix(target, "/") {
			target = path.Dir(w.real) + "/" + target
		}
		w.close()
		if w, err = resolveInErr(root, target); err != nil {
			return w, errnoOf(err)
		}
	}
	w.close()
	return where{dir: -1}, unix.ELOOP
}

func resolveInErr(root int, full string) (where, error) {
	w, e := resolveIn(root, full)
	if e != 0 {
		return w, e
	}
	return w, nil
}

// emulate handles a creation call; false means it is not one (the caller
// answers as before).
func (n *notifier) emulate(fd int, nt seccomp.Notification, c seccomp.Call) bool {
	a := nt.Data.Args
	pid := int(nt.PID)
	var op string
	var flags, mode uint64
	var dirfd, dirfd2 int32 = unix.AT_FDCWD, unix.AT_FDCWD
	var p1, p2 uint64
	switch c.Name {
	case "open":
		op, p1, flags, mode = "open", a[0], uint64(uint32(a[1])), a[2]
	case "openat":
		op, dirfd, p1, flags, mode = "open", int32(a[0]), a[1], uint64(uint32(a[2])), a[3]
	case "openat2":
		var how [24]byte
		if readMem(pid, uintptr(a[2]), how[:]) != nil {
			seccomp.Respond(fd, nt.ID, unix.EFAULT)
			return true
		}
		op, dirfd, p1 = "open", int32(a[0]), a[1]
		flags, mode = binary.NativeEndian.Uint64(how[0:]), binary.NativeEndian.Uint64(how[8:])
		if flags&writeOpenFlags != 0 && binary.NativeEndian.Uint64(how[16:]) != 0 {
			// RESOLVE_* restrictions relative to the caller's dirfd are
			// not emulated: refuse rather than resolve differently.
			seccomp.Respond(fd, nt.ID, unix.EPERM)
			return true
		}
	case "creat":
		op, p1, flags, mode = "open", a[0], unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, a[1]
	case "mkdir":
		op, p1, mode = "mkdir", a[0], a[1]
	case "mkdirat":
		op, dirfd, p1, mode = "mkdir", int32(a[0]), a[1], a[2]
	case "mknod":
		op, p1, mode, flags = "mknod", a[0], a[1], a[2]
	case "mknodat":
		op, dirfd, p1, mode, flags = "mknod", int32(a[0]), a[1], a[2], a[3]
	case "symlink":
		op, p2, p1 = "symlink", a[0], a[1]
	case "symlinkat":
		op, p2, dirfd, p1 = "symlink", a[0], int32(a[1]), a[2]
	case "link":
		op, p2, p1 = "link", a[0], a[1]
	case "linkat":
		op, dirfd2, p2, dirfd, p1, flags = "link", int32(a[0]), a[1], int32(a[2]), a[3], uint64(uint32(a[4]))
	case "rename":
		op, p2, p1 = "rename", a[0], a[1]
	case "renameat":
		op, dirfd2, p2, dirfd, p1 = "rename", int32(a[0]), a[1], int32(a[2]), a[3]
	case "renameat2":
		op, dirfd2, p2, dirfd, p1, flags = "rename", int32(a[0]), a[1], int32(a[2]), a[3], uint64(uint32(a[4]))
	default:
		return false
	}
	if op == "open" && flags&writeOpenFlags == 0 {
		return false // a read (ObserveReads): the mounts decide, as before
	}
	val, errno, rule, target := n.perform(fd, nt, op, dirfd, dirfd2, p1, p2, flags, mode)
	if rule != "" {
		errno = unix.EACCES
	}
	if val == -2 {
		return true // answered with ADDFD
	}
	nsPID, exe := 0, ""
	if rule != "" {
		nsPID, exe = procInfo(pid) // while the caller waits
	}
	if errno != 0 {
		seccomp.Respond(fd, nt.ID, errno)
	} else {
		seccomp.RespondValue(fd, nt.ID, val)
	}
	if rule != "" {
		if nsPID != 1 {
			n.on(violation.Violation{Time: time.Now(), Action: violation.FileWriteCreate, Target: target,
				Reason: rule, PID: nsPID, Exe: exe})
		}
	}
	return true
}

// writeOpenFlags make an open one srt performs.
const writeOpenFlags = unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC

// perform does the call. val -2 means the answer was sent (ADDFD). A
// non-empty rule is a refusal (target names the path).
func (n *notifier) perform(fd int, nt seccomp.Notification, op string, dirfd, dirfd2 int32, p1, p2, flags, mode uint64) (val int64, errno unix.Errno, rule, target string) {
	pid := int(nt.PID)
	name, e := pathArg(pid, p1)
	if e != 0 {
		return 0, e, "", ""
	}
	var name2 string
	if op == "link" || op == "symlink" || op == "rename" {
		if name2, e = pathArg(pid, p2); e != 0 {
			return 0, e, "", ""
		}
	}
	// Everything is read: from here on the caller's memory is not used.
	if !seccomp.IDValid(fd, nt.ID) {
		return 0, unix.ENOENT, "", ""
	}
	root, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, unix.ENOENT, "", ""
	}
	defer unix.Close(root)
	w, e := resolve(pid, root, dirfd, name)
	if e != 0 {
		return 0, e, "", ""
	}
	defer func() { w.close() }()
	um := 0
	if op == "open" || op == "mkdir" || op == "mknod" {
		um = callerUmask(pid)
	}
	switch op {
	case "open":
		tmpfile := flags&unix.O_TMPFILE == unix.O_TMPFILE
		f := int(flags)
		if flags&unix.O_NOFOLLOW == 0 && !(flags&unix.O_CREAT != 0 && flags&unix.O_EXCL != 0) {
			if w, e = followFinal(root, w); e != 0 {
				return 0, e, "", ""
			}
		}
		if !tmpfile {
			var st unix.Stat_t
			kind := kFile
			if unix.Fstatat(w.dir, w.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
				kind = kExisted
				if st.Mode&unix.S_IFMT == unix.S_IFDIR && flags&(unix.O_WRONLY|unix.O_RDWR|unix.O_TRUNC) == 0 {
					kind = -1 // O_CREAT on a directory: EISDIR below, nothing written
				}
			}
			if kind == kExisted && st.Mode&unix.S_IFMT == unix.S_IFREG && strings.HasSuffix(w.name, ".sample") {
				kind = kOther // a hook sample is created, never rewritten
			}
			if kind >= 0 {
				if r := n.cr.denied(w.real, kind); r != "" {
					return 0, 0, r, w.real
				}
			}
		}
		unix.Umask(um)
		nfd, err := unix.Openat(w.dir, w.name, f|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(mode&0o7777))
		if err != nil {
			return 0, errnoOf(err), "", ""
		}
		defer unix.Close(nfd)
		if _, err := seccomp.AddFDSend(fd, nt.ID, nfd, flags&unix.O_CLOEXEC != 0); err != nil {
			return 0, errnoOf(err), "", ""
		}
		return -2, 0, "", ""
	case "mkdir":
		if r := n.cr.denied(w.real, kDir); r != "" {
			return 0, 0, r, w.real
		}
		unix.Umask(um)
		return 0, errnoOf0(unix.Mkdirat(w.dir, w.name, uint32(mode&0o7777))), "", ""
	case "mknod":
		kind := kOther
		if t := mode & unix.S_IFMT; t == 0 || t == unix.S_IFREG {
			kind = kFile
		}
		if r := n.cr.denied(w.real, kind); r != "" {
			return 0, 0, r, w.real
		}
		unix.Umask(um)
		return 0, errnoOf0(unix.Mknodat(w.dir, w.name, uint32(mode), int(flags))), "", ""
	case "symlink":
		if r := n.cr.symlinkDenied(w.real); r != "" {
			return 0, 0, r, w.real
		}
		return 0, errnoOf0(unix.Symlinkat(name2, w.dir, w.name)), "", ""
	case "link":
		if r := n.cr.denied(w.real, kOther); r != "" {
			return 0, 0, r, w.real
		}
		if flags&unix.AT_EMPTY_PATH != 0 && name2 == "" {
			if dirfd2 < 0 {
				return 0, unix.EBADF, "", ""
			}
			src := "/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(int(dirfd2))
			return 0, errnoOf0(unix.Linkat(unix.AT_FDCWD, src, w.dir, w.name, unix.AT_SYMLINK_FOLLOW)), "", ""
		}
		o, e := resolve(pid, root, dirfd2, name2)
		if e != 0 {
			return 0, e, "", ""
		}
		if flags&unix.AT_SYMLINK_FOLLOW != 0 {
			if o, e = followFinal(root, o); e != 0 {
				return 0, e, "", ""
			}
		}
		defer o.close()
		return 0, errnoOf0(unix.Linkat(o.dir, o.name, w.dir, w.name, 0)), "", ""
	case "rename":
		o, e := resolve(pid, root, dirfd2, name2)
		if e != 0 {
			return 0, e, "", ""
		}
		defer o.close()
		return n.rename(o, w, flags, um)
	}
	return 0, unix.ENOSYS, "", ""
}

func errnoOf0(err error) unix.Errno {
	if err == nil {
		return 0
	}
	return errnoOf(err)
}

// rename checks both ends (and, for a directory, what it brings along)
// and renames.
func (n *notifier) rename(o, w where, flags uint64, um int) (int64, unix.Errno, string, string) {
	var ost, wst unix.Stat_t
	if err := unix.Fstatat(o.dir, o.name, &ost, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, errnoOf(err), "", ""
	}
	wErr := unix.Fstatat(w.dir, w.name, &wst, unix.AT_SYMLINK_NOFOLLOW)
	exchange := flags&unix.RENAME_EXCHANGE != 0
	if r := n.cr.denied(o.real, kOther); r != "" {
		return 0, 0, r, o.real
	}
	kind := kOther
	if !exchange && ost.Mode&unix.S_IFMT == unix.S_IFREG && path.Dir(o.real) == path.Dir(w.real) && n.cr.isGitConfig(w.real) {
		kind = kConfig
	}
	if r := n.cr.denied(w.real, kind); r != "" {
		return 0, 0, r, w.real
	}
	if ost.Mode&unix.S_IFMT == unix.S_IFLNK {
		if r := n.cr.symlinkDenied(w.real); r != "" {
			return 0, 0, r, w.real
		}
	}
	if ost.Mode&unix.S_IFMT == unix.S_IFDIR {
		if r, t := n.cr.treeDenied(o.dir, o.name, o.real, w.real); r != "" {
			return 0, 0, r, t
		}
	}
	if exchange && wErr == nil {
		if wst.Mode&unix.S_IFMT == unix.S_IFLNK {
			if r := n.cr.symlinkDenied(o.real); r != "" {
				return 0, 0, r, o.real
			}
		}
		if wst.Mode&unix.S_IFMT == unix.S_IFDIR {
			if r, t := n.cr.treeDenied(w.dir, w.name, w.real, o.real); r != "" {
				return 0, 0, r, t
			}
		}
	}
	if kind == kConfig {
		if e := n.cr.gitConfigRename(o, w, um); e != 0 {
			if e == unix.EACCES {
				return 0, 0, "a new .git/config may hold only harmless keys (core.hooksPath, core.fsmonitor, include… refused)", w.real
			}
			return 0, e, "", ""
		}
		return 0, 0, "", ""
	}
	return 0, errnoOf0(unix.Renameat2(o.dir, o.name, w.dir, w.name, uint(flags))), "", ""
}

func (c *creator) isGitConfig(p string) bool {
	for _, r := range c.rules {
		if r.config {
			ok, _ := doublestar.Match(r.pattern, p)
			return ok
		}
	}
	return false
}

// treeDenied walks the directory name in dir (real path from) and
// reports a name below it that a rule forbids at to but not at from.
// Above 20000 entries it answers EXDEV-worthy "too large" as a refusal
// ("mv" then copies, name by name, through the rules).
func (c *creator) treeDenied(dir int, name, from, to string) (string, string) {
	count := 0
	var walk func(dfd int, ent, rel string) (string, string)
	walk = func(dfd int, ent, rel string) (string, string) {
		fd, err := unix.Openat(dfd, ent, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", ""
		}
		f := os.NewFile(uintptr(fd), rel)
		defer f.Close()
		ents, _ := f.ReadDir(-1)
		for _, e := range ents {
			count++
			if count > 20000 {
				return "a directory too large to check (more than 20000 names)", to
			}
			r := rel + "/" + e.Name()
			if rule := c.denied(to+r, kOther); rule != "" && c.denied(from+r, kOther) == "" {
				return rule, to + r
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

// gitConfigRename replaces .git/config with the checked content of the
// lock file o, and removes o.
func (c *creator) gitConfigRename(o, w where, um int) unix.Errno {
	src, err := unix.Openat(o.dir, o.name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return errnoOf(err)
	}
	f := os.NewFile(uintptr(src), o.name)
	b := make([]byte, 1<<20+1)
	nb, _ := f.Read(b)
	f.Close()
	if nb > 1<<20 || !gitConfigHarmless(b[:nb]) {
		return unix.EACCES
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := ".config.srt-" + hex.EncodeToString(rnd[:])
	unix.Umask(um)
	dst, err := unix.Openat(w.dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return errnoOf(err)
	}
	_, werr := unix.Write(dst, b[:nb])
	unix.Close(dst)
	if werr == nil {
		werr = unix.Renameat(w.dir, tmp, w.dir, w.name)
	}
	if werr != nil {
		unix.Unlinkat(w.dir, tmp, 0)
		return errnoOf(werr)
	}
	unix.Unlinkat(o.dir, o.name, 0)
	return 0
}

// gitConfigKeys are the keys a .git/config written in the sandbox may
// hold: what git init, clone, commit and ordinary git config use, none of
// which makes git run a program or read another file. "*" stands for a
// subsection.
var gitConfigKeys = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`core.repositoryformatversion core.filemode core.bare core.logallrefupdates
		core.symlinks core.ignorecase core.precomposeunicode core.autocrlf core.eol core.safecrlf
		core.sharedrepository core.checkstat core.trustctime core.quotepath core.compression
		core.bigfilethreshold core.abbrev core.untrackedcache core.splitindex core.commitgraph
		core.multipackindex core.warnambiguousrefs core.preloadindex
		extensions.objectformat extensions.refstorage extensions.noop extensions.partialclone
		remote.*.url remote.*.pushurl remote.*.fetch remote.*.push remote.*.tagopt remote.*.mirror
		remote.*.prune remote.*.promisor remote.*.partialclonefilter
		branch.*.remote branch.*.merge branch.*.rebase branch.*.pushremote
		user.name user.email init.defaultbranch pull.rebase pull.ff push.default fetch.prune
		gc.auto color.ui advice.detachedhead lfs.repositoryformatversion`) {
		gitConfigKeys[k] = true
	}
}

// gitConfigHarmless parses a git config file conservatively: only plain
// "[section]" / `[section "sub"]` headers and "key = value" lines with
// keys of gitConfigKeys; no continuation lines, no ext:: URLs.
func gitConfigHarmless(b []byte) bool {
	section, sub := "", ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 || strings.TrimSpace(line[end+1:]) != "" && !strings.HasPrefix(strings.TrimSpace(line[end+1:]), "#") {
				return false
			}
			h := line[1:end]
			section, sub = h, ""
			if i := strings.IndexByte(h, ' '); i >= 0 {
				section, sub = h[:i], strings.TrimSpace(h[i+1:])
				if len(sub) < 2 || sub[0] != '"' || sub[len(sub)-1] != '"' || strings.ContainsAny(sub[1:len(sub)-1], `"\`) {
					return false
				}
			}
			section = strings.ToLower(section)
			if strings.Contains(section, ".") {
				return false
			}
			continue
		}
		if strings.HasSuffix(line, `\`) {
			return false
		}
		key, val, _ := strings.Cut(line, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		for _, r := range key {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
		full := section + "." + key
		if sub != "" {
			full = section + ".*." + key
		}
		if !gitConfigKeys[full] {
			return false
		}
		v := strings.ToLower(strings.Trim(strings.TrimSpace(val), `"`))
		if strings.HasPrefix(v, "ext::") || strings.HasPrefix(v, "fd::") || strings.HasPrefix(v, "-") {
			return false
		}
	}
	return sc.Err() == nil
}
