package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// Creation-time name rules (filesystem.enforceNamesAtCreation, issue 8):
// srt performs every call that brings a name into being and refuses the
// ones a write-deny glob or a mandatory name forbids, at any depth.

const creationSettings = `{"filesystem": {"allowWrite": ["."], "enforceNamesAtCreation": true,
  "denyWrite": ["**/.env", "**/*.key", "secrets/**"]}}`

// creationMatrix is run by python3 in the sandbox: every rule class × every
// way a name comes into being × depths 0, 1, 5, 12. It prints one line per
// attempt that succeeded ("LANDED …") or failed with an unexpected errno.
const creationMatrix = `
import os, ctypes, errno, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
RENAME_EXCHANGE = 2
def tmpfile_link(d, t):
    fd = os.open(d or ".", os.O_TMPFILE | os.O_WRONLY, 0o644)
    try:
        if libc.linkat(AT_FDCWD, ("/proc/self/fd/%d" % fd).encode(), AT_FDCWD, t.encode(), 0x400) != 0:
            e = ctypes.get_errno(); raise OSError(e, os.strerror(e))
    finally:
        os.close(fd)
def exchange(a, b):
    if libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), RENAME_EXCHANGE) != 0:
        e = ctypes.get_errno(); raise OSError(e, os.strerror(e))
bad = 0
def attempt(way, target, f):
    global bad
    try:
        f()
    except OSError as e:
        if e.errno not in (errno.EACCES, errno.EPERM):
            print("ERRNO", way, target, e); bad += 1
        return
    print("LANDED", way, target); bad += 1
n = 0
for depth in (0, 1, 5, 12):
    pre = "".join("d%d/" % i for i in range(depth))
    if pre: os.makedirs(pre, exist_ok=True)
    os.makedirs(pre + "r/.git/hooks", exist_ok=True)   # a new repository's hooks dir: allowed
    targets = [pre + ".env", pre + "x.key", pre + ".bashrc", pre + ".vscode", pre + "r/.git/hooks/post-checkout", pre + "r/.git/config"]
    if depth == 0: targets.append("secrets")
    for t in targets:
        n += 1
        src = "%sstage%d" % (pre, n)
        open(src, "w").write("x")
        attempt("create", t, lambda: os.close(os.open(t, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o755)))
        attempt("creat-trunc", t, lambda: os.close(os.open(t, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o644)))
        attempt("mkdir", t, lambda: os.mkdir(t))
        attempt("mknod", t, lambda: os.mknod(t, 0o100644))
        attempt("rename-to", t, lambda: os.rename(src, t))
        attempt("link", t, lambda: os.link(src, t))
        attempt("symlink", t, lambda: os.symlink(src, t))
        attempt("tmpfile-link", t, lambda: tmpfile_link(pre, t))
        hl = "%shl%d" % (pre, n)
        os.symlink(src, hl)
        attempt("hardlink-symlink", t, lambda: os.link(hl, t, follow_symlinks=False))
        os.unlink(hl)
        ln = "%slnk%d" % (pre, n)
        os.symlink(os.path.basename(t) if "/" not in t[len(pre):] else t[len(pre):], ln)
        attempt("through-symlink", t, lambda: os.close(os.open(ln, os.O_CREAT | os.O_WRONLY, 0o644)))
        os.unlink(ln)
    # A directory renamed into place, or exchanged, with a hook inside.
    os.makedirs(pre + "tmpd/hooks", exist_ok=True)
    open(pre + "tmpd/hooks/post-checkout", "w").write("#!/bin/sh\n")
    attempt("rename-dir", pre + "q/.git", lambda: (os.makedirs(pre + "q", exist_ok=True), os.rename(pre + "tmpd", pre + "q/.git")))
    os.makedirs(pre + "e/.git", exist_ok=True)
    attempt("exchange", pre + "e/.git", lambda: exchange(pre + "tmpd", pre + "e/.git"))
    attempt("exchange-back", pre + "e/.git", lambda: exchange(pre + "e/.git", pre + "tmpd"))
    # The source end: a new repository's hooks directory cannot move away.
    attempt("rename-from", pre + "r/.git/hooks", lambda: os.rename(pre + "r/.git/hooks", pre + "r/.git/h2"))
# Allowed: a hook sample, ordinary files.
open("r/.git/hooks/pre-commit.sample", "w").write("#!/bin/sh\n")
open("ok.txt", "w").write("ok")
print("attempts", n, "bad", bad)
sys.exit(1 if bad else 0)
`

// deniedOnHost walks dir and returns every path a rule of creationSettings
// (or a mandatory name created by the script) matches.
func deniedOnHost(t *testing.T, dir string) []string {
	t.Helper()
	pats := []string{"**/.env", "**/*.key", "secrets", "secrets/**", "**/.bashrc", "**/.vscode", "**/.git/hooks/post-checkout", "**/.git/config"}
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		for _, pat := range pats {
			if ok, _ := doublestar.Match(pat, rel); ok {
				out = append(out, rel)
			}
		}
		return nil
	})
	return out
}

func TestCreationRules(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		stdout, stderr, code := runSrt(t, u, dir, creationSettings, "python3", "-c", creationMatrix)
		if code != 0 || !strings.Contains(stdout, "bad 0") {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		if got := deniedOnHost(t, dir); len(got) > 0 {
			t.Errorf("denied names on the host: %v", got)
		}
		if _, err := os.Stat(filepath.Join(dir, "r/.git/hooks/pre-commit.sample")); err != nil {
			t.Errorf("a hook sample should be creatable: %v", err)
		}
		if !strings.Contains(stderr, "file-write-create") {
			t.Errorf("no violation reported:\n%s", stderr)
		}
	})
}

// TestCreationNewRepository: a repository created during the run gets no
// hook and no dangerous config, and git keeps working.
func TestCreationNewRepository(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		script := `set -u
git init -q x || exit 10
echo 'exec evil' > x/.git/hooks/post-checkout && exit 11
cp x/.git/hooks/pre-commit.sample x/.git/hooks/pre-commit && exit 12
mv x/.git/hooks/pre-commit.sample x/.git/hooks/pre-commit && exit 13
cd x
git config user.email a@b && git config user.name n || exit 14
echo a > f && git add f && git commit -qm one || exit 15
git config core.hooksPath /tmp && exit 16
git config core.fsmonitor evil && exit 17
test -e .git/config.lock && exit 18
git log --oneline | grep -q one || exit 19
cd ..
echo "gitdir: x/.git" > .git && exit 25
mkdir sub && echo "gitdir: ../x/.git" > sub/.git && exit 26
git init -q --separate-git-dir=gd wt 2>/dev/null && exit 28
git init -q z && mv z/.git g || exit 29
printf '#!/bin/sh\necho HOOK\n' > g/hooks/pre-commit 2>/dev/null && exit 30
mkdir -p h/hooks && printf '#!/bin/sh\necho HOOK\n' > h/hooks/pre-commit && chmod +x h/hooks/pre-commit || exit 31
chmod 000 h && mv h z/.git 2>/dev/null && exit 27
chmod 755 h
git init -q src && git -C src -c user.email=a@b -c user.name=n commit -q --allow-empty -m one || exit 24
git clone -q src y || exit 20
git -C y log --oneline | grep -q one || exit 21
mkdir -p pkg && printf '{"name":"pkg","version":"1.0.0"}' > pkg/package.json
mkdir app && cd app && printf '{"name":"app","version":"1.0.0"}' > package.json
HOME=$TMPDIR npm install --offline --no-audit --no-fund ../pkg >/dev/null 2>&1 || exit 22
test -f node_modules/pkg/package.json || exit 23
echo ok`
		stdout, stderr, code := sh(t, u, dir, creationSettings, script)
		if code != 0 || !strings.Contains(stdout, "ok") {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		for _, p := range []string{"x/.git/hooks/post-checkout", "x/.git/hooks/pre-commit", "x/.git/config.lock", ".git", "sub/.git", "wt/.git", "z/.git/hooks/pre-commit"} {
			if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
				t.Errorf("%s exists on the host", p)
			}
		}
		b, _ := os.ReadFile(filepath.Join(dir, "x/.git/config"))
		if strings.Contains(string(b), "hooksPath") || strings.Contains(string(b), "fsmonitor") || !strings.Contains(string(b), "email = a@b") {
			t.Errorf("x/.git/config:\n%s", b)
		}
	})
}

// TestCreationRace: one thread flips a path component between a directory
// and a symlink to a new repository's hooks directory while another
// creates through it; no hook may ever land.
func TestCreationRace(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		script := `
import os, threading
os.makedirs("r/.git/hooks"); os.makedirs("real")
stop = False
def flip():
    while not stop:
        try:
            os.rename("real", "hold"); os.symlink("r/.git/hooks", "d"); os.unlink("d"); os.rename("hold", "real")
        except OSError:
            pass
        try:
            os.symlink("real", "d")
        except OSError:
            pass
        try:
            os.unlink("d")
        except OSError:
            pass
th = threading.Thread(target=flip); th.start()
made = 0
for i in range(3000):
    for name in ("d/post-checkout", "d/pre-commit"):
        try:
            os.close(os.open(name, os.O_CREAT | os.O_WRONLY, 0o755)); made += 1
        except OSError:
            pass
    try:
        os.mkdir("d/pre-push"); made += 1
    except OSError:
        pass
stop = True; th.join()
print("made", made)
`
		stdout, stderr, code := runSrt(t, u, dir, creationSettings, "python3", "-c", script)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		ents, _ := os.ReadDir(filepath.Join(dir, "r/.git/hooks"))
		if len(ents) != 0 {
			t.Errorf("hooks landed: %v (%s)", ents, stdout)
		}
		t.Log(strings.TrimSpace(stdout))
	})
}

// TestCreationDefault: without the key the rules are on (this kernel has
// what they need) and no placeholder is made: a protected name that does
// not exist is refused when it is created, at the top as at any depth.
// With the key false, a .env created later is not refused (documented).
func TestCreationDefault(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		out, stderr, code := sh(t, u, dir, `{"filesystem": {"allowWrite": ["."], "denyWrite": ["**/.env"]}}`,
			`ls -A; mkdir a && echo x > a/.env; echo "env=$?"; echo x > .bashrc; echo "bashrc=$?"`)
		if code != 0 || !strings.Contains(out, "env=2") || !strings.Contains(out, "bashrc=2") {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
		}
		if first, _, _ := strings.Cut(out, "env="); strings.TrimSpace(first) != settingsName {
			t.Errorf("placeholders in the working directory: %q", first)
		}
		if _, err := os.Lstat(filepath.Join(dir, "a/.env")); err == nil {
			t.Error("a/.env landed on the host")
		}
		dir = u.workDir(t)
		_, stderr, code = sh(t, u, dir, `{"filesystem": {"allowWrite": ["."], "denyWrite": ["**/.env"], "enforceNamesAtCreation": false}}`, "mkdir a && echo x > a/.env")
		if code != 0 {
			t.Fatalf("opt-out: exit %d: %s", code, stderr)
		}
	})
}

// TestCreationCompat: what programs do with write opens must keep working
// when srt performs them — /dev/stdout, /dev/fd/N, /proc/self/fd/N (a
// pipe here), /dev/null, a FIFO whose reader comes later, the caller's
// umask — and an existing protected file below the mounts' search depth
// can be neither written, truncated nor given a second name.
func TestCreationCompat(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		deep := filepath.Join(dir, "a/b/c/d/e")
		u.write(t, filepath.Join(deep, ".bashrc"), "# host\n")
		// The braces' pipe is made in the sandbox, as the user: a pipe
		// made by the test (root) cannot be reopened by another user,
		// with or without srt.
		script := `{
echo out1 > /dev/stdout; echo "stdout=$?"
echo err1 > /dev/stderr
echo out2 > /dev/fd/1; echo "fd=$?"
echo out3 > /proc/self/fd/1; echo "procfd=$?"
echo x > /dev/null; echo "null=$?"
echo x > /dev/tty 2>/dev/null; echo "tty=$?"
mkfifo p; { sleep 0.3; cat p; } & echo viafifo > p; wait; echo "fifo=$?"
(umask 077 && touch private && stat -c "mode=%a" private)
python3 -c 'import os, ctypes; fd = os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o600); os.write(fd, b"anon"); print("tmpfile=%d" % ctypes.CDLL(None).linkat(-100, b"/proc/self/fd/%d" % fd, -100, b"named", 0x400))'; cat named; echo
mkfifo f2; python3 -c 'import os; fd = os.open("f2", os.O_RDONLY | os.O_CREAT); print("reader", os.read(fd, 9).decode())' & sleep 0.3; touch during-wait && echo toreader > f2; wait; echo "fifo-read=$?"
python3 -c '
import os, ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
how = (ctypes.c_uint64 * 3)(0, 0, 0)
r = libc.syscall(437, -100, b"ok.txt", ctypes.byref(how), 24)
print("openat2=%s" % errno.errorcode.get(ctypes.get_errno(), r))
for flags, name in ((os.O_WRONLY, "dot"), (os.O_CREAT | os.O_WRONLY, "slash")):
    try:
        os.open("." if name == "dot" else "nd/", flags, 0o644); print(name + "=opened")
    except OSError as e:
        print(name + "=" + errno.errorcode[e.errno])
for target, flags in (("/proc/1/mem", os.O_RDWR), ("/proc/1/maps", os.O_RDONLY | os.O_CREAT)):
    p = os.open(target, os.O_PATH)
    try:
        os.open("/proc/self/fd/%d" % p, flags); print("proc1=opened " + target)
    except OSError as e:
        print("proc1=" + errno.errorcode[e.errno])
'
echo x > a/b/c/d/e/.bashrc; echo "write=$?"
truncate -s 0 a/b/c/d/e/.bashrc; echo "truncate=$?"
ln a/b/c/d/e/.bashrc hard; echo "link=$?"
python3 -c 'import os; os.link("a/b/c/d/e/.bashrc", "hard2")'; echo "pylink=$?"
} 2>&1 | cat`
		out, stderr, code := sh(t, u, dir, `{"filesystem": {"allowWrite": ["."]}}`, script)
		for _, want := range []string{"out1", "stdout=0", "out2", "fd=0", "out3", "procfd=0", "null=0", "tty=2",
			"viafifo", "fifo=0", "mode=600", "tmpfile=0", "anon",
			"reader toreader", "fifo-read=0", "openat2=ENOSYS", "dot=EISDIR", "slash=EISDIR", "proc1=EACCES", "write=2", "truncate=1", "link=1", "pylink=1"} {
			if !strings.Contains(out, want+"\n") {
				t.Errorf("want %q in stdout", want)
			}
		}
		if !strings.Contains(out, "err1") {
			t.Errorf("/dev/stderr: want err1")
		}
		if t.Failed() {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
		}
		if b, _ := os.ReadFile(filepath.Join(deep, ".bashrc")); string(b) != "# host\n" {
			t.Errorf("deep .bashrc changed on the host: %q", b)
		}
		for _, p := range []string{"hard", "hard2"} {
			if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
				t.Errorf("%s: a second name for a protected file", p)
			}
		}
	})
}

// TestCreationTTY: /dev/tty opened in the sandbox is the command's own
// terminal (the pty srt gave it), not srt's.
func TestCreationTTY(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		r := srtRun{u: u, dir: dir, settings: writeSettings, args: []string{"python3", "-c",
			"import os; fd = os.open('/dev/tty', os.O_RDWR); os.write(fd, b'via-tty\\n'); print('same' if os.fstat(fd).st_rdev == os.fstat(0).st_rdev else 'other')"}}
		out := inTerminal(t, u, dir, shellJoin(r.argv(t))+"; echo rc=$?")
		if !strings.Contains(out, "via-tty") || !strings.Contains(out, "same") || !strings.Contains(out, "rc=0") {
			t.Fatalf("terminal output:\n%s", out)
		}
	})
}

// TestCreationUnderSignals: signals reaching srt while it hands a new
// descriptor to the command must not change what the command's open
// returns. (Interrupted, SECCOMP_IOCTL_NOTIF_ADDFD with ..._FLAG_SEND
// leaves the call replied with 0: open "returned" descriptor 0.)
func TestCreationUnderSignals(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		script := `
import os
bad = 0
for i in range(3000):
    fd = os.open("f%d" % i, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
    if fd < 3:
        bad += 1
        continue
    try:
        os.write(fd, b"x")
    except OSError:
        bad += 1
    os.close(fd)
print("bad", bad)
`
		r := srtRun{u: u, dir: dir, settings: writeSettings, args: []string{"python3", "-c", script}}
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		cmd := u.command(ctx, dir, nil, r.argv(t)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		sent := 0
		go func() {
			for {
				select {
				case <-stop:
					return
				default:
					// SIGURG, to every thread of srt: what the Go runtime
					// sends its own threads to preempt them, harmless to
					// srt otherwise.
					pid := cmd.Process.Pid
					tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
					for _, task := range tasks {
						if tid, err := strconv.Atoi(task.Name()); err == nil {
							syscall.Tgkill(pid, tid, syscall.SIGURG)
							sent++
						}
					}
					time.Sleep(50 * time.Microsecond)
				}
			}
		}()
		err := cmd.Wait()
		close(stop)
		if err != nil || !strings.Contains(out.String(), "bad 0") {
			t.Fatalf("%v; %d signals sent:\n%s", err, sent, out.String())
		}
	})
}

// TestCreationExecAfterWrite: a program written and closed can be run at
// once, as a build does with what it links: srt's own copy of the new
// descriptor must be closed before the open returns, or execve fails with
// ETXTBSY.
func TestCreationExecAfterWrite(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		script := `
import os, subprocess
bad = 0
for i in range(1000):
    p = "prog%d" % (i % 4)
    fd = os.open(p, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o755)
    os.write(fd, b"#!/bin/sh\nexit 0\n")
    os.close(fd)
    try:
        subprocess.run(["./" + p], check=True)
    except OSError as e:
        bad += 1
    os.unlink(p)
print("bad", bad)
`
		out, errOut, code := runSrt(t, u, dir, writeSettings, "python3", "-c", script)
		if code != 0 || !strings.Contains(out, "bad 0") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
	})
}

// TestCreationLease: an open that waits for a lease to be broken waits
// alone: other creations in the sandbox go on meanwhile.
func TestCreationLease(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		script := `
import fcntl, os, subprocess, sys, time
open("leased", "w").write("x")
holder = subprocess.Popen([sys.executable, "-c", """
import fcntl, os, signal, time
signal.signal(signal.SIGIO, signal.SIG_IGN)
fd = os.open("leased", os.O_RDONLY)
fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
print("held", flush=True)
time.sleep(2)
"""], stdout=subprocess.PIPE)
holder.stdout.readline()
writer = subprocess.Popen([sys.executable, "-c", "import os; os.open('leased', os.O_WRONLY); open('opened', 'w').close()"])
# The same through a descriptor the writer holds (/proc/self/fd/N).
writer2 = subprocess.Popen([sys.executable, "-c", "import os; fd = os.open('leased', os.O_RDONLY); os.open('/proc/self/fd/%d' % fd, os.O_WRONLY); open('opened2', 'w').close()"])
time.sleep(0.3)
open("other", "w").write("y")   # must not wait for the lease
print("other done; writer opened: %s" % (os.path.exists("opened") or os.path.exists("opened2")))
writer.wait(); writer2.wait(); holder.wait()
print("writer opened: %s" % (os.path.exists("opened") and os.path.exists("opened2")))
`
		out, errOut, code := runSrt(t, u, dir, writeSettings, "python3", "-c", script)
		if code != 0 || !strings.Contains(out, "other done; writer opened: False") || !strings.Contains(out, "\nwriter opened: True") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
	})
}

// TestCreationGlobMetachars: a working directory whose name holds glob
// syntax ("p[x]") does not turn the relative rules into patterns that
// match nothing there.
func TestCreationGlobMetachars(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := filepath.Join(u.workDir(t), "p[x]{y}*")
		u.write(t, filepath.Join(dir, "pre.key"), "orig\n")
		out, errOut, code := runSrt(t, u, dir, `{"filesystem":{"allowWrite":["."],"denyWrite":["**/.env","*.key","secrets/**"]}}`, "sh", "-c",
			`echo x > .env; echo "env=$?"; echo x > new.key; echo "key=$?"; echo x >> pre.key; echo "pre=$?"; mkdir -p secrets; echo x > secrets/y; echo "secret=$?"`)
		for _, want := range []string{"env=2", "key=2", "pre=2", "secret=2"} {
			if !strings.Contains(out, want) {
				t.Errorf("want %s", want)
			}
		}
		if t.Failed() {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "pre.key")); string(b) != "orig\n" {
			t.Errorf("pre.key changed: %q", b)
		}
	})
}

// TestCreationStateDir: with a write root that holds srt's state
// directory (allowWrite the temporary directory it lives in), the command
// can neither change it nor move it away to make a host directory where
// its private TMPDIR was. The temporary directory is the test's own
// (TMPDIR), not the shared /tmp, where other tests' directories come and
// go while srt plans its mounts (srt then refuses to run, fail closed).
func TestCreationStateDir(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		tmp := u.workDir(t)
		out, errOut, code := srtRun{u: u, dir: dir, env: []string{"TMPDIR=" + tmp},
			settings: fmt.Sprintf(`{"filesystem":{"allowWrite":[%q],"denyWrite":["**/*.key"]}}`, tmp),
			args:     []string{"sh", "-c", `s=$(dirname "$TMPDIR"); mv "$s" "$s.moved"; echo "mv=$?"; touch "$s/planted"; echo "plant=$?"; echo x > "$TMPDIR/ok.key"; echo "tmpkey=$?"`}}.run(t)
		for _, want := range []string{"mv=1", "plant=1", "tmpkey=0"} {
			if !strings.Contains(out, want) {
				t.Errorf("want %s", want)
			}
		}
		if t.Failed() {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
	})
}

// TestCreationGitInitHere: git init works in the working directory itself
// (no placeholder stands for its .git any more), its hooks stay empty, and
// in the repository that then exists, .git/config is read-only and a
// refused git config is recorded.
func TestCreationGitInitHere(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		out, errOut, code := sh(t, u, dir, writeSettings, `git init -q && git -c user.email=a@b -c user.name=n commit -q --allow-empty -m one && git config user.email a@b && echo INIT-OK
echo '#!/bin/sh' > .git/hooks/pre-commit && echo HOOK-WRITTEN; true`)
		if code != 0 || !strings.Contains(out, "INIT-OK") || strings.Contains(out, "HOOK-WRITTEN") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		vfile := filepath.Join(u.workDir(t), "v.jsonl")
		out, errOut, _ = srtRun{u: u, dir: dir, settings: writeSettings, pre: []string{"--violations", vfile},
			args: []string{"sh", "-c", "git config user.name evil && echo CONFIG-WRITTEN"}}.run(t)
		if strings.Contains(out, "CONFIG-WRITTEN") || !strings.Contains(errOut, ".git/config") {
			t.Fatalf("existing repository's config: stdout %s\nstderr: %s", out, errOut)
		}
	})
}

// TestCreationBareRepository: a directory git treats as a repository
// without being named .git (HEAD, objects/, refs/: git init --bare, or
// made by hand) gets the rules of a new .git: host git run in it later
// finds no hook and no dangerous config.
func TestCreationBareRepository(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		script := `git init -q --bare b1 || exit 10
git init -q src && git -C src -c user.email=a@b -c user.name=n commit -q --allow-empty -m one || exit 11
git clone -q --bare src b2 || exit 12
git clone -q --mirror src b3 || exit 13
git -C b1 config core.fsmonitor "touch PWNED" 2>/dev/null && exit 20
echo '#!/bin/sh' > b1/hooks/pre-receive 2>/dev/null && exit 21
mkdir m m/objects m/refs && printf '[core]\n\tfsmonitor = touch PWNED\n\tworktree = ..\n' > m/config || exit 14
echo 'ref: refs/heads/main' > m/HEAD 2>/dev/null && exit 22
mkdir n n/objects n/refs && echo 'ref: refs/heads/main' > n/HEAD || exit 15
printf '[core]\n\tfsmonitor = x\n' > n/config 2>/dev/null && exit 23
mkdir -p q/hooks q/objects q/refs && echo x > q/hooks/post-checkout && echo 'ref: refs/heads/main' > q/HEAD 2>/dev/null && exit 24
mkdir r r/objects r/refs && printf '[core]\n\tbare = true\n' > r/config && exec 3>>r/config || exit 16
echo 'ref: refs/heads/main' > r/HEAD || exit 17
printf '\tfsmonitor = touch PWNED\n' >&3; exec 3>&-
printf '\tfsmonitor = touch PWNED\n' >> r/config 2>/dev/null && exit 25
mkdir hk && echo x > hk/post-checkout && mv hk r/hooks 2>/dev/null && exit 26
mkdir -p c/objects c/refs && echo c > commondir 2>/dev/null && exit 27
mkdir x x/objects x/refs x/hooks x/.h && printf '[core]\n\tbare = true\n' > x/config && echo 'ref: refs/heads/main' > x/HEAD || exit 18
printf '[core]\n\tfsmonitor = touch PWNED\n' > x/.h/config && ln -s .h x/.lnk || exit 19
xchg() { python3 -c 'import ctypes, sys; sys.exit(ctypes.CDLL(None).renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 2) != 0)' "$1" "$2"; }
xchg x/config x/.h/config 2>/dev/null && exit 28
xchg x/.h/config x/config 2>/dev/null && exit 29
xchg x/hooks x/.lnk 2>/dev/null && exit 30
xchg x/.lnk x/hooks 2>/dev/null && exit 31
echo ok`
		out, errOut, code := sh(t, u, dir, writeSettings, script)
		if code != 0 || !strings.Contains(out, "ok") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		for _, p := range []string{"b1/hooks/pre-receive", "m/HEAD", "n/config", "q/HEAD"} {
			if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
				t.Errorf("%s exists on the host", p)
			}
		}
		if fi, err := os.Lstat(filepath.Join(dir, "x/hooks")); err != nil || !fi.IsDir() {
			t.Errorf("x/hooks is no longer a directory: %v", err)
		}
		for _, c := range []string{"b1/config", "r/config", "x/config"} {
			if b, _ := os.ReadFile(filepath.Join(dir, c)); strings.Contains(string(b), "fsmonitor") {
				t.Errorf("%s:\n%s", c, b)
			}
		}
	})
}
