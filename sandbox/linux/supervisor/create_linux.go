package supervisor

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
	"encoding/hex"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
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
	// need are substrings every path the pattern matches contains ("/.git"
	// and "/hooks" for **/.git/hooks/**, ".key" for **/*.key): a cheap
	// first cut before doublestar.Match, which decides.
	need []string
}

// creator performs the creation calls of a sandbox. It is used by the
// notification loop's thread only.
type creator struct {
	rules  []nameRule
	tmpdir string
	// root is the sandbox's root directory (O_PATH), opened from the first
	// caller's /proc/PID/root and kept: every process of the sandbox has
	// that root, since chroot, pivot_root, setns and mount are refused by
	// the seccomp filter. -1 until then.
	root int
	// umasks caches callers' umasks by thread ID (umaskTTL); noUmaskCache
	// holds the thread groups that called umask(2), whose threads are
	// always read afresh (another thread may change the mask they share).
	umasks       map[int]umaskEntry
	noUmaskCache map[int]bool
	// ctty is an O_PATH descriptor of the pty srt gave the command (the
	// command's controlling terminal), for opens of /dev/tty; -1 without
	// one.
	ctty int
	// dirs caches directories resolved in root, by the path asked for:
	// only paths without symbolic links, ".", ".." or doubled slashes
	// (the directory's real path is the path itself). Every name the
	// sandbox creates is created here, so the cache is emptied whenever a
	// path could come to lead elsewhere: after each rename, mkdir and
	// symlink. A cached directory that is removed meanwhile stays
	// removed: creating in it fails with ENOENT, as it would.
	dirs map[string]cachedDir
	// locks are the lock files (*.lock directly in a git directory) the
	// sandbox created; those still there, the same inode, are removed when
	// the sandbox has ended (close): a lock left behind (config.lock whose
	// rename srt refused, index.lock of a killed git) makes the host's git
	// fail afterwards. At most maxLocks are kept.
	locks []lockFile
	// allowGitConfig is filesystem.allowGitConfig: the config of any git
	// directory is an ordinary file (its hooks stay protected).
	allowGitConfig bool
	// noWrite are the permission bits no name the sandbox creates may
	// have: others' write, and group write where the group is shared
	// (seccomp.Options.RefuseGroupWrite; seccomp.BuildSetID refuses the
	// same bits in chmod). Taken out of the creation mode, which the
	// caller's umask could not do (umask 0).
	noWrite uint64
}

// mode is a creation mode with c.noWrite taken out.
func (c *creator) mode(m uint64) uint32 { return uint32(m & 0o7777 &^ c.noWrite) }

// lockFile is a lock file the sandbox created.
type lockFile struct {
	dir      int // O_PATH descriptor of its directory, srt's own
	name     string
	dev, ino uint64
}

// maxLocks bounds creator.locks; beyond it the oldest are forgotten
// (closed): a git directory holds a handful of lock names.
const maxLocks = 256

// noteLock records nfd, just created as name in directory dir (real path
// real), when it is a git directory's lock file.
func (c *creator) noteLock(dir int, name, real string, nfd int) {
	if !strings.HasSuffix(name, ".lock") || !(path.Base(path.Dir(real)) == ".git" || isGitDir(dir, "")) {
		return
	}
	var st unix.Stat_t
	if unix.Fstat(nfd, &st) != nil {
		return
	}
	d, err := unix.Openat(dir, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	if len(c.locks) == maxLocks {
		unix.Close(c.locks[0].dir)
		c.locks = c.locks[1:]
	}
	c.locks = append(c.locks, lockFile{dir: d, name: name, dev: uint64(st.Dev), ino: st.Ino})
}

// removeLocks removes the recorded lock files that are still what the
// sandbox created.
func (c *creator) removeLocks() {
	for _, l := range c.locks {
		var st unix.Stat_t
		if unix.Fstatat(l.dir, l.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && uint64(st.Dev) == l.dev && st.Ino == l.ino {
			unix.Unlinkat(l.dir, l.name, 0)
		}
		unix.Close(l.dir)
	}
	c.locks = nil
}

type cachedDir struct {
	fd   int
	real string
}

// forgetDirs empties the directory cache.
func (c *creator) forgetDirs() {
	for _, d := range c.dirs {
		unix.Close(d.fd)
	}
	clear(c.dirs)
}

type umaskEntry struct {
	mask int
	at   time.Time
}

// umaskTTL bounds how long a cached umask is trusted: a thread ID reused
// by a new process after the old one exited gets its own mask read
// afresh. The kernel would have to hand out a whole PID space in that
// time for a stale mask to be used.
const umaskTTL = time.Second

func newCreator(pol *policy.Policy, tmpdir string) *creator {
	c := &creator{tmpdir: tmpdir, root: -1, ctty: -1, umasks: map[int]umaskEntry{}, noUmaskCache: map[int]bool{},
		dirs: map[string]cachedDir{}, allowGitConfig: pol.AllowGitConfig}
	add := c.addRule
	for _, p := range pol.MandatoryPatterns {
		add(p, "mandatory write-deny "+p)
	}
	// A name the sandbox cannot read it cannot create either (missing
	// denyRead literals reach DenyWrite in policy.Compile): a new file
	// matching a denyRead glob would otherwise be readable where one the
	// host made is not.
	for _, g := range slices.Concat(pol.DenyWriteGlobs, pol.DenyReadGlobs) {
		add(g.Pattern, g.Rule)
		if g.Resolved != g.Pattern {
			add(g.Resolved, g.Rule)
		}
	}
	for _, e := range pol.DenyWrite {
		if e.Resolved == "" {
			continue
		}
		if e.Kind == policy.Missing && strings.HasPrefix(e.Rule, "mandatory: ") && matchesAny(pol.MandatoryPatterns, e.Resolved) {
			// A missing mandatory name (.git/hooks where no repository is
			// yet) is the business of its pattern, which lets git init
			// make an empty hooks directory and a checked config.
			continue
		}
		add(policy.EscapeGlob(e.Resolved), e.Rule)
		add(policy.EscapeGlob(e.Resolved)+"/**", e.Rule)
		if e.Literal != e.Resolved && filepath.IsAbs(e.Literal) {
			// A protected link (Policy.LinkedDenies): once deleted, its
			// name must not come back as a file or a link elsewhere.
			add(policy.EscapeGlob(e.Literal), e.Rule)
		}
	}
	return c
}

// matchesAny reports whether one of patterns matches p.
func matchesAny(patterns []string, p string) bool {
	for _, pat := range patterns {
		if ok, _ := doublestar.Match(pat, p); ok {
			return true
		}
	}
	return false
}

// addRule adds write-deny pattern p (absolute or "**/…"), reported as rule.
func (c *creator) addRule(p, rule string) {
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	c.rules = append(c.rules, nameRule{pattern: p, rule: rule, segs: segs,
		hooks: p == "**/.git/hooks/**", config: p == "**/.git/config", need: literalParts(segs)})
}

// literalParts returns substrings that every path matched by the pattern
// segments segs contains: "/seg" for a segment without glob syntax, the
// literal tail of a "*tail" segment. Anything else adds nothing.
func literalParts(segs []string) []string {
	var need []string
	for _, seg := range segs {
		switch {
		case seg == "" || seg == "**":
		case !strings.ContainsAny(seg, `*?[]{}\`):
			need = append(need, "/"+seg)
		case seg[0] == '*' && len(seg) > 1 && !strings.ContainsAny(seg[1:], `*?[]{}\`):
			need = append(need, seg[1:])
		}
	}
	return need
}

func (c *creator) close() {
	c.removeLocks()
	c.forgetDirs()
	if c.root >= 0 {
		unix.Close(c.root)
		c.root = -1
	}
	if c.ctty >= 0 {
		unix.Close(c.ctty)
		c.ctty = -1
	}
}

// rootOf returns the sandbox's root, opening it from pid's the first time.
func (c *creator) rootOf(pid int) (int, unix.Errno) {
	if c.root < 0 {
		fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, unix.ENOENT
		}
		c.root = fd
	}
	return c.root, 0
}

// umaskOf returns the umask of thread pid.
func (c *creator) umaskOf(pid int) int {
	if e, ok := c.umasks[pid]; ok && time.Since(e.at) < umaskTTL {
		return e.mask
	}
	mask, tgid := callerUmask(pid)
	if c.noUmaskCache[tgid] {
		return mask
	}
	if len(c.umasks) > 4096 {
		clear(c.umasks)
	}
	c.umasks[pid] = umaskEntry{mask: mask, at: time.Now()}
	return mask
}

// umaskCalled is told of a umask(2) call by thread pid, before it runs.
func (c *creator) umaskCalled(pid int) {
	clear(c.umasks)
	if _, tgid := callerUmask(pid); tgid > 0 {
		if len(c.noUmaskCache) > 4096 {
			clear(c.noUmaskCache)
		}
		c.noUmaskCache[tgid] = true
	}
}

// kinds of new names, for the git exceptions.
const (
	kFile    = iota // open O_CREAT, mknod
	kDir            // mkdir
	kOther          // rename, link, symlink, write to an existing name
	kConfig         // a rename onto .git/config whose content srt checks
	kExisted        // a write open of a name that exists
	kSource         // the name a rename takes away
)

// denied returns the rule that forbids name p coming into being as kind,
// or "".
func (c *creator) denied(p string, kind int) string {
	if policy.Within(p, c.tmpdir) || policy.Within(p, "/dev") || policy.Within(p, "/proc") {
		return ""
	}
	if kind != kDir && kind != kSource && path.Base(p) == ".git" {
		return gitFileRule
	}
	if kind != kSource && path.Base(p) == "commondir" {
		// Next to a HEAD it makes a git directory of objects and refs
		// elsewhere, whose config and hooks git then uses.
		return commondirRule
	}
	for _, r := range c.rules {
		if !containsAll(p, r.need) {
			continue
		}
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

func containsAll(p string, need []string) bool {
	for _, n := range need {
		if !strings.Contains(p, n) {
			return false
		}
	}
	return true
}

// Git directories that are not named .git. git treats any directory
// holding HEAD, objects/ and refs/ as a repository (a bare one, or one
// with core.worktree), and runs its hooks and config when a user works in
// it: the name rules above cover only .git. So a directory that becomes
// one during the run is held to the rules of a new .git: its config only
// harmless keys (written through the lock and rename), its hooks only
// *.sample files, none of the redirects (commondir, …).

// gitDirEntries make a directory a git directory (is_git_directory()).
var gitDirEntries = []string{"HEAD", "objects", "refs"}

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

// gitDirRule says why name may not come into being (as kind) in the
// directory w is in, when that directory is or becomes a git directory;
// "" when it may. Only the names below need a look at the directory.
func (c *creator) gitDirRule(w where, kind int) string {
	if policy.Within(w.real, c.tmpdir) || policy.Within(w.real, "/dev") || policy.Within(w.real, "/proc") {
		return ""
	}
	switch w.name {
	case "HEAD", "objects", "refs":
		// The last of the three makes a git directory: what is there
		// must be what a new one may hold.
		if !isGitDir(w.dir, "") && isGitDir(w.dir, w.name) {
			return c.gitDirUnsafe(w.dir)
		}
	case "config":
		if kind != kConfig && !c.allowGitConfig && isGitDir(w.dir, "") {
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

const commondirRule = "mandatory write-deny: a commondir file (it points git at another directory's config and hooks)"

const bareRule = "mandatory write-deny: hooks, config and redirects of a git directory (HEAD, objects/, refs/) made during the run"

// gitDirUnsafe checks a directory about to become a git directory.
func (c *creator) gitDirUnsafe(dir int) string {
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

// gitDirRuleAt is gitDirRule for real path p, an existing object srt
// reached through a descriptor.
func (c *creator) gitDirRuleAt(p string, kind int) string {
	base, parent := path.Base(p), path.Base(path.Dir(p))
	if base != "config" && base != "hooks" && parent != "hooks" || c.root < 0 {
		return ""
	}
	d, err := openInRoot(c.root, path.Dir(p)+"/")
	if err != nil {
		return bareRule // cannot tell: fail closed
	}
	defer unix.Close(d)
	return c.gitDirRule(where{dir: d, name: base, real: p}, kind)
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

// gitFileRule refuses a .git that is not a directory: a file holding
// "gitdir: DIR" makes git use DIR, whose hooks and config no rule
// protects (git init --separate-git-dir, worktrees and submodules make
// them, and fail).
const gitFileRule = "mandatory write-deny: a .git that is not a directory (a gitdir: file points git at hooks and config no rule protects)"

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

// callerUmask returns the Umask and Tgid of /proc/PID/status (022 and 0
// if unreadable).
func callerUmask(pid int) (mask, tgid int) {
	mask = 0o022
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return mask, 0
	}
	if v, ok := statusField(b, "Umask:"); ok {
		if m, err := strconv.ParseUint(v, 8, 32); err == nil {
			mask = int(m)
		}
	}
	if v, ok := statusField(b, "Tgid:"); ok {
		tgid, _ = strconv.Atoi(v)
	}
	return mask, tgid
}

// statusField returns the value of a "Name:\tvalue" line of a
// /proc/PID/status file, trimmed.
func statusField(b []byte, name string) (string, bool) {
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte(name)); ok {
			return strings.TrimSpace(string(rest)), true
		}
	}
	return "", false
}

// nsIDs returns thread pid's thread-group and thread IDs in the sandbox's
// PID namespace (the last NStgid and NSpid of /proc/PID/status): what
// /proc/self and /proc/thread-self name for it there.
func nsIDs(pid int) (tgid, tid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, false
	}
	last := func(name string) int {
		v, _ := statusField(b, name)
		f := strings.Fields(v)
		if len(f) == 0 {
			return 0
		}
		n, _ := strconv.Atoi(f[len(f)-1])
		return n
	}
	tgid, tid = last("NStgid:"), last("NSpid:")
	return tgid, tid, tgid > 0 && tid > 0
}

// prepareCreatorThread is run by the notification loop's goroutine: it
// locks it to its thread (never unlocked: the thread dies with the loop),
// gives the thread its own umask, drops the thread's capabilities so
// that, for srt running as root, the kernel checks srt's calls as it
// checks the command's, and blocks every signal on it.
//
// Signals: SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SEND marks
// the notification replied before it waits for the caller to take the
// descriptor; interrupted by a signal before the caller has, it takes
// the descriptor back but leaves the reply, so the caller's call returns
// 0 — an open that "returned" descriptor 0 (kernel/seccomp.c,
// seccomp_notify_addfd; seen here with Go's preemption signal, SIGURG,
// about one untar of 10,000 files in four). With every signal blocked on
// this thread nothing interrupts it: the Go runtime preempts it at
// function calls, and process signals go to other threads.
func prepareCreatorThread() error {
	runtime.LockOSThread()
	var all unix.Sigset_t
	for i := range all.Val {
		all.Val[i] = ^uint64(0)
	}
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &all, nil); err != nil {
		return err
	}
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
func (c *creator) resolve(pid, root int, dirfd int32, p string) (where, unix.Errno) {
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
			if errnoOf(err) == unix.ENAMETOOLONG {
				return w, unix.ENAMETOOLONG // a directory deeper than PATH_MAX
			}
			return w, unix.EBADF
		}
		if !strings.HasPrefix(base, "/") {
			return w, unix.ENOTDIR
		}
		if strings.HasSuffix(base, " (deleted)") {
			// The directory was removed: the kernel says ENOENT, and
			// the path read back names something else, if anything.
			var st unix.Stat_t
			if unix.Stat(link, &st) != nil || st.Nlink == 0 {
				return w, unix.ENOENT
			}
		}
		full = base + "/" + p
	}
	return c.resolveIn(pid, root, full)
}

// resolveIn resolves the parent of the absolute path full in root. The
// kernel does it (openat2 RESOLVE_IN_ROOT); when that fails with ENOENT
// or ELOOP and the path may go through /proc (srt's thread is not in the
// sandbox's PID namespace, so procfs' "self" names nothing for it, and
// RESOLVE_IN_ROOT follows no magic link such as /proc/self/cwd), the
// path is resolved component by component instead (procDir).
func (c *creator) resolveIn(pid, root int, full string) (where, unix.Errno) {
	w := where{dir: -1}
	full = c.procSelf(pid, full)
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
	if d, ok := c.dirs[dir]; ok {
		fd, err := unix.FcntlInt(uintptr(d.fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return w, errnoOf(err)
		}
		w.dir, w.name, w.real = fd, name, path.Join(d.real, name)
		return w, 0
	}
	fd, err := openInRoot(root, dir)
	if err == unix.ENOENT || err == unix.ELOOP {
		if real, ok := c.procDir(pid, root, dir); ok {
			fd, err = openInRoot(root, real)
		}
	}
	if err != nil {
		return w, errnoOf(err)
	}
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || !strings.HasPrefix(real, "/") {
		unix.Close(fd)
		return w, unix.ENOENT
	}
	if (real == "/" && dir == "/" || dir == real+"/") && !strings.Contains(real, " (deleted)") && !policy.Within(real, "/proc") {
		if len(c.dirs) >= 1024 {
			c.forgetDirs()
		}
		if keep, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0); err == nil {
			c.dirs[dir] = cachedDir{fd: keep, real: real}
		}
	}
	w.dir, w.name, w.real = fd, name, path.Join(real, name)
	return w, 0
}

// openInRoot opens directory dir (absolute) of the sandbox as O_PATH;
// symbolic links and ".." stay inside root, magic links are refused.
func openInRoot(root int, dir string) (int, error) {
	for {
		fd, err := unix.Openat2(root, dir, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err == unix.EAGAIN || err == unix.EINTR {
			continue // a rename elsewhere in the mount: retry (openat2(2))
		}
		return fd, err
	}
}

// procSelf rewrites a leading /proc/self or /proc/thread-self into the
// caller's own directory of the sandbox's procfs.
func (c *creator) procSelf(pid int, p string) string {
	var rest string
	var thread bool
	switch {
	case p == "/proc/self" || strings.HasPrefix(p, "/proc/self/"):
		rest = p[len("/proc/self"):]
	case p == "/proc/thread-self" || strings.HasPrefix(p, "/proc/thread-self/"):
		rest, thread = p[len("/proc/thread-self"):], true
	default:
		return p
	}
	tgid, tid, ok := nsIDs(pid)
	if !ok {
		return p
	}
	if thread {
		return "/proc/" + strconv.Itoa(tgid) + "/task/" + strconv.Itoa(tid) + rest
	}
	return "/proc/" + strconv.Itoa(tgid) + rest
}

// procDir resolves directory path dir of the sandbox component by
// component, following symbolic links by reading them and rewriting
// /proc/self (procSelf) wherever a link leads there (/dev/fd is a link
// to /proc/self/fd). A magic link met on the way (/proc/N/cwd/…) is
// followed by the path it shows. It returns a path without links, which
// openInRoot opens; false when there is nothing to rewrite or the walk
// fails. The result need not be what the kernel would reach: whatever it
// names, the rules are checked on the real path of the directory the
// call is then made in.
func (c *creator) procDir(pid, root int, dir string) (string, bool) {
	if !strings.Contains(dir, "/proc") && !strings.HasPrefix(dir, "/dev/") {
		return "", false
	}
	parts := strings.Split(dir, "/")
	cur := "/"
	buf := make([]byte, 4096)
	for links := 0; len(parts) > 0; {
		part := parts[0]
		parts = parts[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			continue
		}
		next := c.procSelf(pid, path.Join(cur, part))
		fd, err := unix.Openat2(root, next, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err != nil {
			return "", false
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		if err != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
			unix.Close(fd)
			if err != nil {
				return "", false
			}
			cur = next
			continue
		}
		if strings.HasPrefix(next, "/proc/") && !procOwn(pid, next) {
			unix.Close(fd)
			return "", false // another process's magic link (procOwn)
		}
		n, err := unix.Readlinkat(fd, "", buf)
		unix.Close(fd)
		if links++; err != nil || links > 40 {
			return "", false
		}
		target := string(buf[:n])
		if !strings.HasPrefix(target, "/") {
			target = path.Join(path.Dir(next), target)
		}
		parts = append(strings.Split(target, "/"), parts...)
		cur = "/"
	}
	return cur, true
}

// followFinal follows w's final component while it is a symbolic link
// (open without O_NOFOLLOW, link with AT_SYMLINK_FOLLOW), resolving each
// target in the sandbox's root. A magic link of the sandbox's procfs
// (/proc/N/fd/M, reached from /dev/stdout or /dev/fd/M) is followed by
// the kernel to its object, returned as obj (O_PATH; -1 otherwise): the
// object exists, and w is closed.
func (c *creator) followFinal(pid, root int, w where) (_ where, obj int, _ unix.Errno) {
	buf := make([]byte, 4096)
	for range 40 {
		var st unix.Stat_t
		if err := unix.Fstatat(w.dir, w.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
			return w, -1, 0
		}
		if strings.HasPrefix(w.real, "/proc/") {
			var sfs unix.Statfs_t
			if unix.Fstatfs(w.dir, &sfs) == nil && sfs.Type == unix.PROC_SUPER_MAGIC {
				// A procfs link: a magic link jumps to its object
				// without a path walk; procfs' other links are
				// relative and stay in procfs. Only the caller's
				// own (procOwn).
				if !procOwn(pid, w.real) {
					w.close()
					return where{dir: -1}, -1, unix.EACCES
				}
				o, err := unix.Openat(w.dir, w.name, unix.O_PATH|unix.O_CLOEXEC, 0)
				w.close()
				if err != nil {
					return where{dir: -1}, -1, errnoOf(err)
				}
				return where{dir: -1}, o, 0
			}
		}
		n, err := unix.Readlinkat(w.dir, w.name, buf)
		if err != nil {
			w.close()
			return where{dir: -1}, -1, errnoOf(err)
		}
		target := string(buf[:n])
		if !strings.HasPrefix(target, "/") {
			target = path.Dir(w.real) + "/" + target
		}
		w.close()
		var e unix.Errno
		if w, e = c.resolveIn(pid, root, target); e != 0 {
			return w, -1, e
		}
	}
	w.close()
	return where{dir: -1}, -1, unix.ELOOP
}

// emulate handles a creation call; false means it is not one (the caller
// answers as before).
func (n *Supervisor) emulate(fd int, nt seccomp.Notification, c seccomp.Call) bool {
	a := nt.Data.Args
	pid := int(nt.PID)
	var op string
	var flags, mode uint64
	var dirfd, dirfd2 int32 = unix.AT_FDCWD, unix.AT_FDCWD
	var p1, p2 uint64
	switch c.Name {
	case "umask":
		// The mask is an argument, not memory: letting the call run is
		// race-free. Forget what is cached before it takes effect.
		n.cr.umaskCalled(pid)
		seccomp.Respond(fd, nt.ID, 0)
		return true
	case "open":
		op, p1, flags, mode = "open", a[0], uint64(uint32(a[1])), a[2]
	case "openat":
		op, dirfd, p1, flags, mode = "open", int32(a[0]), a[1], uint64(uint32(a[2])), a[3]
	case "openat2":
		// Its flags are in the caller's memory, which another thread
		// can change after srt has read them: a call srt let run as a
		// read could create when the kernel reads them again. So none
		// runs: ENOSYS, as on a kernel before 5.6, to which every
		// caller of openat2 must fall back (with openat) anyway.
		seccomp.Respond(fd, nt.ID, unix.ENOSYS)
		return true
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
	case "truncate":
		op, p1, mode = "truncate", a[0], a[1] // mode holds the length
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
	if val == answered {
		return true
	}
	nsPID, exe := 0, ""
	action := violation.FileWriteCreate
	if rule != "" {
		nsPID, exe = procInfo(pid) // while the caller waits
		if (op == "open" || op == "truncate") && n.cr.isFile(target) {
			action = violation.FileWriteData
		}
	}
	// A call the mounts refused (a read-only path, a mount point) is
	// recorded as the observer records the calls it lets run; classified
	// now, while the caller waits and its files are as they were (git
	// removes its config.lock as soon as the rename fails).
	if rule == "" && n.observe && (errno == unix.EROFS || errno == unix.EACCES || errno == unix.EPERM || errno == unix.EBUSY || errno == unix.EXDEV) {
		ev := n.observedCall(nt, c)
		if ev.path != "" && n.interesting(ev) {
			if v, ok := n.refusal(ev); ok {
				n.on(v)
			}
		}
	}
	if errno != 0 {
		seccomp.Respond(fd, nt.ID, errno)
	} else {
		seccomp.RespondValue(fd, nt.ID, val)
	}
	if rule != "" {
		if nsPID != 1 {
			n.on(violation.Violation{Time: time.Now(), Action: action, Target: target,
				Reason: rule, PID: nsPID, Exe: exe})
		}
	}
	return true
}

// isFile reports whether the sandbox has a file (not a directory) at real
// path p; for the record only.
func (c *creator) isFile(p string) bool {
	if c.root < 0 {
		return false
	}
	fd, err := unix.Openat2(c.root, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR
}

// readOnlyMount reports whether obj (any descriptor) lies on a read-only
// mount: a protected path srt bound read-only, whose writes the kernel
// refuses with EROFS before any name rule applies.
func readOnlyMount(obj int) bool {
	var sfs unix.Statfs_t
	return unix.Fstatfs(obj, &sfs) == nil && sfs.Flags&unix.ST_RDONLY != 0
}

// readOnlyAt is readOnlyMount for name in dir.
func readOnlyAt(dir int, name string) bool {
	fd, err := unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return readOnlyMount(fd)
}

// mountPoint reports whether name in dir is a mount point of the sandbox
// (a path srt bound: a protected one or a pinned parent). The kernel
// refuses to rename one with EBUSY only when it is a mount point in the
// caller's mount namespace (is_local_mountpoint), and srt's thread is in
// another one, so srt checks itself: the name's mount is not its
// directory's (lookups from a descriptor of the sandbox's tree cross the
// sandbox's mounts).
func mountPoint(dir int, name string) bool {
	var d, e unix.Statx_t
	if unix.Statx(dir, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &d) != nil ||
		unix.Statx(dir, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &e) != nil {
		return false
	}
	return d.Mnt_id != e.Mnt_id
}

// procOwn reports whether real path p, inside the sandbox's procfs, is
// the caller's own directory there (/proc/TGID/…). srt's thread owns the
// sandbox's user namespace, which gives it every capability there: the
// kernel would let it open another process's /proc/N/mem or fd/M for
// writing, where the caller itself could not. So srt works only on the
// caller's own procfs files.
func procOwn(pid int, p string) bool {
	tgid, _, ok := nsIDs(pid)
	return ok && policy.Within(p, "/proc/"+strconv.Itoa(tgid))
}

// writeOpenFlags make an open one srt performs.
const writeOpenFlags = unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC

// answered is perform's value when the notification has been answered
// already (ADDFD with SEND, or by a goroutine that waits on a FIFO).
const answered = -2

// perform does the call. val answered means the answer was sent. A
// non-empty rule is a refusal (target names the path).
func (n *Supervisor) perform(fd int, nt seccomp.Notification, op string, dirfd, dirfd2 int32, p1, p2, flags, mode uint64) (val int64, errno unix.Errno, rule, target string) {
	pid := int(nt.PID)
	cr := n.cr
	name, e := pathArg(pid, p1)
	if e != 0 {
		return 0, e, "", ""
	}
	var name2 string
	if op == "link" || op == "symlink" || op == "rename" {
		if name2, e = pathArg(pid, p2); e != 0 && !(op == "link" && flags&unix.AT_EMPTY_PATH != 0 && e == unix.EFAULT && p2 == 0) {
			return 0, e, "", ""
		}
	}
	// Everything is read: from here on the caller's memory is not used.
	if !seccomp.IDValid(fd, nt.ID) {
		return 0, unix.ENOENT, "", ""
	}
	root, e := cr.rootOf(pid)
	if e != 0 {
		return 0, e, "", ""
	}
	if op == "open" && flags&unix.O_TMPFILE == unix.O_TMPFILE {
		// An anonymous file in the directory name names: no name comes
		// into being until a link gives it one, and that is checked.
		// (The directory is resolved as the parent of a name in it.)
		d, e := cr.resolve(pid, root, dirfd, strings.TrimRight(name, "/")+"/x")
		if e != 0 {
			return 0, e, "", ""
		}
		defer d.close()
		unix.Umask(cr.umaskOf(pid))
		nfd, err := unix.Openat(d.dir, ".", int(flags)|unix.O_NOCTTY|unix.O_CLOEXEC, cr.mode(mode))
		return send(fd, nt, nfd, err, flags)
	}
	w, e := cr.resolve(pid, root, dirfd, name)
	if e == unix.EEXIST && (op == "open" || op == "truncate") {
		e = unix.EISDIR // ".", ".." or "/"
	}
	if e != 0 {
		return 0, e, "", ""
	}
	defer func() { w.close() }()
	if w.trailing && (op == "open" || op == "truncate") {
		// "name/" must be a directory, which cannot be opened for
		// writing: EISDIR, or ENOTDIR when it is something else.
		var st unix.Stat_t
		if unix.Fstatat(w.dir, w.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Mode&unix.S_IFMT != unix.S_IFLNK {
			return 0, unix.ENOTDIR, "", ""
		}
		return 0, unix.EISDIR, "", ""
	}
	defer func() {
		// A name refused in a read-only directory (a denied one, or
		// one outside the write roots): the kernel would have said
		// EROFS before any name rule, and so does srt.
		if rule != "" && w.dir >= 0 && readOnlyMount(w.dir) {
			errno, rule, target = unix.EROFS, "", ""
		}
	}()
	switch op {
	case "open", "truncate":
		obj := -1
		if op == "truncate" || flags&unix.O_NOFOLLOW == 0 && !(flags&unix.O_CREAT != 0 && flags&unix.O_EXCL != 0) {
			if w, obj, e = cr.followFinal(pid, root, w); e != 0 {
				return 0, e, "", ""
			}
		}
		if obj < 0 && policy.Within(w.real, "/proc") && !procOwn(pid, w.real) {
			return 0, unix.EACCES, "", "" // see procOwn
		}
		if obj < 0 {
			var st unix.Stat_t
			if unix.Fstatat(w.dir, w.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT != unix.S_IFLNK &&
				(op == "truncate" || flags&unix.O_TMPFILE != unix.O_TMPFILE && !(flags&unix.O_CREAT != 0 && flags&unix.O_EXCL != 0)) {
				if op == "open" && st.Mode&unix.S_IFMT == unix.S_IFREG {
					// The common case, a file: no name can change
					// meanwhile (every creation is made on this
					// thread), so open it where it was checked.
					return n.openExisting(fd, nt, w, flags)
				}
				// Another existing object: work on it (O_PATH), as
				// the kernel would after its lookup.
				o, err := unix.Openat(w.dir, w.name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err != nil {
					return 0, errnoOf(err), "", ""
				}
				obj = o
			}
		}
		if obj >= 0 {
			defer unix.Close(obj)
			if op == "truncate" {
				return cr.truncate(obj, int64(mode))
			}
			return n.reopen(fd, nt, obj, flags)
		}
		if op == "truncate" {
			return 0, unix.ENOENT, "", ""
		}
		return n.create(fd, nt, w, flags, mode)
	case "mkdir":
		if r := cr.denied(w.real, kDir); r != "" {
			return 0, 0, r, w.real
		}
		if r := cr.gitDirRule(w, kDir); r != "" {
			return 0, 0, r, w.real
		}
		unix.Umask(cr.umaskOf(pid))
		cr.forgetDirs()
		return 0, errnoOf0(unix.Mkdirat(w.dir, w.name, cr.mode(mode))), "", ""
	case "mknod":
		kind := kOther
		if t := mode & unix.S_IFMT; t == 0 || t == unix.S_IFREG {
			kind = kFile
		}
		if r := cr.denied(w.real, kind); r != "" {
			return 0, 0, r, w.real
		}
		if r := cr.gitDirRule(w, kind); r != "" {
			return 0, 0, r, w.real
		}
		unix.Umask(cr.umaskOf(pid))
		return 0, errnoOf0(unix.Mknodat(w.dir, w.name, uint32(mode)&unix.S_IFMT|cr.mode(mode), int(flags))), "", ""
	case "symlink":
		if r := cr.symlinkDenied(w.real); r != "" {
			return 0, 0, r, w.real
		}
		if r := cr.gitDirRule(w, kOther); r != "" {
			return 0, 0, r, w.real
		}
		cr.forgetDirs()
		return 0, errnoOf0(unix.Symlinkat(name2, w.dir, w.name)), "", ""
	case "link":
		if r := cr.denied(w.real, kOther); r != "" {
			return 0, 0, r, w.real
		}
		if r := cr.gitDirRule(w, kOther); r != "" {
			return 0, 0, r, w.real
		}
		if flags&unix.AT_EMPTY_PATH != 0 && name2 == "" {
			if dirfd2 < 0 {
				return 0, unix.EBADF, "", ""
			}
			o, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/fd/"+strconv.Itoa(int(dirfd2)), unix.O_PATH|unix.O_CLOEXEC, 0)
			if err != nil {
				return 0, unix.EBADF, "", ""
			}
			defer unix.Close(o)
			return cr.linkObject(o, w)
		}
		o, e := cr.resolve(pid, root, dirfd2, name2)
		if e != 0 {
			return 0, e, "", ""
		}
		if flags&unix.AT_SYMLINK_FOLLOW != 0 {
			var obj int
			if o, obj, e = cr.followFinal(pid, root, o); e != 0 {
				return 0, e, "", ""
			}
			if obj >= 0 {
				// A magic link (/proc/self/fd/N: naming an O_TMPFILE).
				defer unix.Close(obj)
				return cr.linkObject(obj, w)
			}
		}
		defer o.close()
		if r := cr.denied(o.real, kExisted); r != "" {
			if readOnlyAt(o.dir, o.name) {
				return 0, unix.EXDEV, "", "" // a bind mount of its own
			}
			return 0, 0, r, o.real
		}
		var ost unix.Stat_t
		if unix.Fstatat(o.dir, o.name, &ost, unix.AT_SYMLINK_NOFOLLOW) == nil && ost.Mode&unix.S_IFMT == unix.S_IFLNK {
			// A hard link to a symbolic link is a symbolic link.
			if r := cr.symlinkDenied(w.real); r != "" {
				return 0, 0, r, w.real
			}
		}
		return 0, errnoOf0(unix.Linkat(o.dir, o.name, w.dir, w.name, 0)), "", ""
	case "rename":
		o, e := cr.resolve(pid, root, dirfd2, name2)
		if e != 0 {
			return 0, e, "", ""
		}
		defer o.close()
		cr.forgetDirs()
		return n.rename(o, w, flags, pid)
	}
	return 0, unix.ENOSYS, "", ""
}

// linkObject gives object o (O_PATH, reached through a descriptor of the
// caller's) the new name w: a second name for a protected file would be
// a way to write it, so o's real path is checked too. Through the magic
// link, not AT_EMPTY_PATH, which needs CAP_DAC_READ_SEARCH before Linux
// 6.10.
func (c *creator) linkObject(o int, w where) (int64, unix.Errno, string, string) {
	var st unix.Stat_t
	if unix.Fstat(o, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		if r := c.symlinkDenied(w.real); r != "" {
			return 0, 0, r, w.real
		}
	}
	if real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(o)); err == nil {
		if r := c.denied(real, kExisted); r != "" {
			if readOnlyMount(o) {
				return 0, unix.EXDEV, "", ""
			}
			return 0, 0, r, real
		}
	}
	return 0, errnoOf0(unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(o), w.dir, w.name, unix.AT_SYMLINK_FOLLOW)), "", ""
}

// create performs an open of a name that does not exist (or an O_EXCL or
// O_TMPFILE open, which the kernel fails or makes anonymous) and hands
// the descriptor to the caller.
func (n *Supervisor) create(fd int, nt seccomp.Notification, w where, flags, mode uint64) (int64, unix.Errno, string, string) {
	if flags&unix.O_TMPFILE != unix.O_TMPFILE {
		if r := n.cr.denied(w.real, kFile); r != "" {
			return 0, 0, r, w.real
		}
		if r := n.cr.gitDirRule(w, kFile); r != "" {
			return 0, 0, r, w.real
		}
	}
	unix.Umask(n.cr.umaskOf(int(nt.PID)))
	// A lock file that did not exist is the sandbox's own, never one the
	// host's git holds (noteLock).
	var st unix.Stat_t
	lock := strings.HasSuffix(w.name, ".lock") && flags&unix.O_TMPFILE != unix.O_TMPFILE &&
		unix.Fstatat(w.dir, w.name, &st, unix.AT_SYMLINK_NOFOLLOW) == unix.ENOENT
	nfd, err := unix.Openat(w.dir, w.name, int(flags)|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_CLOEXEC, n.cr.mode(mode))
	if err == nil && lock {
		n.cr.noteLock(w.dir, w.name, w.real, nfd)
	}
	return send(fd, nt, nfd, err, flags)
}

const hostFIFORule = "a FIFO outside the write roots (a host process reads it)"

// hostFIFO reports whether obj (any descriptor) is a FIFO on a read-only
// mount: the host's (/run/initctl, a tool's control pipe). A read-only
// mount refuses writes to files, not opens of a FIFO for writing, and as
// root the sandbox could open a root-only one (adversarial review). The
// sandbox's own FIFOs are in its write roots and TMPDIR.
func hostFIFO(obj int) bool {
	var st unix.Stat_t
	return unix.Fstat(obj, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO && readOnlyMount(obj)
}

// send answers notification nt with nfd, the descriptor an open returned
// (closed here), as the call's result; or with the open's error. An
// executable file (any x bit) is handed over in two steps — install,
// close srt's copy, then answer — so that the caller, which may execute
// it as soon as it has closed its own, never finds srt's copy still open
// for writing (ETXTBSY). Other files go in one step (ADDFD with SEND),
// which saves a wake-up.
func send(fd int, nt seccomp.Notification, nfd int, err error, flags uint64) (int64, unix.Errno, string, string) {
	if err != nil {
		return 0, errnoOf(err), "", ""
	}
	cloexec := flags&unix.O_CLOEXEC != 0
	var st unix.Stat_t
	if unix.Fstat(nfd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Mode&0o111 != 0 {
		n, err := seccomp.AddFD(fd, nt.ID, nfd, cloexec)
		unix.Close(nfd)
		if err != nil {
			return 0, errnoOf(err), "", ""
		}
		return int64(n), 0, "", ""
	}
	defer unix.Close(nfd)
	if _, err := seccomp.AddFDSend(fd, nt.ID, nfd, cloexec); err != nil {
		return 0, errnoOf(err), "", ""
	}
	return answered, 0, "", ""
}

// openExisting performs a write open of the existing regular file w.
func (n *Supervisor) openExisting(fd int, nt seccomp.Notification, w where, flags uint64) (int64, unix.Errno, string, string) {
	kind := kExisted
	if strings.HasSuffix(w.name, ".sample") {
		kind = kOther // a hook sample is created, never rewritten
	}
	if r := n.cr.denied(w.real, kind); r != "" {
		if readOnlyAt(w.dir, w.name) {
			return 0, unix.EROFS, "", "" // as the kernel says first
		}
		return 0, 0, r, w.real
	}
	if r := n.cr.gitDirRule(w, kExisted); r != "" {
		return 0, 0, r, w.real
	}
	// O_NONBLOCK: where another process holds a lease, fail at once
	// instead of holding up every creation until the lease is broken;
	// then wait off the loop, as the caller would have.
	nfd, err := unix.Openat(w.dir, w.name, int(flags)|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if flags&unix.O_NONBLOCK == 0 {
		if err == unix.EWOULDBLOCK {
			o, err := unix.Openat(w.dir, w.name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return 0, errnoOf(err), "", ""
			}
			defer unix.Close(o)
			return n.openWaiting(fd, nt, o, flags, false)
		}
		if err == nil {
			clearNonblock(nfd)
		}
	}
	return send(fd, nt, nfd, err, flags)
}

// reopen performs a write open of an existing object obj (O_PATH): the
// rules are checked on its real path, then it is opened again through
// /proc/self/fd with the caller's flags. /dev/tty is the caller's
// controlling terminal, not srt's; a FIFO with no reader yet is opened
// off the loop (openWaiting), since the open waits for one.
func (n *Supervisor) reopen(fd int, nt seccomp.Notification, obj int, flags uint64) (int64, unix.Errno, string, string) {
	var st unix.Stat_t
	if err := unix.Fstat(obj, &st); err != nil {
		return 0, errnoOf(err), "", ""
	}
	if flags&(unix.O_WRONLY|unix.O_RDWR) != 0 && hostFIFO(obj) {
		target, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(obj))
		return 0, 0, hostFIFORule, target
	}
	var sfs unix.Statfs_t
	if unix.Fstatfs(obj, &sfs) == nil && sfs.Type == unix.PROC_SUPER_MAGIC {
		// Reached through a descriptor (/proc/self/fd/N holding an
		// O_PATH of /proc/1/mem): the object must be the caller's own
		// too (procOwn).
		real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(obj))
		if err != nil || !procOwn(int(nt.PID), real) {
			return 0, unix.EACCES, "", ""
		}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(obj))
		if err != nil {
			return 0, unix.ENOENT, "", ""
		}
		kind := kExisted
		if strings.HasSuffix(real, ".sample") {
			kind = kOther // a hook sample is created, never rewritten
		}
		if r := n.cr.denied(real, kind); r != "" {
			if readOnlyMount(obj) {
				return 0, unix.EROFS, "", ""
			}
			return 0, 0, r, real
		}
		if r := n.cr.gitDirRuleAt(real, kExisted); r != "" {
			return 0, 0, r, real
		}
	case unix.S_IFDIR:
		if flags&unix.O_CREAT != 0 && flags&(unix.O_WRONLY|unix.O_RDWR|unix.O_TRUNC) == 0 {
			return 0, unix.EISDIR, "", ""
		}
	case unix.S_IFCHR:
		if st.Rdev == unix.Mkdev(5, 0) { // /dev/tty
			t, e := n.cr.callerTTY(int(nt.PID))
			if e != 0 {
				return 0, e, "", ""
			}
			defer unix.Close(t)
			obj = t
		}
	case unix.S_IFIFO:
		// Without O_NONBLOCK, a read or write open waits for the other
		// end (O_RDWR never waits on Linux: fifo(7)).
		if acc := flags & unix.O_ACCMODE; acc != unix.O_RDWR && flags&unix.O_NONBLOCK == 0 {
			return n.openWaiting(fd, nt, obj, flags, true)
		}
	}
	f := int(flags) &^ (unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW)
	if st.Mode&unix.S_IFMT == unix.S_IFREG && flags&unix.O_NONBLOCK == 0 {
		// A lease: as in openExisting, never wait on the loop.
		nfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(obj), f|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err == unix.EWOULDBLOCK {
			return n.openWaiting(fd, nt, obj, flags, false)
		}
		if err == nil {
			clearNonblock(nfd)
		}
		return send(fd, nt, nfd, err, flags)
	}
	nfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(obj), f|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	return send(fd, nt, nfd, err, flags)
}

// clearNonblock takes back the O_NONBLOCK srt added to an open (to fail
// at once on a lease) that the caller did not ask for.
func clearNonblock(fd int) {
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err == nil {
		unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
	}
}

// truncate performs truncate(2) on obj, a checked existing name.
func (c *creator) truncate(obj int, length int64) (int64, unix.Errno, string, string) {
	var st unix.Stat_t
	if err := unix.Fstat(obj, &st); err != nil {
		return 0, errnoOf(err), "", ""
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		return 0, unix.EISDIR, "", ""
	default:
		return 0, unix.EINVAL, "", ""
	}
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(obj))
	if err != nil {
		return 0, unix.ENOENT, "", ""
	}
	if r := c.denied(real, kExisted); r != "" {
		if readOnlyMount(obj) {
			return 0, unix.EROFS, "", ""
		}
		return 0, 0, r, real
	}
	if r := c.gitDirRuleAt(real, kExisted); r != "" {
		return 0, 0, r, real
	}
	wfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(obj), unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, errnoOf(err), "", ""
	}
	defer unix.Close(wfd)
	return 0, errnoOf0(unix.Ftruncate(wfd, length)), "", ""
}

// callerTTY opens the controlling terminal of thread pid (tty_nr of
// /proc/PID/stat): the pty srt gave the command, or one the command made
// in the sandbox's /dev/pts. ENXIO when it has none, as open(/dev/tty)
// gives.
func (c *creator) callerTTY(pid int) (int, unix.Errno) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1, unix.ENXIO
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1, unix.ENXIO
	}
	f := strings.Fields(string(b[i+1:])) // state ppid pgrp session tty_nr …
	if len(f) < 5 {
		return -1, unix.ENXIO
	}
	nr, _ := strconv.ParseUint(f[4], 10, 64)
	if nr == 0 {
		return -1, unix.ENXIO
	}
	dev := unix.Mkdev(unix.Major(nr), unix.Minor(nr))
	var st unix.Stat_t
	if c.ctty >= 0 && unix.Fstat(c.ctty, &st) == nil && st.Rdev == dev {
		t, err := unix.FcntlInt(uintptr(c.ctty), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return -1, errnoOf(err)
		}
		return t, 0
	}
	if maj := unix.Major(dev); maj >= 136 && maj < 144 && c.root >= 0 {
		n := (maj-136)<<8 | unix.Minor(dev)
		t, err := unix.Openat2(c.root, "/dev/pts/"+strconv.Itoa(int(n)), &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS,
		})
		if err == nil {
			if unix.Fstat(t, &st) == nil && st.Rdev == dev {
				return t, 0
			}
			unix.Close(t)
		}
	}
	return -1, unix.ENXIO
}

// maxWaiters bounds the opens waiting at once (openWaiting: FIFOs,
// leases); more fail with ENFILE.
const maxWaiters = 64

// openWaiting opens obj with the caller's flags on a thread of its own and
// answers from there: a FIFO's open waits for the other end (fifo), and a
// file's waits while another process holds a lease on it (up to
// /proc/sys/fs/lease-break-time). Only a FIFO's wait can be ended early.
func (n *Supervisor) openWaiting(fd int, nt seccomp.Notification, obj int, flags uint64, fifo bool) (int64, unix.Errno, string, string) {
	if n.waiters.Add(1) > maxWaiters {
		n.waiters.Add(-1)
		return 0, unix.ENFILE, "", "" // each costs srt a thread: bounded
	}
	dup, err := unix.FcntlInt(uintptr(obj), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		n.waiters.Add(-1)
		return 0, errnoOf(err), "", ""
	}
	n.pending.Add(1)
	go func() {
		defer n.pending.Done()
		defer n.waiters.Add(-1)
		defer unix.Close(dup)
		if err := prepareCreatorThread(); err != nil {
			seccomp.Respond(fd, nt.ID, unix.EACCES)
			return
		}
		p := "/proc/self/fd/" + strconv.Itoa(dup)
		done, released := make(chan struct{}), make(chan bool, 1)
		if !fifo {
			released <- false
		} else {
			go n.releaseFIFO(fd, nt, p, done, released)
		}
		f := int(flags) &^ (unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW)
		nfd, err := unix.Open(p, f|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		close(done)
		if <-released {
			if err == nil {
				unix.Close(nfd)
			}
			seccomp.Respond(fd, nt.ID, unix.EINTR) // the caller is gone, or the sandbox is ending
			return
		}
		val, errno, _, _ := send(fd, nt, nfd, err, flags)
		switch {
		case errno != 0:
			seccomp.Respond(fd, nt.ID, errno)
		case val != answered:
			seccomp.RespondValue(fd, nt.ID, val)
		}
	}()
	return answered, 0, "", ""
}

// releaseFIFO ends the wait of an open of FIFO p (a /proc/self/fd path)
// when the caller is gone or the sandbox is ending, by opening both ends
// itself; it says on released whether it did.
func (n *Supervisor) releaseFIFO(fd int, nt seccomp.Notification, p string, done <-chan struct{}, released chan<- bool) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-done:
			released <- false
			return
		case <-n.stopping:
		case <-t.C:
			if seccomp.IDValid(fd, nt.ID) {
				continue
			}
		}
		// O_RDWR is both ends, and never waits.
		r, err := unix.Open(p, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			time.Sleep(50 * time.Millisecond) // try again
			continue
		}
		<-done
		unix.Close(r)
		released <- true
		return
	}
}

func errnoOf0(err error) unix.Errno {
	if err == nil {
		return 0
	}
	return errnoOf(err)
}

// rename checks both ends (and, for a directory, what it brings along)
// and renames.
func (n *Supervisor) rename(o, w where, flags uint64, pid int) (int64, unix.Errno, string, string) {
	var ost, wst unix.Stat_t
	if err := unix.Fstatat(o.dir, o.name, &ost, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, errnoOf(err), "", ""
	}
	wErr := unix.Fstatat(w.dir, w.name, &wst, unix.AT_SYMLINK_NOFOLLOW)
	if mountPoint(o.dir, o.name) || wErr == nil && mountPoint(w.dir, w.name) {
		return 0, unix.EBUSY, "", "" // see mountPoint
	}
	exchange := flags&unix.RENAME_EXCHANGE != 0
	srcKind := kSource
	if exchange {
		srcKind = kOther // the other name comes into being there
		if wErr == nil && wst.Mode&unix.S_IFMT == unix.S_IFDIR {
			srcKind = kDir
		}
	}
	if r := n.cr.denied(o.real, srcKind); r != "" {
		return 0, 0, r, o.real
	}
	kind := kOther
	if !exchange && ost.Mode&unix.S_IFMT == unix.S_IFREG && path.Dir(o.real) == path.Dir(w.real) &&
		(n.cr.isGitConfig(w.real) || w.name == "config" && !n.cr.allowGitConfig && isGitDir(w.dir, "")) {
		kind = kConfig
	}
	if ost.Mode&unix.S_IFMT == unix.S_IFDIR {
		kind = kDir // what it holds is checked below (treeDenied)
	}
	if r := n.cr.denied(w.real, kind); r != "" {
		return 0, 0, r, w.real
	}
	if r := n.cr.gitDirRule(w, kind); r != "" {
		return 0, 0, r, w.real
	}
	if exchange {
		// The other end is a name coming into being too: what w holds
		// lands at o. In a git directory, its config and hooks are not
		// exchanged at all (a symlink or a crafted config would go in).
		wKind := kOther
		if wErr == nil && wst.Mode&unix.S_IFMT == unix.S_IFDIR {
			wKind = kDir
		}
		if r := n.cr.gitDirRule(o, wKind); r != "" {
			return 0, 0, r, o.real
		}
		for _, e := range []where{o, w} {
			if (e.name == "config" || e.name == "hooks") && isGitDir(e.dir, "") {
				return 0, 0, bareRule, e.real
			}
		}
	}
	// A directory moved in as a git directory's hooks brings its files.
	if ost.Mode&unix.S_IFMT == unix.S_IFDIR && w.name == "hooks" && isGitDir(w.dir, "") && !onlySamples(o.dir, o.name) {
		return 0, 0, bareRule, w.real
	}
	if exchange && wErr == nil && wst.Mode&unix.S_IFMT == unix.S_IFDIR && o.name == "hooks" && isGitDir(o.dir, "") && !onlySamples(w.dir, w.name) {
		return 0, 0, bareRule, o.real
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
		if e := n.cr.gitConfigRename(o, w, n.cr.umaskOf(pid)); e != 0 {
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

// gitConfigKeys are the keys a .git/config written in the sandbox may
// hold: what git init, clone, commit and ordinary git config use, none of
// which makes git run a program or read another file. "*" stands for a
// subsection.
var gitConfigKeys = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`core.repositoryformatversion core.filemode core.bare core.logallrefupdates
		core.symlinks core.ignorecase core.precomposeunicode core.autocrlf core.eol core.safecrlf
		core.checkstat core.trustctime core.quotepath core.compression
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
		v := strings.ToLower(strings.TrimSpace(val))
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		// git joins quoted pieces and reads escapes ("e\"x\"t::",
		// e"x"t::): a value with a quote or backslash inside is refused.
		if strings.ContainsAny(v, `"\`) || strings.HasPrefix(v, "ext::") || strings.HasPrefix(v, "fd::") || strings.HasPrefix(v, "-") {
			return false
		}
	}
	return sc.Err() == nil
}
