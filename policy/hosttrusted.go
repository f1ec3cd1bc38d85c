package policy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/srt-go/srt/internal/vmcache"
)

// TrustedClass is one class of files that a program on the host later
// runs or obeys, so that a write to one is a delayed escape (seed 003,
// "Chemins de refus obligatoires", widened by issue 14). SECURITY.md
// shows the same table; TestHostTrustedFiles (e2e) writes one path of
// every class from inside the sandbox.
type TrustedClass struct {
	// Class names the kind of program that trusts the files.
	Class string
	// Home are paths relative to the home directory, write-denied
	// wherever the home directory or a directory above them is writable:
	// a name ending in "/" is a directory with everything in it; a name
	// with glob characters is matched now and, with the creation-time
	// rules, when it comes into being.
	Home []string
	// Why says what the host program does with them, and where that is
	// documented.
	Why string
}

// hostTrusted is the table. The names protected at any depth
// (mandatoryFiles, mandatoryDirs, the git paths) are the other half.
var hostTrusted = []TrustedClass{
	{Class: "shell", Home: []string{".bash_aliases", ".bash_completion", ".kshrc", ".mkshrc", ".tcshrc", ".cshrc",
		".login", ".logout", ".xprofile", ".xsessionrc", ".xinitrc", ".xsession", ".pam_environment",
		".config/environment.d/", ".tmux.conf", ".config/tmux/", ".tmux/", ".screenrc", ".bashrc.d/", ".config/fish/", ".cargo/env", ".nvm/", ".sdkman/",
		".oh-my-zsh/", ".zcompdump", ".p10k.zsh", ".local/share/bash-completion/", ".config/user-tmpfiles.d/"},
		Why: "sourced by shells, X sessions and terminal multiplexers at start (Debian's ~/.bashrc sources ~/.bash_aliases; bash(1), tmux(1) run-shell, environment.d(5))"},
	{Class: "PATH directories", Home: []string{"bin/", ".local/bin/", ".cargo/bin/", "go/bin/"},
		Why: "Debian's ~/.profile puts ~/bin and ~/.local/bin first on PATH, rustup and Go put theirs there: a program planted there (even a fake bwrap) runs instead of the real one; every PATH directory of srt's environment inside a write root is protected too"},
	{Class: "language autoload", Home: []string{".local/lib/python*/site-packages/", ".node_modules/", ".node_libraries/",
		".npmrc", ".yarnrc", ".yarnrc.yml", ".config/pip/", ".pip/", ".pydistutils.cfg", ".cargo/config", ".cargo/config.toml",
		".config/go/", ".gemrc", ".irbrc", ".pryrc", ".Rprofile", ".Renviron", ".ipython/", ".jupyter/", ".npm/_npx/",
		".config/irb/", ".config/pry/", ".config/gem/", ".local/share/jupyter/", ".gradle/init.d/", ".gradle/gradle.properties", ".sbt/",
		".terraformrc", ".config/mise/", ".local/state/mise/", ".mavenrc", ".gradle/init.gradle", ".antrc", ".ghci", ".erlang",
		".julia/config/", ".rustup/", ".pyenv/", ".ansible/", ".terraform.d/", ".config/helm/", ".local/share/helm/"},
		Why: "*.pth and usercustomize run at every Python start (site(7)); node require() searches ~/.node_modules; npm's node-options and script-shell, yarn's yarnPath, cargo's rustc-wrapper, GOFLAGS=-toolexec in go env, IPython startup files run commands; the host's next npx runs the packages cached in ~/.npm/_npx; mvn sources ~/.mavenrc; rustup's and pyenv's proxies run the toolchains they hold"},
	{Class: "VCS", Home: []string{".config/git/", ".hgrc", ".config/hg/", ".git-templates/", ".config/husky/", ".huskyrc"},
		Why: "Mercurial runs [hooks] commands from its configuration (hgrc(5)); git's are among the names protected at any depth"},
	{Class: "editors and IDEs", Home: []string{".vimrc", ".gvimrc", ".exrc", ".vim/", ".config/nvim/", ".emacs", ".emacs.d/",
		".config/emacs/", ".emacs.el", ".nanorc", ".config/vim/", ".local/share/nvim/", ".config/Code/User/", ".cursor/",
		".vscode-server/", ".cursor-server/", ".config/Cursor/User/", ".config/VSCodium/User/", ".config/zed/", ".config/JetBrains/",
		".selected_editor"},
		Why: "editors run their start-up files and plugins; VS Code's user settings and tasks, Cursor's MCP servers; sensible-editor (crontab -e) sources ~/.selected_editor"},
	{Class: "agents", Home: []string{".claude.json", ".claude/settings.json", ".claude/hooks/", ".claude/skills/", ".claude/plugins/",
		".claude/CLAUDE.md", ".claude/statusline.sh", ".codex/", ".gemini/", ".config/opencode/", ".aider.conf.yml", ".continue/",
		".codeium/", ".config/goose/", ".copilot/"},
		Why: "coding agents start the MCP servers and run the hooks their user configuration names, on the host"},
	{Class: "tools that run configured commands", Home: []string{".aws/", ".kube/", ".docker/", ".config/gh/", ".gnupg/",
		".config/direnv/", ".direnvrc", ".local/share/direnv/", ".curlrc", ".wgetrc", ".forward", ".gdbinit", ".config/gdb/",
		".lldbinit", ".sqliterc", ".psqlrc", ".my.cnf", ".lesskey", ".config/lesskey", ".mailcap", ".muttrc", ".config/containers/"},
		Why: "AWS credential_process, kubeconfig exec plugins, Docker credential helpers and cli-plugins, gh aliases with !, gpg-agent's pinentry-program, direnv's direnvrc run commands; gdb, lldb, sqlite3 and psql run shell commands from their start-up files, less, mailcap and mutt run commands; curl and wget options redirect output; containers.conf names the runtime and hooks"},
	{Class: "desktop and user services", Home: []string{".local/share/applications/", ".local/share/systemd/", ".config/autostart/", ".config/systemd/",
		".local/share/dbus-1/", ".config/dconf/"},
		Why: "desktop entries' Exec runs on a click or at login (XDG autostart), systemd user units run at login"},
	{Class: "srt", Home: []string{".srt-settings.json", ".cache/srt-microvm/"},
		Why: "srt's own default settings: the next plain srt run obeys it (the --settings file, wherever it is, is protected the same way); the microvm backend boots the kernel and initramfs cached there, and its guest enforces the shares' protected paths"},
}

// hostSecrets are read-denied in every sandbox with a filesystem policy:
// srtd's bearer token at its default places (cmd/srtd), which lets whoever
// reads it run commands outside any sandbox (backend none). Missing ones
// cannot be created either (policy.Compile), so no run can plant a link
// there for srtd to write its next token through.
func hostSecrets(home string) []string {
	out := []string{filepath.Join(home, ".srtd")}
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		out = append(out, filepath.Join(d, "srtd"))
	}
	return out
}

// HostTrusted returns the table of host-trusted file classes (a copy).
func HostTrusted() []TrustedClass {
	out := slices.Clone(hostTrusted)
	for i := range out {
		out[i].Home = slices.Clone(out[i].Home)
	}
	return out
}

// homeTrustedDenies returns the write-denies of the host-trusted table
// for home, and the patterns that cover names created later (for
// MandatoryPatterns). Compile keeps those a write root reaches.
func homeTrustedDenies(home string) (denies []Path, patterns []string) {
	home = filepath.Clean(home)
	f := newFastPaths()
	for _, c := range hostTrusted {
		for _, entry := range c.Home {
			for _, base := range xdgBases(home, entry) {
				d, p := homeTrustedDeny(f, base, entry)
				denies, patterns = append(denies, d...), append(patterns, p...)
			}
		}
	}
	return denies, patterns
}

// fastPaths is makePath for many paths below a few directories, most of
// them missing (the host-trusted table in a home that has a few of its
// entries): a path whose first component below its base is missing is
// made without resolving it component by component (that costs a dozen
// system calls each, 5 ms a run for the table).
type fastPaths struct {
	names    map[string]map[string]bool // base -> the names in it; nil when it cannot be listed
	resolved map[string]string          // base -> its resolution
}

func newFastPaths() *fastPaths {
	return &fastPaths{names: map[string]map[string]bool{}, resolved: map[string]string{}}
}

// path is makePath(filepath.Join(base, rel), OriginMandatory, rule).
func (f *fastPaths) path(base, rel, rule string) Path {
	first, _, _ := strings.Cut(rel, "/")
	names, ok := f.names[base]
	if !ok {
		// One listing of base instead of a lstat(2) per name.
		if ents, err := os.ReadDir(base); err == nil || errors.Is(err, fs.ErrNotExist) {
			names = map[string]bool{}
			for _, e := range ents {
				names[e.Name()] = true
			}
		}
		f.names[base] = names
	}
	gone := names != nil && !names[first]
	lit := filepath.Join(base, rel)
	if !gone {
		return makePath(lit, OriginMandatory, rule)
	}
	rb, ok := f.resolved[base]
	if !ok {
		rb = resolveMissing(base)
		f.resolved[base] = rb
	}
	return Path{Literal: lit, Rule: rule, Origin: OriginMandatory, Resolved: filepath.Join(rb, rel), literalParent: filepath.Join(rb, filepath.Dir(rel))}
}

// xdgBases returns the directories entry (a table path) is looked for
// in: home, and for a path under .config/, .local/share/, .local/state/
// or .cache/ the directory $XDG_CONFIG_HOME, $XDG_DATA_HOME,
// $XDG_STATE_HOME or $XDG_CACHE_HOME names instead, when set (programs
// that follow the XDG base directories read there; an adversarial review
// wrote ~/.xdg/git/config with XDG_CONFIG_HOME=~/.xdg).
func xdgBases(home, entry string) []string {
	out := []string{home}
	for prefix, env := range map[string]string{".config/": "XDG_CONFIG_HOME", ".local/share/": "XDG_DATA_HOME", ".local/state/": "XDG_STATE_HOME", ".cache/": "XDG_CACHE_HOME"} {
		if !strings.HasPrefix(entry, prefix) {
			continue
		}
		if x := os.Getenv(env); filepath.IsAbs(x) && filepath.Clean(x) != filepath.Join(home, strings.TrimSuffix(prefix, "/")) {
			out = append(out, filepath.Clean(x)+"\x00"+prefix)
		}
	}
	return out
}

// homeTrustedDeny is homeTrustedDenies for one table entry below base
// (the home directory, or an XDG directory tagged with the prefix of the
// entries it stands for, as xdgBases returns it).
func homeTrustedDeny(f *fastPaths, base, entry string) (denies []Path, patterns []string) {
	rel := entry
	if b, prefix, ok := strings.Cut(base, "\x00"); ok {
		base, rel = b, strings.TrimPrefix(entry, prefix)
	}
	rule := "mandatory: ~/" + entry
	rel, dir := strings.CutSuffix(rel, "/")
	pat := EscapeGlob(base) + "/" + rel
	pats := []string{pat}
	// Also where the pattern's literal part leads: with ~/.local/lib a
	// link into a writable dotfiles repository (stow's folding), names
	// come into being at the link's target (fifth adversarial review).
	if lp, gp := doublestar.SplitPattern(pat); lp != "" {
		if res := EscapeGlob(resolveMissing(unescapeGlob(lp))); res != lp {
			pats = append(pats, res+"/"+gp)
		}
	}
	for _, q := range pats {
		patterns = append(patterns, q)
		if dir {
			patterns = append(patterns, q+"/**")
		}
	}
	if !isGlob(rel) {
		p := f.path(base, rel, rule)
		p.IsDir = dir
		return append(denies, p), patterns
	}
	for _, m := range expandGlob(pat) {
		denies = append(denies, makePath(m, OriginMandatory, rule))
	}
	// A missing last part under matching parents (python3.11/ without
	// site-packages/) is protected too, so that a placeholder stands for
	// it when the creation-time rules are off.
	if parent, name := filepath.Split(rel); isGlob(parent) && !isGlob(name) {
		for _, m := range expandGlob(EscapeGlob(base) + "/" + strings.TrimSuffix(parent, "/")) {
			p := makePath(filepath.Join(m, name), OriginMandatory, rule)
			p.IsDir = dir
			denies = append(denies, p)
		}
	}
	return denies, patterns
}

// homeMandatory returns the names protected at any depth, at the top of
// home: found by the mandatory walk only where home is a write root, but
// ~/.bashrc may be a link into one.
func homeMandatory(home string) []Path {
	var out []Path
	fp := newFastPaths()
	for _, f := range mandatoryFiles {
		out = append(out, fp.path(home, f, "mandatory: ~/"+f))
	}
	for _, d := range mandatoryDirs {
		p := fp.path(home, d, "mandatory: ~/"+d)
		p.IsDir = true
		out = append(out, p)
	}
	return out
}

// runTrustedDenies returns the write-denies for the directories of path
// (srt's $PATH, a colon-separated list) that near accepts, and for
// settingsFile (srt's settings file, or "").
func runTrustedDenies(path, settingsFile string, near func(string) bool) []Path {
	var denies []Path
	for _, d := range filepath.SplitList(path) {
		if filepath.IsAbs(d) && near(filepath.Clean(d)) {
			denies = append(denies, makePath(filepath.Clean(d), OriginMandatory, rulePATHDir))
		}
	}
	if settingsFile != "" {
		if abs, err := filepath.Abs(settingsFile); err == nil {
			denies = append(denies, makePath(abs, OriginMandatory, RuleSettingsFile))
		}
	}
	return denies
}

// microvmCacheDeny returns the write-deny of the microvm backend's cache
// directory, the one it boots from (internal/vmcache.Dir: SRT_MICROVM_CACHE,
// root's /var/cache/srt-microvm, $XDG_CACHE_HOME/srt-microvm), and the
// patterns that cover it when it comes into being: the kernel and the
// initramfs whose /init enforces every later VM's rules are there (an
// adversarial review rewrote ~/xc/srt-microvm's initramfs from a native
// run with XDG_CACHE_HOME=~/xc and ~ writable; the next VM booted it).
func microvmCacheDeny() (Path, []string) {
	dir, err := filepath.Abs(vmcache.Dir())
	if err != nil {
		dir = filepath.Clean(vmcache.Dir())
	}
	d := makePath(dir, OriginMandatory, RuleMicroVMCache)
	d.IsDir = true
	pats := []string{EscapeGlob(dir), EscapeGlob(dir) + "/**"}
	if d.Resolved != dir {
		pats = append(pats, EscapeGlob(d.Resolved), EscapeGlob(d.Resolved)+"/**")
	}
	return d, pats
}

// RuleMicroVMCache is the Rule of the microvm cache's write-deny.
const RuleMicroVMCache = "mandatory: the microvm backend's cache"

// rulePATHDir is the Rule of a PATH directory's write-deny.
const rulePATHDir = "mandatory: PATH directory"

// environPath is srt's $PATH, for hostTrustedDenies.
func environPath() string { return os.Getenv("PATH") }
