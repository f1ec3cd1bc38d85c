// Package policy compiles validated settings into the whole contract a
// backend enforces: absolute, symlink-resolved paths for every read and
// write rule, each with its typed Origin; the mandatory write-denies found
// below the working directory and every write root (seed 003, "Chemins de
// refus obligatoires") and the files host programs trust (hosttrusted.go);
// every rule resolved through the link guard, which refuses links a run
// could have planted (trust.go); the network half compiled once
// (Network); and the process rules (Process). CompileView builds the
// policy of srtd's confined sessions.
//
// The package knows nothing about bubblewrap or Seatbelt; backends turn a
// *Policy into mounts or profile rules. One implementation of each rule,
// shared by the CLI, the library and the server.
package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/srt-go/srt/policy/dirindex"
	"github.com/srt-go/srt/settings"
)

// Kind says what a path was when the policy was compiled.
type Kind int

const (
	// Missing means nothing exists at the path (yet).
	Missing Kind = iota
	// Dir is an existing directory.
	Dir
	// File is an existing non-directory (regular file, fifo, socket, device).
	File
)

func (k Kind) String() string {
	switch k {
	case Dir:
		return "dir"
	case File:
		return "file"
	}
	return "missing"
}

// Path is one rule's target.
type Path struct {
	// Literal is the path as the rule spelled it, made absolute (~ and
	// relative forms expanded, cleaned) but with symlinks unresolved.
	Literal string
	// Resolved is Literal with every symlink resolved. For a path that does
	// not exist, the longest existing prefix is resolved and the rest kept.
	// Backends enforce at Resolved: a mount placed there covers every
	// spelling that reaches the same file (seed 000, "SandboxSpec": a deny
	// applies to the literal and the symlink-resolved form).
	Resolved string
	// Kind is what Resolved was at compile time.
	Kind Kind
	// Rule names the rule this path comes from, for messages and violations,
	// e.g. "filesystem.denyWrite[1]" or "mandatory: .bashrc". It is for
	// people: decisions use Origin.
	Rule string
	// Origin is the kind of rule the path comes from.
	Origin Origin

	// IsDir says the rule protects a directory (with everything in it)
	// even while nothing exists at Resolved: a placeholder standing for it
	// is a directory.
	IsDir bool

	// symlink is set when the last component of Literal is a symbolic link.
	symlink bool
	// literalParent is the resolved directory holding Literal's last
	// component.
	literalParent string
	// globMatch says the path is what a glob entry matched, not an entry
	// itself.
	globMatch bool
	// uncheckable is why srt could not look at the path although it may
	// exist (see uncheckable in trust.go); nil when it could.
	uncheckable error
	// nlink is the target's link count when it exists (0 where unknown).
	nlink uint64
}

func (p Path) parentResolved() string { return p.literalParent }

// Policy is the compiled, enforceable form of the settings. Paths are
// absolute and resolved; lists hold no duplicates.
type Policy struct {
	// Cwd is the resolved working directory the command starts in.
	Cwd string
	// Home is the user's home directory ($HOME).
	Home string
	// FilesystemDisabled means no filesystem policy at all: the whole host
	// filesystem is writable and no mandatory denies apply.
	FilesystemDisabled bool

	// DenyRead are paths that cannot be read (directories appear empty).
	DenyRead []Path
	// AllowRead re-open paths inside a DenyRead area; the most specific of
	// the two lists wins, and an exact tie goes to AllowRead.
	AllowRead []Path
	// AllowWrite are the write roots: nothing outside them can be written.
	AllowWrite []Path
	// DenyWrite are read-only holes in the write roots, user and mandatory
	// rules alike. A DenyWrite always wins over AllowWrite.
	DenyWrite []Path

	// Network is the network half of the policy, compiled once.
	Network Network
	// Process are the rules about processes (nested user namespaces,
	// pseudo-terminals, Mach services).
	Process Process
	// NamesAtCreation is filesystem.enforceNamesAtCreation: whether the
	// backend refuses protected names when they are created (true when
	// the key is absent); NamesAtCreationSet says the key was given, so
	// that a host that cannot must refuse the run rather than go on
	// without (sandbox/linux CreationRules).
	NamesAtCreation, NamesAtCreationSet bool

	// DenyReadGlobs, AllowReadGlobs, AllowWriteGlobs and DenyWriteGlobs
	// are the glob entries of the settings lists as written (made
	// absolute), for backends that match names when a file is opened or
	// created (Seatbelt). The Path lists above hold what each glob matched
	// at compile time; these cover names created later. A "dir/**" entry
	// is a Path, not a Glob. Empty when FilesystemDisabled.
	DenyReadGlobs, AllowReadGlobs, AllowWriteGlobs, DenyWriteGlobs []Glob
	// MandatoryPatterns are the mandatory write-denies as "**/" patterns
	// that match at any depth ("**/.bashrc", "**/.git/hooks/**"), from
	// MandatoryGlobs. DenyWrite holds the instances found by the walk; a
	// backend that can match names at creation time also enforces these.
	// Empty when FilesystemDisabled.
	MandatoryPatterns []string

	// AllowGitConfig is filesystem.allowGitConfig: a git directory's
	// config is writable (MandatoryPatterns and DenyWrite leave it out),
	// its hooks are not.
	AllowGitConfig bool

	// MaskedFiles are the credentials.files entries of mode "mask" that
	// exist (policy/credentials.go): each shown inside the sandbox as a
	// read-only copy with sentinels in place of its secrets, mounted over
	// the file at its resolved path. Their real paths are in DenyWrite.
	MaskedFiles []MaskedFile
	// CredentialFiles are the credentials.files paths ("~/" expanded),
	// present or not, in both modes: a backend that can neither mask nor
	// hide them refuses the policy when there are any.
	CredentialFiles []string

	// View, when not nil, confines the sandbox to a few system
	// directories and the View's mounts: nothing else is readable (see
	// CompileView). Nil means the whole host is visible, read-only
	// outside the write roots.
	View *View

	// guard judges the links met while resolving a path against the
	// write roots (trust.go); nil when FilesystemDisabled.
	guard *linkGuard

	// LinkedDenies are the DenyWrite entries that are symbolic links in a
	// writable directory; see LinkedDeniesError.
	LinkedDenies []Path

	// Notes are human-readable remarks about rules that had no effect (a
	// write root that does not exist, a glob that matched nothing), for
	// debug output.
	Notes []string
}

// Origin is the kind of rule a Path comes from.
type Origin int

const (
	// OriginUser is a settings entry (filesystem.allowWrite[0], …).
	OriginUser Origin = iota
	// OriginMandatory is a write-deny (or read-deny) srt always adds:
	// the mandatory names of seed 003, the files host programs trust
	// (hosttrusted.go), git's redirections, srtd's token.
	OriginMandatory
	// OriginDefault is one of the reference's always-writable paths
	// (/tmp/claude, ~/.npm/_logs, ~/.claude/debug).
	OriginDefault
	// OriginProtected is a srtd session's protectedPaths entry.
	OriginProtected
	// OriginBind is a srtd session's bind or runner state directory.
	OriginBind
)

// String names the origin for debug output.
func (o Origin) String() string {
	return [...]string{"user", "mandatory", "default", "protected", "bind"}[o]
}

// Env is what Compile needs to know about the caller's process.
type Env struct {
	// Cwd is the working directory relative paths are resolved against.
	// Empty means os.Getwd.
	Cwd string
	// Home is the home directory "~" expands to. Empty means os.UserHomeDir.
	Home string
	// Untrusted are trees a sandbox may have written besides this
	// policy's write roots (absolute paths): srtd's binds, which another
	// session, or this one in another mode, may have had writable. A
	// symbolic link inside one is never followed for a rule, as inside a
	// write root (trust.go).
	Untrusted []string
	// DirIndex is the file of the deny walks' directory index
	// (policy/dirindex; dirindex.DefaultPath for srt's own); empty means
	// no index: every deny glob's walk reads every directory. It is not
	// used when it lies in a write root or an Untrusted tree. Its
	// directory is read- and write-denied like dirindex.DefaultDir
	// (mandatory.go).
	DirIndex string
}

// RuleSettingsFile is the Rule of the mandatory denies of the settings
// file the policy was compiled from (settings.Settings.Source): its
// write-deny (hosttrusted.go), and its read-deny when it holds credentials
// (network.parentProxy userinfo), which the sandbox must not read,
// whatever filesystem.allowRead says. A file without them is left
// readable: it holds nothing the sandbox may not know, and a read-deny
// inside the working directory is one the microvm backend cannot enforce
// yet (it refuses to run).
const RuleSettingsFile = "mandatory: the settings file"

// settingsFileDeny is the read-deny of settings file path: of the file
// srt read, so of a symlink's target (srt has just read through it; the
// link itself is write-protected like the file), since a rule spelled
// through a link in a write root is refused.
func settingsFileDeny(path string) Path {
	if t, err := filepath.EvalSymlinks(path); err == nil {
		path = t
	}
	return makePath(path, OriginMandatory, RuleSettingsFile)
}

// ErrUnenforceable is wrapped by errors for rules this host cannot enforce.
// Callers must refuse to run, never run with a weaker policy.
var ErrUnenforceable = errors.New("rule cannot be enforced")

// Compile turns validated settings into a Policy. An error about one
// settings key is a *settings.Error placed at that key's value in
// s.Source (settings.Settings.ErrorAt; see KeyError); one about srt's
// environment is an *EnvError; any other names s.Source first. The mandatory
// write-denies are always added unless filesystem.disabled; settings cannot
// remove them. Paths are resolved against env; globs in the deny lists are
// expanded now, so a file matching a glob that is created later is not
// covered (on Linux; a later backend enforces names at creation time).
func Compile(s *settings.Settings, env Env) (*Policy, error) {
	if s == nil {
		s = settings.Default()
	}
	p, err := compile(s, env)
	if err == nil {
		return p, nil
	}
	// Name the file, as settings errors do, and the key's line and
	// column when the error is about one key; an error about srt's own
	// environment is not the file's.
	var ee *EnvError
	if errors.As(err, &ee) {
		return nil, err
	}
	if ke, ok := err.(*KeyError); ok {
		return nil, s.ErrorAt(ke.Key, ke.Err)
	}
	if s.Source != "" {
		return nil, fmt.Errorf("%s: %w", s.Source, err)
	}
	return nil, err
}

func compile(s *settings.Settings, env Env) (*Policy, error) {
	var err error
	if env.Cwd == "" {
		if env.Cwd, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		}
	}
	if env.Home == "" {
		if env.Home, err = os.UserHomeDir(); err != nil {
			return nil, fmt.Errorf("home directory: %w", err)
		}
	}
	cwd, err := filepath.EvalSymlinks(env.Cwd)
	if err != nil {
		return nil, fmt.Errorf("working directory %s: %w", env.Cwd, err)
	}
	p := &Policy{Cwd: cwd, Home: env.Home, FilesystemDisabled: s.Filesystem.Disabled, Process: ProcessOf(s)}
	if p.Network, err = networkOf(s, env.Home); err != nil {
		return nil, err
	}
	cr, err := credentialsOf(s, p.Network, env.Home)
	if err != nil {
		return nil, err
	}
	p.CredentialFiles = cr.paths()
	p.NamesAtCreation, p.NamesAtCreationSet = s.Filesystem.NamesAtCreation()
	if p.FilesystemDisabled {
		if t := p.Network.TLS; t != nil && t.CAKeyPath != "" {
			return nil, &KeyError{"network.tlsTerminate.caKeyPath", fmt.Errorf("with filesystem.disabled the sandbox could read the CA's private key; use an ephemeral CA (no caCertPath/caKeyPath) or a filesystem policy: %w", ErrUnenforceable)}
		}
		if err := p.mitmSocketRules(); err != nil {
			return nil, err
		}
		if err := cr.filesystemDisabled(); err != nil {
			return nil, err
		}
		p.Network.Credentials = cr.set()
		if err := p.Network.maskedTunnels(s.Network); err != nil {
			return nil, err
		}
		return p, nil
	}
	r := resolver{cwd: env.Cwd, home: env.Home, untrusted: env.Untrusted, p: p}
	fs := &s.Filesystem
	// Write roots first: every other rule is checked against them, and a
	// write-deny glob walks only its intersection with them. (An invalid
	// allowWrite glob protects nothing, so it is not an error: it matches
	// nothing, as before the write roots came first.)
	writes := r.entries("filesystem.allowWrite", fs.AllowWrite, walkNoFollow)
	r.err = nil
	guard, err := r.guardWrites(writes)
	if err != nil {
		return nil, err
	}
	p.guard = guard
	idxDenies, idxPath := indexDenies(guard, env.DirIndex)
	r.index = dirindex.Open(indexUsable(idxPath, guard.roots))
	p.DenyRead = r.entries("filesystem.denyRead", fs.DenyRead, walkDenyRead)
	p.DenyRead = append(p.DenyRead, idxDenies...)
	for _, d := range hostSecrets(env.Home) {
		p.DenyRead = append(p.DenyRead, makePath(d, OriginMandatory, "mandatory: srtd's token"))
	}
	if s.Source != "" && s.Network.ParentProxy.HoldsCredentials() {
		p.DenyRead = append(p.DenyRead, settingsFileDeny(s.Source))
	}
	// The TLS CA's private key (network.tlsTerminate.caKeyPath): whoever
	// reads it can mint certificates the sandbox's clients trust. Through
	// the link guard below like every rule, so that a run cannot move the
	// deny off the key by re-pointing a link on its path.
	if t := p.Network.TLS; t != nil && t.CAKeyPath != "" {
		p.DenyRead = append(p.DenyRead, makePath(t.CAKeyPath, OriginMandatory, "mandatory: network.tlsTerminate.caKeyPath"))
	}
	if sock := p.Network.MITMSocket; sock != "" {
		p.DenyRead = append(p.DenyRead, makePath(sock, OriginMandatory, ruleMITMSocket))
	}
	p.DenyRead = append(p.DenyRead, cr.readDenies()...)
	p.AllowRead = dropMandatoryCarveOuts(r.entries("filesystem.allowRead", fs.AllowRead, walkNoFollow), p.DenyRead)
	p.DenyWrite = r.entries("filesystem.denyWrite", fs.DenyWrite, walkDenyWrite)
	p.DenyWrite = append(p.DenyWrite, idxDenies...)
	if t := p.Network.TLS; t != nil {
		for _, f := range t.TrustFiles {
			p.DenyWrite = append(p.DenyWrite, makePath(f, OriginMandatory, "mandatory: network.tlsTerminate's CA files"))
		}
	}
	p.DenyWrite = append(p.DenyWrite, cr.writeDenies()...)
	for _, f := range hostRootPaths() {
		p.DenyWrite = append(p.DenyWrite, makePath(f, OriginMandatory, "mandatory: the host's root certificates (SSL_CERT_FILE, SSL_CERT_DIR)"))
	}
	if r.err != nil {
		return nil, r.err
	}
	for _, l := range []struct {
		list *[]Path
		kind listKind
	}{{&p.DenyRead, denyReadList}, {&p.AllowRead, allowReadList}, {&p.DenyWrite, denyWriteList}} {
		if *l.list, err = r.guardRules(guard, *l.list, l.kind); err != nil {
			return nil, err
		}
	}
	if err := cr.maskFiles(p); err != nil {
		return nil, err
	}
	// A denyRead path that does not exist yet cannot be created either
	// where it lies in a write root: otherwise a run could leave a link
	// or a file of its choosing there, and the host would later write the
	// secret through it or into it, readable by the next run.
	for _, d := range p.DenyRead {
		if d.Kind == Missing {
			p.DenyWrite = append(p.DenyWrite, d)
		}
	}
	// A default write path is writable only where it is readable.
	p.AllowWrite = slices.DeleteFunc(p.AllowWrite, func(w Path) bool {
		return w.Origin == OriginDefault && !p.Readable(w.Resolved)
	})
	p.DenyReadGlobs = r.globs("filesystem.denyRead", fs.DenyRead)
	p.AllowReadGlobs = r.globs("filesystem.allowRead", fs.AllowRead)
	p.AllowWriteGlobs = r.globs("filesystem.allowWrite", fs.AllowWrite)
	p.DenyWriteGlobs = r.globs("filesystem.denyWrite", fs.DenyWrite)
	p.MandatoryPatterns = MandatoryGlobs(fs.AllowGitConfig)
	p.AllowGitConfig = fs.AllowGitConfig
	// The mandatory denies are searched below the working directory and
	// below every write root: a write root elsewhere (~, another checkout)
	// holds shell rc files and git hooks just the same.
	// At the top of the working directory and of the user's own write
	// roots, every name is protected even when missing, so that it cannot
	// be created either; elsewhere only the names that exist.
	// Only writable places are walked: elsewhere everything is read-only
	// already, and walking a large read-only tree would only cost time.
	var roots []walkRoot
	if longestPrefix(p.AllowWrite, cwd) >= 0 {
		roots = append(roots, walkRoot{cwd, true})
	}
	for _, w := range p.AllowWrite {
		if w.Kind == Dir {
			roots = append(roots, walkRoot{w.Resolved, w.Origin == OriginUser})
		}
	}
	var global gitRefs
	if len(p.AllowWrite) > 0 {
		global = readGitConfig(env.Home, globalGitConfigs(env.Home)...)
	}
	md, err := mandatoryDenies(roots, s.SearchDepth(), fs.AllowGitConfig, env.Home, global, r.index)
	if err != nil {
		return nil, err
	}
	p.DenyWrite = append(p.DenyWrite, md...)
	if err := r.index.Save(); err != nil {
		p.Notes = append(p.Notes, indexNote(err))
	} else if hits, kept := r.index.Stats(); kept > 0 || hits > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("directory index: %d directories reused, %d kept", hits, kept))
	}
	// Files host programs trust at fixed places (the home directory, PATH,
	// the settings file): those a write root reaches. PATH directories
	// inside the working directory (an activated virtualenv's bin,
	// node_modules/.bin) are the project's, like its Makefile.
	// Resolved always, not only when a write root reaches the home
	// directory: ~/.bashrc may be a link into a writable dotfiles
	// repository (adversarial review), and ~/.local/bin may hold links
	// into a write root (scanProtectedDirs).
	// PATH directories the user owns (below home) or in a write root as
	// spelled; the system's are root's, and resolving each costs.
	near := func(d string) bool { return Within(d, env.Home) || longestPrefix(p.AllowWrite, d) >= 0 }
	var trusted, outside []Path
	if len(p.AllowWrite) > 0 { // nothing to protect where nothing is writable
		trusted = runTrustedDenies(environPath(), s.Source, near)
		hd, hp := homeTrustedDenies(env.Home)
		trusted = append(append(trusted, hd...), homeMandatory(env.Home)...)
		if p.reachesHome() {
			p.MandatoryPatterns = append(p.MandatoryPatterns, hp...)
		}
		// The microvm backend's cache, wherever it is (not only below
		// the home directory: root's, SRT_MICROVM_CACHE's).
		cache, cp := microvmCacheDeny()
		trusted = append(trusted, cache)
		if longestPrefix(p.AllowWrite, cache.Resolved) >= 0 {
			p.MandatoryPatterns = append(p.MandatoryPatterns, cp...)
		}
	}
	for _, d := range trusted {
		if d.Rule == rulePATHDir && Within(d.Resolved, cwd) {
			continue
		}
		if longestPrefix(p.AllowWrite, d.Resolved) >= 0 {
			p.DenyWrite = append(p.DenyWrite, d)
		} else if d.Kind != Missing && Within(d.Literal, env.Home) {
			// The user's own (system directories on PATH are root's).
			outside = append(outside, d)
		}
	}
	// A relative core.hooksPath of the global configuration is the hooks
	// directory of every repository, those made during the run too.
	for _, h := range global.hooks {
		if !filepath.IsAbs(h) && doublestar.ValidatePattern(h) {
			h = EscapeGlob(filepath.Clean(h))
			p.MandatoryPatterns = append(p.MandatoryPatterns, "**/"+h, "**/"+h+"/**")
		}
	}

	// A write root that does not exist cannot be bound; say so and drop it.
	p.AllowWrite = slices.DeleteFunc(p.AllowWrite, func(w Path) bool {
		if w.Kind == Missing {
			p.Notes = append(p.Notes, fmt.Sprintf("%s: %s does not exist; not writable", w.Rule, w.Literal))
			return true
		}
		return false
	})
	// A deny that does not exist matters only where it could be created, that
	// is inside a write root; elsewhere the path is read-only already.
	p.DenyWrite = dedup(p.DenyWrite)
	p.DenyWrite = slices.DeleteFunc(p.DenyWrite, func(d Path) bool {
		return d.Kind == Missing && !p.creatable(d.Resolved)
	})
	for _, l := range []*[]Path{&p.DenyRead, &p.AllowRead, &p.AllowWrite} {
		*l = dedup(*l)
	}
	if err := p.scanProtectedDirs(outside); err != nil {
		return nil, err
	}
	if err := p.checkedDenies(r.unlisted); err != nil {
		return nil, err
	}
	if err := p.mitmSocketRules(); err != nil {
		return nil, err
	}
	// A protected name that is a symbolic link inside a write root (a
	// dotfiles manager's ~/.bashrc, a shared .git/hooks): the mount at
	// its target keeps the target read-only, but the link itself could be
	// replaced. Recorded for the backend, which refuses to run unless it
	// refuses that replacement (LinkedDeniesError).
	for _, d := range p.DenyWrite {
		if d.symlink && p.creatable(d.parentResolved()) {
			p.LinkedDenies = append(p.LinkedDenies, d)
		}
	}
	p.Network.Credentials = cr.set()
	if err := p.Network.maskedTunnels(s.Network); err != nil {
		return nil, err
	}
	return p, nil
}

// checkedDenies refuses (ErrUnenforceable) a policy with a deny srt could
// not look at inside a write root (Path.uncheckable, or a directory a
// deny glob could not read, unlisted): a run may have hidden it there by
// a chmod, to chmod it back in the next. A read-denied file with other
// hard links inside a write root is refused too: a name elsewhere reaches
// the same content (an earlier run's `ln .env notes.txt`, made before
// .env was denied), and no mount covers it. (Write-denied files' hard
// links are judged with the protected directories', scanProtectedDirs: a
// link between two protected names is harmless.)
func (p *Policy) checkedDenies(unlisted []Path) error {
	for _, l := range [][]Path{p.DenyRead, p.DenyWrite, unlisted} {
		for _, d := range l {
			if d.uncheckable != nil && longestPrefix(p.AllowWrite, d.Resolved) >= 0 {
				return fmt.Errorf("%s: %w", d.Rule, d.uncheckable)
			}
		}
	}
	for _, d := range p.DenyRead {
		if d.Kind == File && d.nlink > 1 && longestPrefix(p.AllowWrite, d.Resolved) >= 0 {
			return fmt.Errorf("%s: %s has %d hard links, and the other names reach the same file outside the rule; remove them (find -samefile) or copy the file: %w", d.Rule, d.Resolved, d.nlink, ErrUnenforceable)
		}
	}
	return nil
}

// LinkedDeniesError returns, when p has LinkedDenies, the error a backend
// that cannot refuse the replacement of a protected link returns instead
// of running (ErrUnenforceable): a mount cannot be placed on a symbolic
// link itself, only on its target. Linux with the creation-time rules
// refuses every way of making the name again (rename, symlink, creation)
// and Seatbelt denies writes to the link's own path, so they run; the
// mounts alone, the weaker Landlock sandbox and microvm shares refuse.
func (p *Policy) LinkedDeniesError() error {
	if len(p.LinkedDenies) == 0 {
		return nil
	}
	d := p.LinkedDenies[0]
	return fmt.Errorf("%s: %s is a symbolic link inside a writable directory, and without the creation-time name rules (filesystem.enforceNamesAtCreation) the link could be replaced; turn them on, replace the link with the file, or add its directory to filesystem.denyWrite: %w", d.Rule, d.Literal, ErrUnenforceable)
}

// Readable reports whether path (absolute, resolved) is readable under p:
// the most specific DenyRead or AllowRead entry at or above it decides, and
// an exact tie goes to AllowRead (seed 003: "allowRead a priorité sur
// denyRead", a more specific deny still wins).
func (p *Policy) Readable(path string) bool {
	if p.FilesystemDisabled {
		return true
	}
	if p.View != nil && !p.View.Visible(path) {
		return false
	}
	deny, allow := longestPrefix(p.DenyRead, path), longestPrefix(p.AllowRead, path)
	return deny < 0 || allow >= deny
}

// Writable reports whether path (absolute, resolved) is writable under p:
// inside a write root, outside every DenyWrite, and readable.
func (p *Policy) Writable(path string) bool {
	if p.FilesystemDisabled {
		return true
	}
	return longestPrefix(p.AllowWrite, path) >= 0 && longestPrefix(p.DenyWrite, path) < 0 && p.Readable(path)
}

// creatable reports whether a new name could be created at path: it lies in
// a write root, its directory is readable, and no DenyWrite entry strictly
// above it already covers it.
func (p *Policy) creatable(path string) bool {
	if longestPrefix(p.AllowWrite, path) < 0 || !p.Readable(filepath.Dir(path)) {
		return false
	}
	for _, d := range p.DenyWrite {
		if d.Resolved != path && Within(path, d.Resolved) {
			return false
		}
	}
	return true
}

// reachesHome reports whether a write root is the home directory, lies
// below it or above it.
func (p *Policy) reachesHome() bool {
	home := Resolve(p.Home)
	for _, w := range p.AllowWrite {
		if Within(w.Resolved, home) || Within(home, w.Resolved) {
			return true
		}
	}
	return false
}

// longestPrefix returns the length of the longest entry of list that is path
// or an ancestor of it, or -1.
func longestPrefix(list []Path, path string) int {
	best := -1
	for _, e := range list {
		if Within(path, e.Resolved) && len(e.Resolved) > best {
			best = len(e.Resolved)
		}
	}
	return best
}

// Within reports whether path is root or lies below it. Both must be clean
// absolute paths.
func Within(path, root string) bool {
	if root == "/" {
		return true
	}
	return path == root || strings.HasPrefix(path, root) && path[len(root)] == '/'
}

func dedup(l []Path) []Path {
	seen := make(map[string]bool, len(l))
	return slices.DeleteFunc(l, func(p Path) bool {
		if seen[p.Resolved] {
			return true
		}
		seen[p.Resolved] = true
		return false
	})
}

// dropMandatoryCarveOuts returns allow without the allowRead entries that
// would re-open a mandatory read-deny (srtd's token, the TLS CA's key, a
// settings file holding proxy credentials, the MITM proxy's socket): one
// at or inside such a deny, by literal or resolved path, a glob's match
// included. A mandatory deny is not the user's to lift (the threat
// model: the secret is what the sandbox must never read), and allowRead
// otherwise wins a tie with denyRead (Readable).
func dropMandatoryCarveOuts(allow, deny []Path) []Path {
	inside := func(p, root string) bool {
		return p != "" && root != "" && (p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/"))
	}
	return slices.DeleteFunc(allow, func(a Path) bool {
		for _, d := range deny {
			if d.Origin != OriginMandatory {
				continue
			}
			for _, ap := range []string{a.Literal, a.Resolved} {
				if inside(ap, d.Literal) || inside(ap, d.Resolved) {
					return true
				}
			}
		}
		return false
	})
}
