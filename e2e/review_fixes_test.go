package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Tests for the holes the second adversarial review found.

// TestHomeConfigs: with the home directory writable, the files host tools
// run or read as configuration stay read-only: git's XDG config
// (core.fsmonitor), readline's inputrc, fish's start-up, login-time
// autostart and systemd user units, ssh's directory.
func TestHomeConfigs(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		home := u.workDir(t)
		u.mkdir(t, filepath.Join(home, ".config"))
		settings := `{"filesystem":{"allowWrite":["` + home + `"]}}`
		u.write(t, filepath.Join(home, settingsName), settings)
		before := snapshot(t, home)
		script := `
			mkdir -p ~/.config/git 2>/dev/null; printf '[core]\n\tfsmonitor = touch PWNED\n' > ~/.config/git/config 2>/dev/null && echo GITCONFIG-WRITTEN
			echo '"\C-m": "evil\n"' > ~/.inputrc 2>/dev/null && echo INPUTRC-WRITTEN
			mkdir -p ~/.config/fish 2>/dev/null; echo evil > ~/.config/fish/config.fish 2>/dev/null && echo FISH-WRITTEN
			mkdir -p ~/.config/autostart 2>/dev/null; echo evil > ~/.config/autostart/x.desktop 2>/dev/null && echo AUTOSTART-WRITTEN
			mkdir -p ~/.config/systemd/user 2>/dev/null; echo evil > ~/.config/systemd/user/x.service 2>/dev/null && echo SYSTEMD-WRITTEN
			mkdir -p ~/.ssh 2>/dev/null; echo evil > ~/.ssh/config 2>/dev/null && echo SSH-WRITTEN
			echo fine > ~/.config/other && echo OTHER-OK`
		out, errOut, code := srtRun{u: u, dir: home, settings: settings, env: []string{"HOME=" + home}, args: []string{"sh", "-c", script}}.run(t)
		if code != 0 || strings.Contains(out, "WRITTEN") || !strings.Contains(out, "OTHER-OK") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		assertUnchanged(t, home, before, filepath.Join(home, ".config", "other"))
	})
}

// TestViolationsFileNoFollow: srt does not append to a --violations file
// that a sandboxed command replaced with a symbolic link (to ~/.bashrc).
func TestViolationsFileNoFollow(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		target := filepath.Join(dir, "bashrc")
		u.write(t, target, "orig\n")
		u.write(t, filepath.Join(dir, "v.jsonl"), "->"+target)
		_, errOut, code := srtRun{u: u, dir: dir, settings: writeSettings, pre: []string{"--violations", filepath.Join(dir, "v.jsonl")}, args: []string{"true"}}.run(t)
		if code != 125 || !strings.Contains(errOut, "--violations") {
			t.Fatalf("exit %d, stderr %q; want 125 and a --violations error", code, errOut)
		}
		if b, _ := os.ReadFile(target); string(b) != "orig\n" {
			t.Fatalf("the symlink's target changed: %q", b)
		}
	})
}

// TestWeakerSandboxReviewFixes: in the Landlock fallback, a denyRead path
// inside a write root stays unreadable, and set-id bits and ownership
// cannot be changed anywhere.
func TestWeakerSandboxReviewFixes(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		proj := filepath.Join(dir, "proj")
		u.write(t, filepath.Join(proj, "config", ".env"), "SECRET")
		u.write(t, filepath.Join(dir, "tool"), "#!/bin/sh\n")
		os.Chmod(filepath.Join(dir, "tool"), 0o755)
		settings := `{"enableWeakerNestedSandbox":true,"filesystem":{"allowWrite":["."],"denyRead":["./config/.env"]}}`
		u.write(t, filepath.Join(dir, "s.json"), settings)
		script := `cat config/.env 2>/dev/null && echo READ-SECRET
			chmod u+s ` + filepath.Join(dir, "tool") + ` 2>/dev/null && echo SUID-SET
			chown ` + "0" + ` ` + filepath.Join(dir, "tool") + ` 2>/dev/null && echo CHOWNED
			echo ok`
		argv := []string{"bwrap", "--unshare-user", "--disable-userns", "--die-with-parent",
			"--ro-bind", "/", "/", "--tmpfs", "/tmp", "--bind", baseDir, baseDir,
			"--ro-bind", filepath.Dir(srtBin), filepath.Dir(srtBin), "--dev", "/dev", "--proc", "/proc",
			"--chdir", proj, srtBin, "-s", filepath.Join(dir, "s.json"), "--", "sh", "-c", script}
		out, err := u.command(t.Context(), proj, nil, argv...).Output()
		if err != nil || strings.Contains(string(out), "READ-SECRET") || strings.Contains(string(out), "SUID-SET") ||
			strings.Contains(string(out), "CHOWNED") || !strings.Contains(string(out), "ok") {
			t.Fatalf("err %v, stdout %q", err, out)
		}
		if fi, _ := os.Stat(filepath.Join(dir, "tool")); fi.Mode()&os.ModeSetuid != 0 {
			t.Fatalf("the setuid bit was set on the host")
		}
	})
}

// TestMicroVMCLI: srt --backend microvm runs the command on its own kernel
// with the working directory writable under the creation-time name rules
// (the default; issue 20) and read-only without them, hides a denyRead
// inside it, and passes the exit status through. Root only: the guest
// kernel cache is root's.
func TestMicroVMCLI(t *testing.T) {
	requireSandbox(t)
	if os.Geteuid() != 0 {
		t.Skip("the microvm kernel cache is root's")
	}
	requireMicroVM(t)
	u := &account{name: "root", home: "/root", direct: true}
	dir := u.workDir(t)
	u.write(t, filepath.Join(dir, ".env"), "SECRET")
	before := snapshot(t, dir)
	const script = `cat .env; echo x >> .bashrc 2>/dev/null && echo BASHRC-WRITTEN; echo new > f 2>/dev/null && echo WROTE; uname -r; exit 7`
	vfile := filepath.Join(t.TempDir(), "violations.jsonl")
	out, errOut, code := srtRun{u: u, dir: dir, settings: writeSettings, pre: []string{"--backend", "microvm", "--violations", vfile}, timeout: 180e9,
		args: []string{"sh", "-c", script}}.run(t)
	if code != 7 || !strings.Contains(out, "SECRET") || strings.Contains(out, "WRITTEN") || !strings.Contains(out, "WROTE") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// The guest's refusal is reported as native's: the exit summary on
	// stderr and a record in the --violations file.
	bashrc := filepath.Join(dir, ".bashrc")
	if !strings.Contains(errOut, "blocked by the sandbox") || !strings.Contains(errOut, bashrc) {
		t.Errorf("no violation summary naming %s on stderr: %q", bashrc, errOut)
	}
	if b, err := os.ReadFile(vfile); err != nil || !strings.Contains(string(b), `"target":"`+bashrc+`"`) || !strings.Contains(string(b), `"command":"sh -c `) {
		t.Errorf("--violations file: %q, %v; want a record of %s with the command", b, err, bashrc)
	}
	assertUnchanged(t, dir, before, filepath.Join(dir, settingsName), filepath.Join(dir, "f"))
	os.Remove(filepath.Join(dir, "f"))
	out, errOut, code = srtRun{u: u, dir: dir, settings: placeholderSettings, pre: []string{"--backend", "microvm"}, timeout: 180e9,
		args: []string{"sh", "-c", script}}.run(t)
	if code != 7 || !strings.Contains(out, "SECRET") || strings.Contains(out, "WRITTEN") || strings.Contains(out, "WROTE") {
		t.Fatalf("without the creation-time rules: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	assertUnchanged(t, dir, before, filepath.Join(dir, settingsName))
	// The environment reaches the command but for the host's places and
	// the proxy variables; a missing command is 127, as native.
	out, errOut, code = srtRun{u: u, dir: dir, settings: writeSettings, pre: []string{"--backend", "microvm"}, timeout: 180e9,
		env:  []string{"E2E_MICROVM_FOO=bar", "HTTP_PROXY=http://10.9.9.9:1"},
		args: []string{"sh", "-c", `echo "foo=$E2E_MICROVM_FOO"; case "$HTTP_PROXY" in http://127.0.0.1:*) echo proxy-guest;; *) echo "proxy=$HTTP_PROXY";; esac; git -C /tmp init -q r && git -C /tmp/r status >/dev/null && echo git-ok; srt-no-such-command`}}.run(t)
	if code != 127 || !strings.Contains(out, "foo=bar") || !strings.Contains(out, "proxy-guest") {
		t.Errorf("environment: exit %d, stdout %q, stderr %q; want 127, foo=bar and the guest's proxy", code, out, errOut)
	}
	for _, pre := range [][]string{{"--pass-fd", "2"}, {"--control-fd", "0"}} {
		_, errOut, code = srtRun{u: u, dir: dir, pre: append([]string{"--backend", "microvm"}, pre...), timeout: 60e9, args: []string{"true"}}.run(t)
		if code != 125 || !strings.Contains(errOut, pre[0]) {
			t.Errorf("%v under microvm: exit %d, stderr %q; want 125 naming it", pre, code, errOut)
		}
	}
	out, errOut, code = srtRun{u: u, dir: dir, settings: `{"filesystem":{"denyRead":["./.env"]}}`, pre: []string{"--backend", "microvm"}, timeout: 180e9, args: []string{"cat", ".env"}}.run(t)
	if code == 0 || code == 125 || strings.Contains(out, "SECRET") {
		t.Fatalf("a denyRead inside the share: exit %d, stdout %q, stderr %q; want cat to fail in the VM", code, out, errOut)
	}
}
