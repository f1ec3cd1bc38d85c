package policy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// nobody is the uid and gid the tests give to "another user".
const nobody = 65534

// TestUnlistableJudgesTheDirectory: whose a directory that cannot be
// listed is, is judged on the directory reached, not on a link another
// user made to it (found by an adversarial review: mallory's
// /tmp/adv/0pub/lnk -> the victim's chmod-000 directory made the error
// "another user's", and it was ignored). Needs root, to give the link
// to another user.
func TestUnlistableJudgesTheDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make another user's link")
	}
	T := tempRoot(t)
	files(t, T, "mine/", "theirs/", "pub/")
	symlink(t, T+"/mine", T+"/pub/lnk")
	symlink(t, T+"/theirs", T+"/pub/theirs")
	for _, p := range []string{T + "/pub/lnk", T + "/pub/theirs"} {
		if err := os.Lchown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(T+"/theirs", nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if unlistable(T+"/pub/lnk", syscall.EACCES) == nil {
		t.Error("unlistable: another user's link to the user's directory hid it")
	}
	if uncheckable(T+"/pub/lnk/x", syscall.EACCES) == nil {
		t.Error("uncheckable: another user's link to the user's directory hid it")
	}
	if u := unlistable(T+"/pub/theirs", syscall.EACCES); u != nil {
		t.Errorf("unlistable: another user's directory refused: %v", u)
	}
	if u := uncheckable(T+"/pub/theirs/x", syscall.EACCES); u != nil {
		t.Errorf("uncheckable: another user's directory refused: %v", u)
	}
}

// walkErrDirEnv names the tree TestDenyWalkReportsEverySpelling's child
// walks.
const walkErrDirEnv = "SRT_TEST_WALK_ERR_DIR"

// TestDenyWalkReportsEverySpelling: a directory the walk cannot read is
// reported at the link it was first reached by and at its real path
// (found by an adversarial review: the walk marked it seen before
// reading it, so its real path, reached later, was skipped, and only
// the link's spelling, another user's, was reported). Root reads every
// directory, so as root the walk runs in a copy of the test binary as
// nobody.
func TestDenyWalkReportsEverySpelling(t *testing.T) {
	if d := os.Getenv(walkErrDirEnv); d != "" {
		expandDeny(d+"/**/.env", nil, nil, func(dir string, err error) { os.Stdout.WriteString("ERR " + dir + "\n") })
		return
	}
	T := tempRoot(t)
	files(t, T, "W/a/b/e/.env", "0pub/")
	symlink(t, T+"/W/a/b/e", T+"/0pub/lnk") // sorts before the tree
	for _, d := range []string{T, filepath.Dir(T)} {
		os.Chmod(d, 0o755) // t.TempDir's are 0700
	}
	var out []byte
	var err error
	if os.Geteuid() != 0 {
		if err := os.Chmod(T+"/W/a/b/e", 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(T+"/W/a/b/e", 0o755) })
		var b strings.Builder
		expandDeny(T+"/**/.env", nil, nil, func(dir string, err error) { b.WriteString("ERR " + dir + "\n") })
		out = []byte(b.String())
	} else {
		self, e := os.ReadFile("/proc/self/exe")
		if e != nil {
			t.Fatal(e)
		}
		bin := filepath.Join(T, "bin/policy.test")
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, self, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := filepath.Walk(T, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, nobody, nobody) }); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(T+"/W/a/b/e", 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(T+"/W/a/b/e", 0o755) })
		cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", bin, "-test.run=^TestDenyWalkReportsEverySpelling$")
		cmd.Dir, cmd.Env = T, append(os.Environ(), walkErrDirEnv+"="+T)
		out, err = cmd.CombinedOutput()
	}
	if err != nil {
		t.Fatalf("the walk as nobody: %v\n%s", err, out)
	}
	lines := strings.Split(string(out), "\n")
	for _, want := range []string{"ERR " + T + "/0pub/lnk", "ERR " + T + "/W/a/b/e"} {
		if !slices.Contains(lines, want) {
			t.Errorf("%q not reported:\n%s", want, out)
		}
	}
}
