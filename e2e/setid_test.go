package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSetIDRefused: a set-user-ID or set-group-ID file left in a write
// root outlives the sandbox; as root, `cp /bin/sh x && chmod 4755 x` is a
// root shell for any local user afterwards (issue 14, item 6). Every way
// of setting the bits is refused, with the creation-time rules on and
// off, and the host's files carry none.
func TestSetIDRefused(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		for _, mode := range []string{"rules-on", "rules-off"} {
			t.Run(mode, func(t *testing.T) {
				w := u.workDir(t)
				settings := `{"filesystem":{"allowWrite":["."]}}`
				if mode == "rules-off" {
					settings = `{"filesystem":{"allowWrite":["."],"enforceNamesAtCreation":false}}`
				}
				attacks := map[string]string{
					"chmod-4755":    `cp /bin/sh a && chmod 4755 a`,
					"chmod-u+s":     `cp /bin/sh b && chmod u+s b`,
					"chmod-g+s":     `cp /bin/sh c && chmod g+s c`,
					"install-4755":  `install -m 4755 /bin/sh d`,
					"open-creat":    `python3 -c 'import os; os.open("e", os.O_CREAT|os.O_WRONLY, 0o4755)'`,
					"fchmod":        `python3 -c 'import os,shutil; shutil.copy("/bin/sh","f"); fd=os.open("f", os.O_RDONLY); os.fchmod(fd, 0o6755)'`,
					"mknod-regular": `python3 -c 'import os,stat; os.mknod("g", stat.S_IFREG|0o4755)'`,
					"tmpfile-link":  `python3 -c 'import os; fd=os.open(".", os.O_TMPFILE|os.O_WRONLY, 0o4755); os.link("/proc/self/fd/%d" % fd, "h")'`,
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
					if err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
						t.Errorf("host file %s has mode %v after the run", e.Name(), fi.Mode())
					}
				}
			})
		}
	})
}
