package policy

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
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
	}
	// mandatoryDirs are protected, with everything in them.
	mandatoryDirs = []string{".vscode", ".idea", ".claude/commands", ".claude/agents"}
)

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
	return out
}

// mandatoryDenies walks each root down to depth directory levels (the root
// is level 0; depth 3 reaches root/a/b/c) and returns a DenyWrite Path for
// every protected name found. At level 0 every name is returned whether or
// not it exists, so that it cannot be created either. Directories named
// node_modules are not entered, symbolic links are not followed, and a
// directory that cannot be listed is protected whole.
func mandatoryDenies(roots []walkRoot, depth int, allowGitConfig bool) ([]Path, error) {
	var out []Path
	seen := map[string]bool{}
	for _, root := range roots {
		if seen[root.path] {
			continue
		}
		seen[root.path] = true
		w := walker{depth: depth, allowGitConfig: allowGitConfig, seen: seen, missingAtTop: root.missingAtTop}
		w.dir(root.path, 0)
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
}

func (w *walker) add(path, name string) {
	w.out = append(w.out, makePath(path, "mandatory: "+name))
}

func (w *walker) dir(dir string, level int) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if level > 0 {
			// We cannot see what is in it, so nothing in it may change.
			w.out = append(w.out, makePath(dir, "mandatory: unreadable directory"))
		}
		return
	}
	names := make(map[string]os.DirEntry, len(ents))
	for _, e := range ents {
		names[e.Name()] = e
	}
	for _, f := range mandatoryFiles {
		if _, ok := names[f]; ok || level == 0 && w.missingAtTop {
			w.add(filepath.Join(dir, f), f)
		}
	}
	for _, d := range mandatoryDirs {
		top, _, nested := strings.Cut(d, "/")
		top0 := level == 0 && w.missingAtTop
		if _, ok := names[top]; !ok && !top0 {
			continue
		}
		if nested && !top0 {
			if _, err := os.Lstat(filepath.Join(dir, d)); err != nil {
				continue
			}
		}
		w.add(filepath.Join(dir, d), d)
	}
	if g, ok := names[".git"]; ok {
		w.gitDir(dir, g)
	} else if level == 0 && w.missingAtTop {
		// No repository here yet. Creating one is as dangerous as changing
		// one: git run here later (or in a parent repository, which this
		// one would shadow) would run its hooks and read its config.
		w.add(filepath.Join(dir, ".git", "hooks"), ".git/hooks")
		if !w.allowGitConfig {
			w.add(filepath.Join(dir, ".git", "config"), ".git/config")
		}
	}
	if level >= w.depth {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || e.Name() == "node_modules" || e.Name() == ".git" {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		if w.seen[sub] {
			continue
		}
		w.dir(sub, level+1)
	}
}

// gitDir protects a repository's hooks and configuration. A .git that is a
// file (a worktree or submodule) is protected itself, since rewriting it
// would point git at another directory, and so are the hooks and
// configuration of the directory it names.
func (w *walker) gitDir(dir string, g os.DirEntry) {
	gitPath := filepath.Join(dir, ".git")
	gitdirs := []string{gitPath}
	if !g.IsDir() {
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
		w.add(filepath.Join(gd, "hooks"), ".git/hooks")
		if !w.allowGitConfig {
			w.add(filepath.Join(gd, "config"), ".git/config")
		}
	}
}

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
