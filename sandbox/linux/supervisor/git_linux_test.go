package supervisor

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// tree makes the files (content) and directories (a trailing "/") of
// entries under a new temporary directory and returns it.
func tree(t *testing.T, entries map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range entries {
		p := filepath.Join(root, name)
		if name[len(name)-1] == '/' {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func openDir(t *testing.T, p string) int {
	t.Helper()
	fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// TestIsGitDir: HEAD, objects and refs make a git directory, whatever
// its name; adding counts the one about to come into being.
func TestIsGitDir(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries map[string]string
		adding  string
		want    bool
	}{
		{"all three", map[string]string{"HEAD": "ref: refs/heads/main\n", "objects/": "", "refs/": ""}, "", true},
		{"no HEAD", map[string]string{"objects/": "", "refs/": ""}, "", false},
		{"HEAD being added", map[string]string{"objects/": "", "refs/": ""}, "HEAD", true},
		{"refs being added", map[string]string{"HEAD": "", "objects/": ""}, "refs", true},
		{"two missing", map[string]string{"HEAD": ""}, "refs", false},
		{"empty", map[string]string{}, "", false},
		{"files will do", map[string]string{"HEAD": "", "objects": "", "refs": ""}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := openDir(t, tree(t, tc.entries))
			if got := isGitDir(dir, tc.adding); got != tc.want {
				t.Errorf("isGitDir = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestGitDirRule: names that may not come into being in a directory that
// is, or is becoming, a git directory; and the TMPDIR exemption.
func TestGitDirRule(t *testing.T) {
	gitDir := map[string]string{"HEAD": "ref: refs/heads/main\n", "objects/": "", "refs/": "", "hooks/": ""}
	almost := map[string]string{"HEAD": "", "objects/": ""}
	for _, tc := range []struct {
		name        string
		entries     map[string]string
		in, create  string // directory (relative) and name
		kind        int
		allowConfig bool
		want        string
	}{
		{"config in a git directory", gitDir, ".", "config", kFile, false, bareRule},
		{"config checked", gitDir, ".", "config", kConfig, false, ""},
		{"config allowed", gitDir, ".", "config", kFile, true, ""},
		{"config elsewhere", map[string]string{}, ".", "config", kFile, false, ""},
		{"hooks file", gitDir, ".", "hooks", kFile, false, bareRule},
		{"hooks dir", gitDir, ".", "hooks", kDir, false, ""},
		{"a hook", gitDir, "hooks", "pre-commit", kFile, false, bareRule},
		{"a sample", gitDir, "hooks", "pre-commit.sample", kFile, false, ""},
		{"a sample by rename", gitDir, "hooks", "pre-commit.sample", kOther, false, bareRule},
		{"hooks of no git directory", map[string]string{"hooks/": ""}, "hooks", "pre-commit", kFile, false, ""},
		{"commondir", gitDir, ".", "commondir", kFile, false, bareRule},
		{"config.worktree", gitDir, ".", "config.worktree", kFile, false, bareRule},
		{"modules", gitDir, ".", "modules", kDir, false, bareRule},
		{"worktrees", gitDir, ".", "worktrees", kDir, false, bareRule},
		{"ordinary name", gitDir, ".", "description", kFile, false, ""},
		{"last entry, clean", almost, ".", "refs", kDir, false, ""},
		{"last entry, a redirect there", map[string]string{"HEAD": "", "objects/": "", "commondir": "../x\n"}, ".", "refs", kDir, false, bareRule},
		{"last entry, a hook there", map[string]string{"HEAD": "", "objects/": "", "hooks/post-checkout": "#!/bin/sh\n"}, ".", "refs", kDir, false, bareRule},
		{"last entry, samples there", map[string]string{"HEAD": "", "objects/": "", "hooks/x.sample": ""}, ".", "refs", kDir, false, ""},
		{"last entry, harmful config", map[string]string{"HEAD": "", "objects/": "", "config": "[core]\n\thooksPath = /x\n"}, ".", "refs", kDir, false, bareRule},
		{"last entry, harmless config", map[string]string{"HEAD": "", "objects/": "", "config": "[core]\n\tbare = true\n"}, ".", "refs", kDir, false, ""},
		{"not the last entry", map[string]string{"commondir": "../x\n"}, ".", "HEAD", kFile, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := tree(t, tc.entries)
			dirPath := filepath.Join(root, tc.in)
			g := gitRules{tmpdir: "/nonexistent-tmpdir", allowConfig: tc.allowConfig}
			w := where{dir: openDir(t, dirPath), name: tc.create, real: filepath.Join(dirPath, tc.create)}
			if got := g.dirRule(w, tc.kind); got != tc.want {
				t.Errorf("dirRule(%s in %s, kind %d) = %q, want %q", tc.create, tc.in, tc.kind, got, tc.want)
			}
			g.tmpdir = root
			if got := g.dirRule(w, tc.kind); got != "" {
				t.Errorf("in the private TMPDIR: dirRule = %q, want none", got)
			}
		})
	}
}

// TestGitDirUnsafeReplacesConfig: a harmless config made before the
// directory became a git directory is replaced by srt's own copy (no
// descriptor of the sandbox's writes to it afterwards).
func TestGitDirUnsafeReplacesConfig(t *testing.T) {
	root := tree(t, map[string]string{"config": "[core]\n\tbare = true\n"})
	f, err := os.OpenFile(filepath.Join(root, "config"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if r := gitDirUnsafe(openDir(t, root)); r != "" {
		t.Fatalf("gitDirUnsafe = %q", r)
	}
	if _, err := f.WriteString("[core]\n\thooksPath = /x\n"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "config"))
	if err != nil || string(b) != "[core]\n\tbare = true\n" {
		t.Errorf("config = %q, %v; want the checked content", b, err)
	}
}

// TestOnlySamples: what git init puts in hooks/, and nothing else.
func TestOnlySamples(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries map[string]string
		want    bool
	}{
		{"empty", map[string]string{"hooks/": ""}, true},
		{"samples", map[string]string{"hooks/a.sample": "", "hooks/b.sample": ""}, true},
		{"a hook", map[string]string{"hooks/a.sample": "", "hooks/pre-commit": ""}, false},
		{"a directory", map[string]string{"hooks/x.sample/": ""}, false},
		{"missing", map[string]string{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := onlySamples(openDir(t, tree(t, tc.entries)), "hooks"); got != tc.want {
				t.Errorf("onlySamples = %v, want %v", got, tc.want)
			}
		})
	}
	root := tree(t, map[string]string{"real/": ""})
	if err := os.Symlink("real", filepath.Join(root, "hooks")); err != nil {
		t.Fatal(err)
	}
	if onlySamples(openDir(t, root), "hooks") {
		t.Error("onlySamples follows a symlink")
	}
}

// TestGitConfigRename: git's config.lock dance, with the content checked
// and written by srt; a harmful lock is refused (EACCES) and stays.
func TestGitConfigRename(t *testing.T) {
	for _, tc := range []struct {
		name, lock string
		want       unix.Errno
	}{
		{"harmless", "[core]\n\tbare = false\n", 0},
		{"harmful", "[core]\n\tfsmonitor = evil\n", unix.EACCES},
		{"too large", "[core]\n" + string(make([]byte, 1<<20)), unix.EACCES},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := tree(t, map[string]string{"config.lock": tc.lock})
			dir := openDir(t, root)
			o := where{dir: dir, name: "config.lock", real: filepath.Join(root, "config.lock")}
			w := where{dir: dir, name: "config", real: filepath.Join(root, "config")}
			if got := gitConfigRename(o, w, 0o022); got != tc.want {
				t.Fatalf("gitConfigRename = %v, want %v", got, tc.want)
			}
			_, lockErr := os.Stat(filepath.Join(root, "config.lock"))
			b, confErr := os.ReadFile(filepath.Join(root, "config"))
			if tc.want != 0 {
				if lockErr != nil || confErr == nil {
					t.Errorf("refused: lock %v, config %v; want the lock left and no config", lockErr, confErr)
				}
				return
			}
			if !os.IsNotExist(lockErr) || string(b) != tc.lock {
				t.Errorf("lock %v, config %q %v; want the lock gone and its content in config", lockErr, b, confErr)
			}
			if st, err := os.Stat(filepath.Join(root, "config")); err != nil || st.Mode().Perm() != 0o644 {
				t.Errorf("config mode %v, %v; want 0644 (umask 022)", st.Mode(), err)
			}
		})
	}
}
