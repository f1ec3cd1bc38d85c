package policy

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/srt-go/srt/policy/dirindex"
)

// The mandatory write-denies (seed 003, "Chemins de refus obligatoires").
// They protect files a trusted process on the host later reads or runs:
// shell start-up files, git configuration and hooks, IDE and agent
// configuration.
var (
	// mandatoryFiles are protected wherever they are found.
	mandatoryFiles = []string{
		".bashrc", ".bash_profile", ".zshrc", ".zprofile", ".profile",
		".gitconfig", ".gitmodules", ".ripgreprc", ".mcp.json",
		// Beyond the reference's list: start-up and logout files that
		// shells run too (zsh reads .zshenv for every shell, scripts
		// included), and readline's (a macro can type a command).
		".zshenv", ".zlogin", ".zlogout", ".bash_login", ".bash_logout", ".inputrc",
		// Agents' own policy: Claude Code runs the hooks of a project's
		// .claude/settings.json and settings.local.json on the host;
		// Mercurial runs [hooks] from a repository's .hg/hgrc and
		// hgrc-not-shared; sharedpath (with "shared" in requires) points
		// it at another repository's (issue 14, adversarial review).
		".claude/settings.json", ".claude/settings.local.json",
		".hg/hgrc", ".hg/hgrc-not-shared", ".hg/sharedpath", ".hg/requires",
	}
	// mandatoryDirs are protected, with everything in them.
	mandatoryDirs = []string{".vscode", ".idea", ".claude/commands", ".claude/agents",
		// Beyond the reference's list: ssh's config (ProxyCommand,
		// LocalCommand) and authorized_keys; git's XDG configuration
		// (core.fsmonitor runs a command, like ~/.gitconfig); fish's
		// start-up; programs started at login (autostart, systemd user
		// units). Found by an adversarial review with allowWrite ["~"].
		".ssh", ".config/git", ".config/fish", ".config/autostart", ".config/systemd"}
)

// RuleDirIndex is the Rule of the read- and write-deny of srt's directory
// index (policy/dirindex): it holds names read from directories the
// sandbox may not list, and what the next run trusts.
const RuleDirIndex = "mandatory: srt's directory index"

// indexDenies returns the mandatory denies of the directory index: the
// directory of the index file in use (Env.DirIndex) and every directory
// the default one can be in (dirindex.CandidateDirs), present or not; and inUse, or "" when its
// directory is reached through a link the sandbox or another user could
// have made (the guard's judgement): such an index is not used, and a
// deny spelled through that link would refuse the run instead of
// protecting anything of srt's.
func indexDenies(g *linkGuard, inUse string) (denies []Path, index string) {
	index = inUse
	for _, d := range slices.Compact(append([]string{indexDir(inUse)}, dirindex.CandidateDirs()...)) {
		if d == "" {
			continue
		}
		if _, err := g.resolve(d); err != nil {
			if d == indexDir(inUse) {
				index = ""
			}
			continue
		}
		p := makePath(d, OriginMandatory, RuleDirIndex)
		p.IsDir = true
		denies = append(denies, p)
	}
	return denies, index
}

// MandatoryNames returns the mandatory write-deny names, files first, then
// directories, then the git paths, for documentation and other backends.
func MandatoryNames(allowGitConfig bool) []string {
	out := append(append([]string{}, mandatoryFiles...), mandatoryDirs...)
	out = append(out, ".git/hooks")
	if !allowGitConfig {
		out = append(out, ".git/config")
	}
	return out
}

// MandatoryGlobs returns the mandatory write-denies as doublestar
// patterns that match the name at any depth: "**/.bashrc" for a file,
// "**/.vscode/**" for a directory and everything in it, "**/.git/hooks/**"
// and, unless allowGitConfig, "**/.git/config". Order as MandatoryNames.
func MandatoryGlobs(allowGitConfig bool) []string {
	var out []string
	for _, f := range mandatoryFiles {
		out = append(out, "**/"+f)
	}
	for _, d := range mandatoryDirs {
		out = append(out, "**/"+d+"/**")
	}
	out = append(out, "**/.git/hooks/**")
	if !allowGitConfig {
		out = append(out, "**/.git/config")
	}
	for _, r := range gitRedirects {
		out = append(out, "**/.git/"+r, "**/.git/"+r+"/**")
	}
	return out
}

// mandatoryDenies walks each root down to depth directory levels (the root
// is level 0; depth 3 reaches root/a/b/c) and returns a DenyWrite Path for
// every protected name found. At level 0 every name is returned whether or
// not it exists, so that it cannot be created either. Directories named
// node_modules are not entered, symbolic links are not followed, and a
// directory that cannot be listed is protected whole (another user's) or
// refuses the run (the user's own: unlistable). refs are what the
// system and global git configuration name (readGitConfig).
//
// ix, when not nil, holds what earlier runs' walks took from each
// directory (mandatoryListing); a directory unchanged since is not read.
func mandatoryDenies(roots []walkRoot, depth int, allowGitConfig bool, home string, refs gitRefs, ix *dirindex.Index) ([]Path, error) {
	var out []Path
	seen := map[string]bool{}
	global := refs.hooks
	for _, d := range hooksDirs(global, "/") {
		if filepath.IsAbs(d) {
			out = append(out, hooksPathDeny(d))
		}
	}
	out = append(out, gitRefDenies(refs)...)
	for _, root := range roots {
		if seen[root.path] {
			continue
		}
		seen[root.path] = true
		w := walker{depth: depth, allowGitConfig: allowGitConfig, seen: seen, missingAtTop: root.missingAtTop, home: home, globalHooks: global,
			ix: ix, idx: ix.Walk(walkFormat + "\x00" + buildID() + "\x00mandatory\x00" + root.path)}
		w.dir(root.path, 0)
		if w.err != nil {
			return nil, w.err
		}
		out = append(out, w.out...)
	}
	return out, nil
}

// walkRoot is a directory the mandatory denies are searched below.
type walkRoot struct {
	path string
	// missingAtTop protects the names at the top even when they are missing.
	missingAtTop bool
}

type walker struct {
	missingAtTop   bool
	depth          int
	allowGitConfig bool
	seen           map[string]bool
	out            []Path
	// err is set when a write root itself cannot be listed.
	err error
	// home expands "~/" in git configuration; globalHooks are the
	// core.hooksPath values of the system and global git configuration.
	home        string
	globalHooks []string
	// ix is the run's directory index, idx this walk's (walker.list).
	ix  *dirindex.Index
	idx *dirindex.Walk
}

// gitRefDenies protects the files git configuration includes (git reads
// them as its own: core.fsmonitor there runs a command) and the template
// directories whose hooks git init and git clone copy into new
// repositories (adversarial review).
func gitRefDenies(refs gitRefs) []Path {
	var out []Path
	for _, f := range refs.includes {
		out = append(out, makePath(f, OriginMandatory, "mandatory: a file git configuration includes"))
	}
	for _, d := range refs.templates {
		p := makePath(d, OriginMandatory, "mandatory: init.templateDir")
		p.IsDir = true
		out = append(out, p)
	}
	return out
}

// hooksPathDeny protects a core.hooksPath directory d, present or not.
func hooksPathDeny(d string) Path {
	p := makePath(d, OriginMandatory, "mandatory: core.hooksPath")
	p.IsDir = true
	return p
}

func (w *walker) add(path, name string) {
	w.out = append(w.out, makePath(path, OriginMandatory, "mandatory: "+name))
}

// addIn is add for rel (one of the names, possibly nested) in directory
// dir, whose listing is names: a name whose first component is not in the
// listing is missing, and its Path is made without a look at the disk
// (dir is a resolved path: the walk starts at resolved roots and follows
// no link).
func (w *walker) addIn(dir string, names map[string]dirindex.Enter, rel string) {
	first, _, _ := strings.Cut(rel, "/")
	if _, ok := names[first]; ok {
		w.add(filepath.Join(dir, rel), rel)
		return
	}
	lit := filepath.Join(dir, rel)
	w.out = append(w.out, Path{Literal: lit, Resolved: lit, Rule: "mandatory: " + rel, Origin: OriginMandatory, literalParent: filepath.Dir(lit)})
}

func (w *walker) dir(dir string, level int) {
	ents, err := w.list(dir)
	if err != nil {
		if level > 0 {
			if u := unlistable(dir, err); u != nil {
				// The user's own: a run could chmod it back and write
				// through what is in it (a link to a writable place).
				w.err = u
				return
			}
			// Another user's: we cannot see what is in it, so nothing
			// in it may change.
			w.out = append(w.out, makePath(dir, OriginMandatory, "mandatory: unreadable directory"))
			return
		}
		// A write root srt cannot list (an earlier run's chmod 0300 .)
		// hides which protected names are in it; making it read-only
		// would take away the write root, so refuse (fail closed).
		w.err = fmt.Errorf("write root %s cannot be listed (%w), so the protected names in it (.git/hooks, .bashrc, ...) cannot be found; restore its read permission (chmod u+r): %w", dir, err, ErrUnenforceable)
		return
	}
	names := make(map[string]dirindex.Enter, len(ents))
	for _, e := range ents {
		names[e.Name] = e.Kind
	}
	for _, f := range mandatoryFiles {
		// A nested name (.hg/hgrc) is protected, present or not, wherever
		// its directory exists: creating it there is writing the config.
		top, _, _ := strings.Cut(f, "/")
		if _, ok := names[top]; ok || level == 0 && w.missingAtTop {
			w.addIn(dir, names, f)
		}
	}
	for _, d := range mandatoryDirs {
		top, _, nested := strings.Cut(d, "/")
		top0 := level == 0 && w.missingAtTop
		if _, ok := names[top]; !ok && !top0 {
			continue
		}
		if nested && !top0 {
			// Only a name that surely is not there is skipped: one srt
			// cannot look at is added, and Compile refuses it.
			if _, err := os.Lstat(filepath.Join(dir, d)); err != nil && uncheckable(filepath.Join(dir, d), err) == nil {
				continue
			}
		}
		w.addIn(dir, names, d)
	}
	if isGitDirEntries(names) {
		// A git directory not named .git (bare, moved, made by hand):
		// git uses it as a repository when run in it (is_git_directory:
		// HEAD, objects and refs, whatever their type), so what is on
		// disk decides, not the name.
		w.protectGitDir(dir, dir)
	}
	if g, ok := names[".git"]; ok {
		w.gitDir(dir, g)
	} else if level == 0 && w.missingAtTop {
		// No repository here yet. Creating one is as dangerous as changing
		// one: git run here later (or in a parent repository, which this
		// one would shadow) would run its hooks and read its config.
		w.addIn(dir, names, ".git/hooks")
		if !w.allowGitConfig {
			w.addIn(dir, names, ".git/config")
		}
	}
	if level >= w.depth {
		return
	}
	for _, e := range ents {
		if e.Kind != dirindex.EnterDir || e.Name == "node_modules" || e.Name == ".git" {
			continue
		}
		sub := filepath.Join(dir, e.Name)
		if w.seen[sub] {
			continue
		}
		w.dir(sub, level+1)
	}
}

// mandatoryNames are the names the mandatory walk looks for in a
// directory's listing (walker.dir): the first component of every
// protected name, .git, and what makes a git directory.
var mandatoryNames = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{".git": true, "HEAD": true, "objects": true, "refs": true}
	for _, n := range append(slices.Clone(mandatoryFiles), mandatoryDirs...) {
		top, _, _ := strings.Cut(n, "/")
		m[top] = true
	}
	return m
})

// list returns what the mandatory walk needs of directory dir's listing,
// in name order: the entries named in mandatoryNames (Match) and the
// directories (Kind EnterDir; a symbolic link is not followed, and is
// EnterNone). From the index when dir is unchanged since it was stored.
func (w *walker) list(dir string) ([]dirindex.Entry, error) {
	if st, err := w.ix.StatDir(dir); err == nil {
		if res, ok := w.idx.Lookup(dir, st); ok {
			return res.Entries, nil
		}
	}
	d, st, err := w.ix.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	ents, err := d.ReadDir()
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ents, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	names := mandatoryNames()
	var res dirindex.Result
	for _, e := range ents {
		ent := dirindex.Entry{Name: e.Name(), Match: names[e.Name()]}
		if e.IsDir() {
			ent.Kind = dirindex.EnterDir
		}
		if ent.Match || ent.Kind != dirindex.EnterNone {
			res.Entries = append(res.Entries, ent)
		}
	}
	w.idx.Store(dir, st, res)
	return res.Entries, nil
}

// gitDir protects a repository's hooks and configuration. A .git that is a
// file (a worktree or submodule) is protected itself, since rewriting it
// would point git at another directory, and so are the hooks and
// configuration of the directory it names.
func (w *walker) gitDir(dir string, g dirindex.Enter) {
	gitPath := filepath.Join(dir, ".git")
	gitdirs := []string{gitPath}
	if g != dirindex.EnterDir {
		w.add(gitPath, ".git")
		gitdirs = gitdirs[:0]
		if target := readGitFile(gitPath); target != "" {
			gitdirs = append(gitdirs, target)
			if common := readCommonDir(target); common != "" {
				gitdirs = append(gitdirs, common)
			}
		}
	}
	for _, gd := range gitdirs {
		w.protectGitDir(gd, dir)
	}
}

// protectGitDir protects the hooks, configuration and redirects of git
// directory gd, whose working tree is top (gd itself when bare), and the
// directories its core.hooksPath names.
func (w *walker) protectGitDir(gd, top string) {
	refs := readGitConfig(w.home, filepath.Join(gd, "config"), filepath.Join(gd, "config.worktree"))
	for _, d := range hooksDirs(append(refs.hooks, w.globalHooks...), top) {
		w.out = append(w.out, hooksPathDeny(d))
	}
	w.out = append(w.out, gitRefDenies(refs)...)
	w.add(filepath.Join(gd, "hooks"), ".git/hooks")
	if !w.allowGitConfig {
		w.add(filepath.Join(gd, "config"), ".git/config")
	}
	// Files and directories that move where git reads its config and
	// hooks from (found by an adversarial review: a written commondir
	// pointing at a crafted directory made host git run the command's
	// core.fsmonitor). A missing commondir gets a placeholder holding
	// "." (git reads it as "this directory"; an empty one breaks git);
	// modules/ and worktrees/ hold whole git directories of their own,
	// so they are read-only entirely: adding a submodule or a worktree
	// inside the sandbox fails.
	for _, name := range gitRedirects {
		w.add(filepath.Join(gd, name), ".git/"+name)
	}
}

// isGitDirEntries reports whether a directory listing holds what makes
// git take the directory for a git directory.
func isGitDirEntries(names map[string]dirindex.Enter) bool {
	for _, e := range []string{"HEAD", "objects", "refs"} {
		if _, ok := names[e]; !ok {
			return false
		}
	}
	return true
}

// gitRedirects are the entries of a git directory that redirect where git
// reads configuration and hooks from (gitrepository-layout(5)).
var gitRedirects = []string{"commondir", "config.worktree", "modules", "worktrees"}

// GitRedirects returns the entries of a git directory that redirect where
// git reads its configuration and hooks from (gitRedirects).
func GitRedirects() []string { return slices.Clone(gitRedirects) }

// readGitFile returns the directory named by a "gitdir: PATH" file, or "".
func readGitFile(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return ""
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "gitdir:")
	if !ok {
		return ""
	}
	target = strings.TrimSpace(target)
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(path), target)
	}
	return filepath.Clean(target)
}

// readCommonDir returns the repository a worktree's gitdir shares hooks and
// configuration with (its "commondir" file), or "".
func readCommonDir(gitdir string) string {
	b, err := os.ReadFile(filepath.Join(gitdir, "commondir"))
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(b))
	if c == "" {
		return ""
	}
	if !filepath.IsAbs(c) {
		c = filepath.Join(gitdir, c)
	}
	return filepath.Clean(c)
}
