package e2e

import (
	"strings"
	"testing"
)

// TestCreationUmaskTracked: srt creates every file for the command with
// the caller's umask, which it keeps from the umask(2) calls it is told of
// (sandbox/linux/supervisor/umask_linux.go) instead of reading /proc each
// time. A mask kept too long would be laxer than the command asked for
// (a private key created 0644), so every way a umask changes is tried:
// the same process after a first create, a second thread of a process
// (threads share one), a forked child (it inherits a copy, and its own
// change does not reach its parent), and many short-lived processes
// (thread IDs are reused).
func TestCreationUmaskTracked(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		script := `umask 022; touch a1; umask 077; touch a2; umask 027; mkdir d3; umask 022; touch a4
stat -c "%n=%a" a1 a2 d3 a4
python3 - <<'PY'
import os, threading
os.umask(0o022)
open("t0", "w").close()             # the main thread's mask is now known
def set_mask():
    os.umask(0o077)                 # a second thread changes the process's mask
t = threading.Thread(target=set_mask); t.start(); t.join()
open("t1", "w").close()             # the main thread creates with it
def create(name):
    open(name, "w").close()
t = threading.Thread(target=create, args=("t2",)); t.start(); t.join()
pid = os.fork()
if pid == 0:
    os.umask(0o027)
    open("c1", "w").close()
    os._exit(0)
os.waitpid(pid, 0)
open("t3", "w").close()             # the child's change is its own
for i in range(200):                # thread IDs go round
    pid = os.fork()
    if pid == 0:
        os.umask(0o077 if i % 2 else 0o022)
        open("r%d" % i, "w").close()
        os._exit(0)
    os.waitpid(pid, 0)
bad = [i for i in range(200) if os.stat("r%d" % i).st_mode & 0o777 != (0o600 if i % 2 else 0o644)]
print("reused-bad=%d" % len(bad))
PY
stat -c "%n=%a" t0 t1 t2 c1 t3`
		out, stderr, code := sh(t, u, dir, `{"filesystem": {"allowWrite": ["."]}}`, script)
		for _, want := range []string{"a1=644", "a2=600", "d3=750", "a4=644", "t0=644", "t1=600", "t2=600", "c1=640", "t3=600", "reused-bad=0"} {
			if !strings.Contains(out, want+"\n") {
				t.Errorf("want %q in stdout", want)
			}
		}
		if t.Failed() {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
		}
	})
}
