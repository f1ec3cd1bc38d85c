package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fsSettings is the policy of TestFilesystem, run in W/proj with HOME=W/home.
const fsSettings = `{"filesystem":{
  "allowWrite":["."],
  "denyWrite":["./ro","./rofile","./sub/deep/rofile2"],
  "denyRead":["./secret","./secretfile","~/.ssh-test","./secret/public/deeper"],
  "allowRead":["./secret/public"]}}`

// fsLayout is the host tree of TestFilesystem, relative to W.
var fsLayout = map[string]string{
	"proj/file":                       "file\n",
	"proj/.bashrc":                    "rc\n",
	"proj/ro/f":                       "ro\n",
	"proj/rofile":                     "rofile\n",
	"proj/sub/deep/rofile2":           "rofile2\n",
	"proj/secretfile":                 "top secret\n",
	"proj/secret/key":                 "key\n",
	"proj/secret/public/pub.txt":      "pub\n",
	"proj/secret/public/deeper/d.txt": "deeper\n",
	"outside/o.txt":                   "outside\n",
	"home/.ssh-test/id":               "ssh key\n",
	"home/.profile":                   "profile\n",
}

const errENOENT = "No such file or directory"

// TestFilesystem attacks the read and write rules from inside the
// sandbox, then checks the host tree: only the paths a case may change
// changed (issue 2, "Filesystem policy").
func TestFilesystem(t *testing.T) {
	t.Parallel()
	type change struct{ path, content string } // content "" means absent
	cases := []struct {
		name   string
		script string
		code   int
		out    string   // exact stdout; "*" means any
		errs   []string // stderr must contain one of them (when code != 0)
		may    []string // paths (relative to W) that may change
		want   []change // host state afterwards
	}{
		// Writes.
		{name: "write-inside", script: `echo new > created && cat created && echo more >> file`, out: "new\n",
			may: []string{"proj/created", "proj/file"}, want: []change{{"proj/created", "new\n"}, {"proj/file", "file\nmore\n"}}},
		{name: "mkdir-inside", script: `mkdir -p d/e && echo x > d/e/f && rm -r d && echo ok`, out: "ok\n"},
		{name: "write-outside", script: `echo x > ../outside/o.txt`, code: 2, errs: []string{errEROFS}},
		{name: "create-outside", script: `echo x > ../outside/new`, code: 2, errs: []string{errEROFS}},
		{name: "mkdir-outside", script: `mkdir ../outside/d`, code: 1, errs: []string{errEROFS}},
		{name: "write-home", script: `echo x > "$HOME/new"`, code: 2, errs: []string{errEROFS}},
		{name: "append-home-profile", script: `echo x >> "$HOME/.profile"`, code: 2, errs: []string{errEROFS}},
		{name: "write-tmp", script: `echo x > /tmp/srt-e2e-escape-$$`, code: 2, errs: []string{errEROFS}},
		{name: "write-denyWrite-dir-file", script: `echo x > ro/f`, code: 2, errs: []string{errEROFS}},
		{name: "create-in-denyWrite-dir", script: `echo x > ro/new`, code: 2, errs: []string{errEROFS}},
		{name: "write-denyWrite-file", script: `echo x >> rofile`, code: 2, errs: []string{errEROFS}},
		{name: "truncate-denyWrite-file", script: `: > rofile`, code: 2, errs: []string{errEROFS}},
		{name: "chmod-denyWrite-file", script: `chmod 700 rofile`, code: 1, errs: []string{errEROFS}},
		{name: "write-denyWrite-deep-file", script: `echo x > sub/deep/rofile2`, code: 2, errs: []string{errEROFS}},
		// Reads.
		{name: "read-denyRead-file", script: `cat secretfile`, code: 1, errs: []string{errEACCES}},
		{name: "write-denyRead-file", script: `echo x > secretfile`, code: 2, errs: []string{errEACCES, errEROFS}},
		{name: "read-in-denyRead-dir", script: `cat secret/key`, code: 1, errs: []string{errENOENT}},
		{name: "list-denyRead-dir", script: `ls -A secret`, out: "public\n"},
		{name: "list-denyRead-home-dir", script: `ls -A ~/.ssh-test`, out: ""},
		{name: "read-denyRead-tilde", script: `cat ~/.ssh-test/id`, code: 1, errs: []string{errENOENT}},
		{name: "create-in-denyRead-dir", script: `echo x > secret/new`, code: 2, errs: []string{errEROFS}},
		{name: "read-allowRead-in-deny", script: `cat secret/public/pub.txt`, out: "pub\n"},
		{name: "read-deny-in-allowRead", script: `cat secret/public/deeper/d.txt`, code: 1, errs: []string{errENOENT}},
		// allowRead inside a denyRead area inside a write root: srt-go lets
		// allowWrite decide (the path is readable and under "."), where the
		// reference binds it back read-only. Pinned here so a change is seen.
		{name: "write-allowRead-in-deny", script: `echo x > secret/public/pub.txt`,
			may: []string{"proj/secret/public/pub.txt"}, want: []change{{"proj/secret/public/pub.txt", "x\n"}}},
		// Other spellings of a denied path.
		{name: "dotdot-read", script: `cat ./secret/../secretfile`, code: 1, errs: []string{errEACCES}},
		{name: "dotdot-read-via-parent", script: `cat ../proj/secret/public/../key`, code: 1, errs: []string{errENOENT}},
		{name: "dotdot-write", script: `echo x > ro/../ro/f`, code: 2, errs: []string{errEROFS}},
		{name: "dotdot-write-outside", script: `echo x > ./sub/../../outside/o.txt`, code: 2, errs: []string{errEROFS}},
		{name: "proc-self-root-read", script: `cat "/proc/self/root$PWD/secretfile"`, code: 1, errs: []string{errEACCES}},
		{name: "proc-self-root-write", script: `echo x > "/proc/self/root$PWD/../outside/o.txt"`, code: 2, errs: []string{errEROFS}},
		{name: "proc-self-cwd-write", script: `echo x > /proc/self/cwd/rofile`, code: 2, errs: []string{errEROFS}},
		{name: "proc-1-root-read", script: `cat "/proc/1/root$PWD/secret/key"`, code: 1, errs: []string{errENOENT, errEACCES}},
		// Symbolic links made inside the writable directory.
		{name: "symlink-to-outside", script: `ln -s ../outside/o.txt l && echo x > l`, code: 2, errs: []string{errEROFS}, may: []string{"proj/l"}},
		{name: "symlink-absolute-to-outside", script: `ln -s "$(dirname "$PWD")/outside/o.txt" l && echo x >> l`, code: 2, errs: []string{errEROFS}, may: []string{"proj/l"}},
		{name: "symlink-dangling-outside", script: `ln -s ../outside/new l && echo x > l`, code: 2, errs: []string{errEROFS}, may: []string{"proj/l"}},
		{name: "symlink-dir-parent-outside", script: `ln -s ../outside d && echo x > d/new; echo x > d/o.txt`, code: 2, errs: []string{errEROFS}, may: []string{"proj/d"}},
		{name: "symlink-to-home", script: `ln -s "$HOME" h && echo x > h/.profile`, code: 2, errs: []string{errEROFS}, may: []string{"proj/h"}},
		{name: "symlink-to-denyRead-file", script: `ln -s secretfile l && cat l`, code: 1, errs: []string{errEACCES}, may: []string{"proj/l"}},
		{name: "symlink-to-denyRead-dir", script: `ln -s secret l && cat l/key`, code: 1, errs: []string{errENOENT}, may: []string{"proj/l"}},
		{name: "symlink-to-denyRead-home", script: `ln -s ~/.ssh-test l && cat l/id`, code: 1, errs: []string{errENOENT}, may: []string{"proj/l"}},
		{name: "symlink-to-denyWrite-dir", script: `ln -s ro l && echo x > l/f`, code: 2, errs: []string{errEROFS}, may: []string{"proj/l"}},
		{name: "symlink-swap-denyWrite-file", script: `rm -f rofile; ln -sf file rofile; echo x > rofile`, code: 2, errs: []string{errEROFS}},
		// Hard links.
		{name: "hardlink-outside", script: `ln ../outside/o.txt h`, code: 1, errs: refused},
		{name: "hardlink-denyRead-file", script: `ln secretfile h`, code: 1, errs: refused},
		{name: "hardlink-denyWrite-file", script: `ln rofile h`, code: 1, errs: refused},
		{name: "hardlink-mandatory-file", script: `ln .bashrc h`, code: 1, errs: refused},
		{name: "hardlink-home-file", script: `ln ~/.profile h`, code: 1, errs: refused},
		// Rename and delete.
		{name: "rename-protected-file", script: `mv rofile x`, code: 1, errs: refused},
		{name: "rename-over-protected-file", script: `echo evil > e && mv e rofile`, code: 1, errs: refused, may: []string{"proj/e"}},
		{name: "rename-denyWrite-dir", script: `mv ro ro2`, code: 1, errs: refused},
		{name: "rename-parent-of-protected", script: `mv sub sub2`, code: 1, errs: refused},
		{name: "rename-grandparent-of-protected", script: `mv sub/deep sub/deep2`, code: 1, errs: refused},
		{name: "rename-write-root", script: `mv "$PWD" "$PWD.moved"`, code: 1, errs: refused},
		{name: "rename-denyRead-dir", script: `mv secret s2`, code: 1, errs: refused},
		{name: "delete-protected-file", script: `rm rofile`, code: 1, errs: refused},
		{name: "delete-in-denyWrite-dir", script: `rm ro/f`, code: 1, errs: refused},
		{name: "delete-denyRead-file", script: `rm secretfile`, code: 1, errs: refused},
		{name: "rm-rf-parent-then-recreate", script: `rm -rf sub 2>/dev/null; mkdir -p sub/deep 2>/dev/null; echo evil > sub/deep/rofile2`, code: 2, errs: []string{errEROFS}},
		{name: "rm-rf-write-root", script: `rm -rf "$PWD" 2>/dev/null; cat rofile secretfile`, code: 1, out: "rofile\n", errs: []string{errEACCES},
			may: []string{"proj/file", "proj/created", "proj/" + settingsName, "proj/secret/public/pub.txt"}},
		// Special files. The seccomp filter refuses socket(AF_UNIX) itself
		// (EPERM), so no socket file can be bound anywhere; a fifo shows the
		// same rule for special files.
		{name: "unix-socket-inside", script: `python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.bind("sock"); print("bound")'`, code: 1, errs: []string{errEPERM}},
		{name: "unix-socket-outside", script: `python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.bind("../outside/sock")'`, code: 1, errs: []string{errEPERM, errEROFS}},
		{name: "fifo-inside", script: `mkfifo fifo && test -p fifo && echo ok`, out: "ok\n", may: []string{"proj/fifo"}},
		{name: "fifo-outside", script: `mkfifo ../outside/fifo`, code: 1, errs: []string{errEROFS}},
	}
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				w := u.workDir(t)
				for p, c := range fsLayout {
					u.write(t, filepath.Join(w, p), c)
				}
				proj := filepath.Join(w, "proj")
				r := srtRun{u: u, dir: proj, settings: fsSettings, env: []string{"HOME=" + filepath.Join(w, "home")}, args: []string{"sh", "-c", tc.script}}
				r.argv(t) // writes the settings file before the snapshot
				before := snapshot(t, w)
				out, errOut, code := r.run(t)
				if code != tc.code {
					t.Errorf("exit status %d, want %d; stdout %q stderr %q", code, tc.code, out, errOut)
				}
				if tc.out != "*" && out != tc.out {
					t.Errorf("stdout %q, want %q", out, tc.out)
				}
				if tc.code != 0 && !hasAny(errOut, tc.errs...) {
					t.Errorf("stderr %q names none of %q", errOut, tc.errs)
				}
				var may []string
				for _, p := range tc.may {
					may = append(may, filepath.Join(w, p))
				}
				assertUnchanged(t, w, before, may...)
				for _, c := range tc.want {
					b, err := os.ReadFile(filepath.Join(w, c.path))
					if got := string(b); c.content == "" && err == nil || c.content != "" && got != c.content {
						t.Errorf("host %s = %q (%v), want %q", c.path, got, err, c.content)
					}
				}
				// Nothing may appear outside the work directory either.
				if m, _ := filepath.Glob("/tmp/srt-e2e-escape-*"); len(m) > 0 {
					t.Errorf("created on the host: %v", m)
				}
			})
		}
	})
}

// TestSymlinkedWriteRoot checks that an allowWrite entry that is a
// symbolic link makes its target writable (the resolved form), and that a
// deny spelled through a link protects the real file.
func TestSymlinkedRules(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		w := u.workDir(t)
		u.write(t, filepath.Join(w, "real/secret.txt"), "s\n")
		u.write(t, filepath.Join(w, "real/ro.txt"), "ro\n")
		u.write(t, filepath.Join(w, "proj/link"), "->../real")
		proj := filepath.Join(w, "proj")
		settings := `{"filesystem":{"allowWrite":["./link"],"denyRead":["./link/secret.txt"],"denyWrite":["./link/ro.txt"]}}`
		r := srtRun{u: u, dir: proj, settings: settings, args: []string{"sh", "-c",
			`echo ok > link/new && cat link/new; cat ../real/secret.txt; echo x >> ../real/ro.txt; echo x >> link/ro.txt`}}
		r.argv(t)
		before := snapshot(t, w)
		out, errOut, code := r.run(t)
		if code != 2 || out != "ok\n" {
			t.Errorf("status %d stdout %q, want 2 and %q; stderr %s", code, out, "ok\n", errOut)
		}
		if strings.Count(errOut, errEROFS) != 2 || !strings.Contains(errOut, errEACCES) {
			t.Errorf("stderr %q: want EACCES for the secret and EROFS twice", errOut)
		}
		assertUnchanged(t, w, before, filepath.Join(w, "real/new"))
	})
}
