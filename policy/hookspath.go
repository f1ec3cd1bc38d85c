package policy

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// core.hooksPath moves a repository's hooks out of .git/hooks: `npx husky
// init` sets it to .husky/_, whose scripts run the ones in .husky; a global
// one applies to every repository. The host's next git commit runs what
// is there, so the directory is protected like .git/hooks (issue 14,
// item 4). git-config(1): "core.hooksPath ... A relative path is taken as
// relative to the directory where the hooks are run", the top of the
// working tree (the git directory for a bare repository).

// gitRefs are what git configuration files make git run or read.
type gitRefs struct {
	// hooks are the core.hooksPath values, as written ("~/" expanded).
	hooks []string
	// includes are the files include.path and includeIf.*.path name
	// (absolute): git reads them as part of the configuration.
	includes []string
	// templates are the init.templateDir values (absolute): git init and
	// git clone copy their hooks into every new repository.
	templates []string
}

// hooksPaths returns the core.hooksPath values of readGitConfig.
func hooksPaths(home string, configs ...string) []string {
	return readGitConfig(home, configs...).hooks
}

// readGitConfig reads configs, in the order given, and every file they
// include, whatever the condition of an includeIf (a superset is what
// protection needs). home expands "~/". At most maxIncludes files are
// read.
func readGitConfig(home string, configs ...string) gitRefs {
	var out gitRefs
	seen := map[string]bool{}
	var read func(file string, depth int)
	read = func(file string, depth int) {
		if depth > 10 || seen[file] || len(seen) >= maxIncludes {
			return
		}
		seen[file] = true
		f, err := os.Open(file)
		if err != nil {
			return
		}
		defer f.Close()
		section := ""
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			// A backslash at the end of a line continues the value on
			// the next one (git-config(1), "Syntax").
			for strings.HasSuffix(line, "\\") && sc.Scan() {
				line = strings.TrimSuffix(line, "\\") + strings.TrimSpace(sc.Text())
			}
			if strings.HasPrefix(line, "[") {
				end := strings.IndexByte(line, ']')
				if end < 0 {
					continue
				}
				head := strings.TrimSpace(line[1:end])
				name, _, _ := strings.Cut(head, " ")
				section = strings.ToLower(strings.TrimSpace(name))
				line = strings.TrimSpace(line[end+1:]) // "[core] hooksPath = x" is valid
				if line == "" {
					continue
				}
			}
			key, val, ok := strings.Cut(line, "=")
			if !ok {
				continue
			}
			key = strings.ToLower(strings.TrimSpace(key))
			val = configValue(val)
			switch {
			case section == "core" && key == "hookspath" && val != "":
				out.hooks = append(out.hooks, expandHome(val, home))
			case section == "init" && key == "templatedir" && val != "":
				if t := expandHome(val, home); filepath.IsAbs(t) {
					out.templates = append(out.templates, filepath.Clean(t))
				}
			case (section == "include" || section == "includeif") && key == "path" && val != "":
				p := expandHome(val, home)
				if !filepath.IsAbs(p) {
					p = filepath.Join(filepath.Dir(file), p)
				}
				out.includes = append(out.includes, filepath.Clean(p))
				read(filepath.Clean(p), depth+1)
			}
		}
	}
	for _, c := range configs {
		read(c, 0)
	}
	return out
}

// maxIncludes bounds the files hooksPaths reads.
const maxIncludes = 64

// configValue unquotes a git config value and drops a trailing comment.
func configValue(v string) string {
	v = strings.TrimSpace(v)
	var b strings.Builder
	quoted := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"':
			quoted = !quoted
		case c == '\\' && i+1 < len(v):
			i++
			b.WriteByte(v[i])
		case !quoted && (c == '#' || c == ';'):
			return strings.TrimSpace(b.String())
		default:
			b.WriteByte(c)
		}
	}
	return strings.TrimSpace(b.String())
}

func expandHome(p, home string) string {
	if p == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return p
}

// globalGitConfigs are the files git reads before a repository's own
// (git-config(1), FILES): system, then global.
func globalGitConfigs(home string) []string {
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" {
		xdg = filepath.Join(home, ".config")
	}
	out := []string{"/etc/gitconfig", filepath.Join(xdg, "git", "config"), filepath.Join(home, ".gitconfig")}
	// GIT_CONFIG_SYSTEM and GIT_CONFIG_GLOBAL replace them for git run
	// with srt's environment (a superset is what protection needs).
	for _, e := range []string{"GIT_CONFIG_SYSTEM", "GIT_CONFIG_GLOBAL"} {
		if f := os.Getenv(e); filepath.IsAbs(f) {
			out = append(out, f)
		}
	}
	return out
}

// hooksDirs returns the directories core.hooksPath values name for a
// repository whose working tree is top (the git directory itself when
// bare): relative ones are taken from top. A directory named "_" (husky)
// brings its parent, whose scripts it runs.
func hooksDirs(values []string, top string) []string {
	var out []string
	for _, v := range values {
		d := v
		if !filepath.IsAbs(d) {
			d = filepath.Join(top, d)
		}
		d = filepath.Clean(d)
		out = append(out, d)
		if filepath.Base(d) == "_" {
			out = append(out, filepath.Dir(d))
		}
	}
	return out
}
