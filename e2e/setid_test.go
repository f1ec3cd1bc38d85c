package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSetIDRefused: a set-user-ID or set-group-ID file left in a write
// root outlives the sandbox; as root, `cp /bin/sh x && chmod 4755 x` is a
// root shell for any local user afterwards (issue 14, item 6). So does a
// world-writable directory (another user replaces what it holds) or an
// ACL. Every way of setting them is refused, with the creation-time rules
// on and off, and the host's files carry none.
func TestSetIDRefused(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		for _, mode := range []string{"rules-on", "rules-off"} {
			t.Run(mode, func(t *testing.T) {
				w := u.workDir(t)
				settings := modeSettings(mode, `"allowWrite":["."]`)
				attacks := map[string]string{
					"chmod-4755":    `cp /bin/sh a && chmod 4755 a`,
					"chmod-u+s":     `cp /bin/sh b && chmod u+s b`,
					"chmod-g+s":     `cp /bin/sh c && chmod g+s c`,
					"install-4755":  `install -m 4755 /bin/sh d`,
					"open-creat":    `python3 -c 'import os; os.open("e", os.O_CREAT|os.O_WRONLY, 0o4755)'`,
					"fchmod":        `python3 -c 'import os,shutil; shutil.copy("/bin/sh","f"); fd=os.open("f", os.O_RDONLY); os.fchmod(fd, 0o6755)'`,
					"mknod-regular": `python3 -c 'import os,stat; os.mknod("g", stat.S_IFREG|0o4755)'`,
					"tmpfile-link":  `python3 -c 'import os; fd=os.open(".", os.O_TMPFILE|os.O_WRONLY, 0o4755); os.link("/proc/self/fd/%d" % fd, "h")'`,
					// World write lets another local user replace what a
					// write root or .git holds after the run.
					"chmod-0777-dir": `mkdir -p i && chmod 0777 i`,
					"chmod-o+w-root": `chmod o+w .`,
					"chmod-o+w-file": `touch j && chmod o+w j`,
					// An ACL grants what chmod cannot; a capability xattr
					// gives a binary capabilities.
					"setxattr-acl":  `touch k && python3 -c 'import os; os.setxattr("k", "system.posix_acl_access", b"\x02\x00\x00\x00\x01\x00\x06\x00\xff\xff\xff\xff\x04\x00\x06\x00\xff\xff\xff\xff\x20\x00\x06\x00\xff\xff\xff\xff")'`,
					"setxattr-user": `touch l && python3 -c 'import os; os.setxattr("l", "user.x", b"1")'`,
				}
				if mode == "rules-on" {
					// The creation-time rules take others' write out of a
					// creation mode even with umask 0.
					attacks["umask0-mkdir"] = `umask 0 && mkdir m && test "$(stat -c %a m)" = 777`
					attacks["umask0-create"] = `umask 0 && python3 -c 'import os; os.close(os.open("n", os.O_CREAT|os.O_WRONLY, 0o666))' && test "$(stat -c %a n)" = 666`
				}
				var script strings.Builder
				for name, a := range attacks {
					script.WriteString("(" + a + ") 2>/dev/null && echo ESCAPED " + name + "\n")
				}
				script.WriteString("chmod 755 a && echo plain-chmod-ok\n")
				out, errOut, _ := sh(t, u, w, settings, script.String())
				if strings.Contains(out, "ESCAPED") {
					t.Errorf("a set-id bit was set inside the sandbox:\n%s", out)
				}
				if !strings.Contains(out, "plain-chmod-ok") {
					t.Errorf("an ordinary chmod failed: stdout %q stderr %s", out, errOut)
				}
				ents, err := os.ReadDir(w)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range ents {
					fi, err := os.Lstat(filepath.Join(w, e.Name()))
					if err == nil && (fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 || fi.Mode().Perm()&0o002 != 0 && mode == "rules-on") {
						t.Errorf("host file %s has mode %v after the run", e.Name(), fi.Mode())
					}
				}
			})
		}
	})
}
