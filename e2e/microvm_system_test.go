package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// microVMEnv passes the guest kernel choice (SRT_MICROVM_KERNEL, as CI
// sets it) through the clean environment srtRun gives srt.
func microVMEnv() []string {
	if k := os.Getenv("SRT_MICROVM_KERNEL"); k != "" {
		return []string{"SRT_MICROVM_KERNEL=" + k}
	}
	return nil
}

// microVMSystemRun1 is run 1 of TestMicroVMSystem: the host's tools on
// the working directory, the hidden paths, and attempts to leave
// something behind for run 2; one line per attempt.
const microVMSystemRun1 = `
try() { name=$1; shift; if out=$("$@" 2>&1); then echo "$name ran $(echo $out | head -c 300)"; else echo "$name refused $(echo $out | head -c 300)"; fi; }
try git git log --format=%s
try python3 python3 hello.py
try node node hello.js
try env cat .env
try private ls -A private
try privatekey cat private/key
try hostlink cat host-link
try shadow cat /etc/shadow
try plant ln -s .env leak
try plantabs ln -s /etc/shadow leak2
try mvprivate mv private p2
echo end
`

// TestMicroVMSystem: srt --backend microvm runs the host's git, python3
// and node on the working directory (shared read-only), hides the
// settings' denyRead paths inside it and /etc's secrets (microvm.
// SystemHidden), even through a link the host user left there; and a
// first run cannot leave anything that makes a second run see them.
// Two VM boots per user.
func TestMicroVMSystem(t *testing.T) {
	requireQEMU(t)
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		u.write(t, filepath.Join(dir, ".env"), "SECRET-ENV")
		u.write(t, filepath.Join(dir, "private", "key"), "SECRET-KEY")
		u.write(t, filepath.Join(dir, "hello.py"), "print('py', 6*7)\n")
		u.write(t, filepath.Join(dir, "hello.js"), "console.log('js', 6*7)\n")
		u.write(t, filepath.Join(dir, "host-link"), "->.env")
		git := u.command(t.Context(), dir, nil, "sh", "-c",
			"git init -q && git add hello.py && git -c user.name=t -c user.email=t@t commit -qm first-commit")
		if out, err := git.CombinedOutput(); err != nil {
			t.Fatalf("git on the host: %v: %s", err, out)
		}
		settings := `{"filesystem":{"denyRead":["./.env","./private"]}}`
		before := snapshot(t, dir)
		out, errOut, code := srtRun{u: u, dir: dir, settings: settings, env: microVMEnv(), timeout: 300e9,
			pre: []string{"--backend", "microvm"}, args: []string{"sh", "-c", microVMSystemRun1}}.run(t)
		if code != 0 {
			t.Fatalf("run 1: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		t.Logf("run 1:\n%s", out)
		r := lines(out)
		ran := func(k, want string) {
			t.Helper()
			if v := r[k]; !strings.HasPrefix(v, "ran") || !strings.Contains(v, want) {
				t.Errorf("%s: %q, want it to run and print %q", k, v, want)
			}
		}
		hidden := func(k string) {
			t.Helper()
			if v := r[k]; v != "ran " && !strings.HasPrefix(v, "refused") || strings.Contains(v, "SECRET") || strings.Contains(v, "root:") {
				t.Errorf("%s: %q, want empty or refused", k, v)
			}
		}
		ran("git", "first-commit")
		ran("python3", "py 42")
		ran("node", "js 42")
		hidden("env")
		hidden("private")
		hidden("privatekey")
		hidden("hostlink")
		hidden("shadow")
		for _, k := range []string{"plant", "plantabs", "mvprivate"} {
			if !strings.HasPrefix(r[k], "refused") {
				t.Errorf("%s: %q, want it refused (the share is read-only)", k, r[k])
			}
		}
		if _, ok := r["end"]; !ok && !strings.Contains(out, "\nend") {
			t.Errorf("the script did not finish: %q", out)
		}
		assertUnchanged(t, dir, before, filepath.Join(dir, settingsName))

		// Run 2: whatever run 1 tried, the hidden paths stay hidden.
		out, errOut, code = srtRun{u: u, dir: dir, settings: settings, env: microVMEnv(), timeout: 300e9,
			pre: []string{"--backend", "microvm"}, args: []string{"sh", "-c",
				`cat .env leak leak2 private/key p2/key host-link 2>&1; ls -A private; echo end`}}.run(t)
		if code != 0 || strings.Contains(out, "SECRET") || strings.Contains(out, "root:") || !strings.Contains(out, "end") {
			t.Fatalf("run 2: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		assertUnchanged(t, dir, before, filepath.Join(dir, settingsName))
	})
}

// lines maps the first word of each line of out to the rest.
func lines(out string) map[string]string {
	r := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, " "); ok {
			r[k] = v
		} else if l != "" {
			r[l] = ""
		}
	}
	return r
}
