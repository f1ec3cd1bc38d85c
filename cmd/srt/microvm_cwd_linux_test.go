package main

import (
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/srt-go/srt/settings"
)

// TestMicroVMWorkdirResolvedOnce: srt --backend microvm run from a
// directory reached through a symbolic link (cd /tmp/evl, $PWD the link)
// that another user re-points once srt has looked at it still shows the
// directory it was started in, with the denyRead planned there hidden:
// the working directory is the kernel's real path, taken once, and no
// later step (the policy, the share, the hidden paths, QEMU's view)
// looks the link up again (an adversarial review flipped /tmp/evl between
// the project and the home directory and read ~/.ssh). Root only: the
// guest kernel cache is root's.
func TestMicroVMWorkdirResolvedOnce(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the microvm kernel cache is root's")
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		if os.Getenv("SRT_E2E_ALLOW_SKIP") == "1" {
			t.Skip("qemu-system-x86_64 missing")
		}
		t.Fatal("qemu-system-x86_64 missing (apt-get install qemu-system-x86)")
	}
	base, _ := filepath.EvalSymlinks(t.TempDir())
	// The guest's /init: srt itself, static.
	init := filepath.Join(base, "srt")
	build := exec.Command("go", "build", "-trimpath", "-o", init, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Setenv("SRT_MICROVM_INIT", init)

	home := filepath.Join(base, "home")
	proj := filepath.Join(home, "proj")
	for p, content := range map[string]string{
		filepath.Join(proj, "proj-marker"):        "project\n",
		filepath.Join(proj, "secret.txt"):         "PROJECT-SECRET\n",
		filepath.Join(home, ".ssh", "id_ed25519"): "HOME-KEY\n",
	} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(base, "evl")
	if err := os.Symlink(proj, link); err != nil {
		t.Fatal(err)
	}
	t.Chdir(link) // $PWD is the link, as after a shell's cd
	cwd, err := microvmWorkdir()
	if err != nil {
		t.Fatal(err)
	}
	// Another user re-points the link now, after srt looked at it.
	flip := filepath.Join(base, ".evl.new")
	if err := os.Symlink(home, flip); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(flip, link); err != nil {
		t.Fatal(err)
	}

	s := settings.Default()
	s.Filesystem.DenyRead = []settings.PathEntry{{Path: filepath.Join(home, ".ssh")}, {Path: filepath.Join(proj, "secret.txt")}}
	stdin, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, _ := os.CreateTemp(base, "stdout")
	stderr, _ := os.CreateTemp(base, "stderr")
	script := `echo "pwd=$(pwd)"; ls -a; cat .ssh/id_ed25519 secret.txt ` + filepath.Join(home, ".ssh", "id_ed25519") + ` 2>&1; true`
	code := runMicroVMAt(cwd, s, []string{"sh", "-c", script}, &options{}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), stdin, stdout, stderr)
	out, _ := os.ReadFile(stdout.Name())
	errOut, _ := os.ReadFile(stderr.Name())
	t.Logf("stdout:\n%s", out)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"pwd=" + proj + "\n", "proj-marker"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the VM does not show the directory srt was started in (%s): no %q\nstdout:\n%s\nstderr:\n%s", proj, want, out, errOut)
		}
	}
	for _, secret := range []string{"HOME-KEY", "PROJECT-SECRET"} {
		if strings.Contains(string(out), secret) {
			t.Errorf("a denyRead file was read in the VM (%s):\n%s", secret, out)
		}
	}
}
