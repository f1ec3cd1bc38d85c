package e2e

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// inTerminal runs a bash script under script(1), so that it has a
// pseudo-terminal as its stdin, stdout and stderr, and returns what was
// written to that terminal.
func inTerminal(t *testing.T, u *account, dir, script string) string {
	t.Helper()
	if _, err := exec.LookPath("script"); err != nil {
		t.Skipf("script(1) not installed (bsdutils): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := u.command(ctx, dir, nil, "script", "-qec", "bash -c '"+strings.ReplaceAll(script, "'", `'"'"'`)+"'", "/dev/null")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("script did not finish: %s", out)
	}
	if err != nil {
		t.Logf("script: %v", err)
	}
	return strings.ReplaceAll(string(out), "\r\n", "\n")
}

// TestTerminal checks that a command run from a terminal gets a terminal
// of its own (not the caller's), and that TIOCSTI from inside cannot push
// input into the caller's terminal: after srt exits, the caller's shell
// reads nothing.
func TestTerminal(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		t.Run("own-tty", func(t *testing.T) {
			t.Parallel()
			dir := u.workDir(t)
			r := srtRun{u: u, dir: dir, settings: writeSettings, args: []string{"sh", "-c", "echo inner=$(stat -L -c %t:%T /proc/self/fd/0); test -t 0 && test -t 1 && echo TTY"}}
			out := inTerminal(t, u, dir, "echo outer=$(stat -L -c %t:%T /proc/self/fd/0); "+shellJoin(r.argv(t))+"; echo rc=$?")
			outer := regexp.MustCompile(`outer=(\S+)`).FindStringSubmatch(out)
			inner := regexp.MustCompile(`inner=(\S+)`).FindStringSubmatch(out)
			if outer == nil || inner == nil || !strings.Contains(out, "TTY\n") || !strings.Contains(out, "rc=0") {
				t.Fatalf("unexpected terminal output:\n%s", out)
			}
			// Device numbers (major:minor, hex), since bwrap shows the
			// terminal as /dev/console inside.
			if inner[1] == outer[1] {
				t.Errorf("the command's terminal is the caller's (device %s): want a pty of its own", inner[1])
			}
		})
		t.Run("TIOCSTI", func(t *testing.T) {
			t.Parallel()
			dir := u.workDir(t)
			inject := `import fcntl, termios, sys
res = []
for fd in (0, 1, 2):
    try:
        for c in b"echo INJECTED\n":
            fcntl.ioctl(fd, termios.TIOCSTI, bytes([c]))
        res.append("ok")
    except OSError as e:
        res.append(e.strerror)
print("tiocsti=" + ",".join(res))`
			r := srtRun{u: u, dir: dir, settings: writeSettings, args: []string{"python3", "-c", inject}}
			// After srt exits, the caller reads its terminal for a second:
			// anything injected into it would show up as got=[...].
			out := inTerminal(t, u, dir, shellJoin(r.argv(t))+"; echo rc=$?; read -t 1 x; echo \"got=[$x]\"")
			if !strings.Contains(out, "rc=0") || !strings.Contains(out, "tiocsti=") {
				t.Fatalf("unexpected terminal output:\n%s", out)
			}
			if !strings.Contains(out, "got=[]") {
				t.Errorf("TIOCSTI from inside reached the caller's terminal:\n%s", out)
			}
			t.Logf("inside: %s", regexp.MustCompile(`tiocsti=\S*`).FindString(out))
		})
	})
}

// shellJoin quotes argv for a shell.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'"'"'`) + "'"
	}
	return strings.Join(q, " ")
}
