package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// bareRepo makes dir/repo.git, a bare repository with one commit on main
// whose README holds the line readme, ready for the dumb HTTP protocol
// (update-server-info), git http-backend and git-upload-pack; dir/src is
// its work tree. It returns the repository's path.
func bareRepo(t *testing.T, dir, readme string) string {
	t.Helper()
	src, repo := filepath.Join(dir, "src"), filepath.Join(dir, "repo.git")
	gitEnv := append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	for _, c := range [][]string{
		{"git", "init", "-q", "-b", "main", src},
		{"sh", "-c", "echo '" + readme + "' > " + src + "/README"},
		{"git", "-C", src, "add", "README"},
		{"git", "-C", src, "commit", "-q", "-m", "first"},
		{"git", "clone", "-q", "--bare", src, repo},
		{"git", "-C", repo, "update-server-info"},
	} {
		cmd := exec.Command(c[0], c[1:]...)
		cmd.Env = gitEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%q: %v\n%s", c, err, out)
		}
	}
	return repo
}
