// Package scripts tests the repository's scripts: build-deb.sh builds a
// Debian package that installs and runs.
package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDebianPackage builds the .deb, checks its control fields and file
// list, unpacks it with dpkg -x into a clean directory and runs the
// binaries from there. Skipped without dpkg-deb (present on Debian, so CI
// runs it) and in -short (it builds both binaries).
func TestDebianPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds srt and srtd")
	}
	for _, tool := range []string{"dpkg-deb", "dpkg", "bash", "gzip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	const version = "1.2.3~test"
	out, err := exec.Command("bash", "build-deb.sh", version).CombinedOutput()
	if err != nil {
		t.Fatalf("build-deb.sh: %v\n%s", err, out)
	}
	deb := filepath.Join("..", strings.TrimSpace(lastLine(string(out))))
	t.Cleanup(func() { os.Remove(deb) })
	if !regexp.MustCompile(`^srt-go_1\.2\.3~test_[a-z0-9]+\.deb$`).MatchString(filepath.Base(deb)) {
		t.Fatalf("package name %q", deb)
	}

	info := run(t, "dpkg-deb", "--info", deb)
	for _, want := range []string{"Package: srt-go", "Version: " + version, "Depends: bubblewrap", "Architecture: "} {
		if !strings.Contains(info, want) {
			t.Errorf("dpkg-deb --info has no %q:\n%s", want, info)
		}
	}
	contents := run(t, "dpkg-deb", "--contents", deb)
	for _, want := range []string{
		"./usr/bin/srt", "./usr/bin/srtd",
		"./usr/share/man/man1/srt.1.gz", "./usr/share/man/man8/srtd.8.gz",
		"./usr/share/bash-completion/completions/srt", "./usr/share/bash-completion/completions/srtd",
		"./usr/share/zsh/vendor-completions/_srt", "./usr/share/zsh/vendor-completions/_srtd",
		"./usr/share/fish/vendor_completions.d/srt.fish", "./usr/share/fish/vendor_completions.d/srtd.fish",
		"./usr/share/srt-go/srt-settings.schema.json", "./usr/lib/systemd/user/srtd.service",
		"./usr/share/doc/srt-go/copyright",
	} {
		if !strings.Contains(contents, want+"\n") {
			t.Errorf("the package has no %s:\n%s", want, contents)
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(contents), "\n") {
		if f := strings.Fields(l); len(f) < 2 || f[1] != "root/root" {
			t.Errorf("not owned by root (--root-owner-group): %s", l)
		}
	}

	dir := t.TempDir()
	run(t, "dpkg", "-x", deb, dir)
	if got := run(t, filepath.Join(dir, "usr/bin/srt"), "--version"); got != "srt "+version+"\n" {
		t.Errorf("srt --version = %q", got)
	}
	if got := run(t, filepath.Join(dir, "usr/bin/srtd"), "--version"); got != "srtd "+version+"\n" {
		t.Errorf("srtd --version = %q", got)
	}
	if got := run(t, filepath.Join(dir, "usr/bin/srtd"), "--help"); !strings.Contains(got, "Usage: srtd") {
		t.Errorf("srtd --help = %q", got)
	}
	if file, err := exec.Command("file", filepath.Join(dir, "usr/bin/srt")).Output(); err == nil && !strings.Contains(string(file), "statically linked") {
		t.Errorf("srt is not static: %s", file)
	}
	schema, err := os.ReadFile(filepath.Join(dir, "usr/share/srt-go/srt-settings.schema.json"))
	if err != nil || run(t, filepath.Join(dir, "usr/bin/srt"), "--print-schema") != string(schema) {
		t.Errorf("the packaged schema is not srt --print-schema's (%v)", err)
	}
	if _, err := exec.LookPath("man"); err == nil {
		if page := run(t, "man", "-l", "-P", "cat", filepath.Join(dir, "usr/share/man/man1/srt.1.gz")); !strings.Contains(page, "--settings") {
			t.Errorf("man -l srt.1.gz: %q", page)
		}
	}

	// The unit, with ExecStart pointing at the unpacked srtd (verify
	// checks that the program exists).
	if _, err := exec.LookPath("systemd-analyze"); err == nil {
		unit, err := os.ReadFile(filepath.Join(dir, "usr/lib/systemd/user/srtd.service"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(unit), "\nExecStart=/usr/bin/srtd\n") || !strings.Contains(string(unit), "\nRestart=on-failure\n") {
			t.Errorf("srtd.service:\n%s", unit)
		}
		for _, forbidden := range []string{"PrivateUsers=", "RestrictNamespaces="} {
			if regexp.MustCompile(`(?m)^` + forbidden).Match(unit) {
				t.Errorf("srtd.service sets %s, which forbids the user namespaces bubblewrap makes", forbidden)
			}
		}
		local := filepath.Join(t.TempDir(), "srtd.service")
		fixed := strings.Replace(string(unit), "ExecStart=/usr/bin/srtd", "ExecStart="+filepath.Join(dir, "usr/bin/srtd"), 1)
		if err := os.WriteFile(local, []byte(fixed), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("systemd-analyze", "verify", "--man=no", local).CombinedOutput(); err != nil {
			t.Errorf("systemd-analyze verify srtd.service: %v\n%s", err, out)
		}
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		t.Fatalf("%s %q: %v", name, args, err)
	}
	return string(out)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
