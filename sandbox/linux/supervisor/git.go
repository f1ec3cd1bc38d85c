package supervisor

// The git rules that need no file system: what a new git directory's
// config may say, which entries make a directory a git directory, and the
// rules' names. Pure, like names.go; git_linux.go applies them to
// directories the supervisor holds.
//
// Git directories that are not named .git. git treats any directory
// holding HEAD, objects/ and refs/ as a repository (a bare one, or one
// with core.worktree), and runs its hooks and config when a user works in
// it: the name rules cover only .git. So a directory that becomes one
// during the run is held to the rules of a new .git: its config only
// harmless keys (written through the lock and rename), its hooks only
// *.sample files, none of the redirects (commondir, …).

import (
	"bufio"
	"bytes"
	"strings"
)

// gitFileRule refuses a .git that is not a directory: a file holding
// "gitdir: DIR" makes git use DIR, whose hooks and config no rule
// protects (git init --separate-git-dir, worktrees and submodules make
// them, and fail).
const gitFileRule = "mandatory write-deny: a .git that is not a directory (a gitdir: file points git at hooks and config no rule protects)"

const commondirRule = "mandatory write-deny: a commondir file (it points git at another directory's config and hooks)"

const bareRule = "mandatory write-deny: hooks, config and redirects of a git directory (HEAD, objects/, refs/) made during the run"

// gitConfigRule refuses a .git/config whose content is not
// gitConfigHarmless.
const gitConfigRule = "a new .git/config may hold only harmless keys (core.hooksPath, core.fsmonitor, include… refused)"

// gitDirEntries make a directory a git directory (is_git_directory()).
var gitDirEntries = []string{"HEAD", "objects", "refs"}

// gitConfigKeys are the keys a .git/config written in the sandbox may
// hold: what git init, clone, commit and ordinary git config use, none of
// which makes git run a program or read another file. "*" stands for a
// subsection.
var gitConfigKeys = func() map[string]bool {
	keys := map[string]bool{}
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
		keys[k] = true
	}
	return keys
}()

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
