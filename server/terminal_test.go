//go:build linux

package server

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/srt-go/srt/client"
	"github.com/srt-go/srt/port"
)

// screen collects a terminal's output in the background.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func (s *screen) waitMatch(t *testing.T, re *regexp.Regexp) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if re.MatchString(s.String()) {
			return
		}
	}
	t.Fatalf("no %s in the terminal output:\n%q", re, s.String())
}

// typeAndRead is the terminal scenario of issue 6: type commands, read
// their output, resize, exit.
func typeAndRead(t *testing.T, c *client.Client, req client.TerminalRequest, want port.Backend) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	term, err := c.OpenTerminal(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	if term.Info.Backend != want {
		t.Fatalf("terminal backend %q; want %q", term.Info.Backend, want)
	}
	var out screen
	copied := make(chan struct{})
	go func() { io.Copy(&out, term); close(copied) }()

	// Keystrokes typed before the shell set up its line editor are echoed
	// by the line discipline and again by readline: wait for a prompt.
	out.waitMatch(t, regexp.MustCompile(`[#$] $`))
	term.Write([]byte("echo $((6*7))\n"))
	out.waitMatch(t, regexp.MustCompile(`[\r\n]42\r?\n`))
	term.Write([]byte("stty size\n"))
	out.waitMatch(t, regexp.MustCompile(`[\r\n]24 80\r?\n`))
	if err := term.Resize(100, 30); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the resize frame and the keystrokes travel separately
	term.Write([]byte("stty size\n"))
	out.waitMatch(t, regexp.MustCompile(`[\r\n]30 100\r?\n`))
	term.Write([]byte("exit 3\n"))
	code, err := term.Wait()
	<-copied
	if err != nil || code != 3 {
		t.Errorf("exit: %d %v; want 3", code, err)
	}
	if strings.Count(out.String(), "echo $((6*7))") > 1 {
		t.Errorf("keystrokes echoed twice:\n%q", out.String())
	}
}

func TestTerminalHostShell(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Terminal = TerminalConfig{Shell: "/bin/bash", Home: t.TempDir()} })
	typeAndRead(t, e.c, client.TerminalRequest{Cwd: t.TempDir()}, port.BackendNone)
}

// TestTerminalClientGone: dropping the WebSocket kills the shell and what
// it started in the background.
func TestTerminalClientGone(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Terminal = TerminalConfig{Shell: "/bin/bash", Home: t.TempDir()} })
	ctx := context.Background()
	term, err := e.c.OpenTerminal(ctx, client.TerminalRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var out screen
	go io.Copy(&out, term)
	term.Write([]byte("sleep 1000 & echo bg=$!\n"))
	re := regexp.MustCompile(`bg=(\d+)`)
	out.waitMatch(t, re)
	bg := re.FindStringSubmatch(out.String())[1]
	term.Close()
	waitFor(t, "the shell and its job to die", func() bool {
		return !alive(term.Info.Pid) && !alive(atoi(bg))
	})
	waitFor(t, "the terminal to be forgotten", func() bool {
		e.srv.mu.Lock()
		defer e.srv.mu.Unlock()
		return len(e.srv.terminals) == 0
	})
}

func TestTerminalAttachTimeout(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.AttachTimeout = 200 * time.Millisecond })
	info := e.newTerminal(t, `{}`)
	waitFor(t, "the unattached shell to die", func() bool { return !alive(info.Pid) })
}

func TestTerminalRefusals(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct {
		name, body string
		status     int
	}{
		{"microvm-fails-loudly", `{"backend":"microvm"}`, 503},
		{"unknown-backend", `{"backend":"vm"}`, 400},
		{"relative-cwd", `{"cwd":"x"}`, 400},
		{"missing-cwd", `{"cwd":"/nonexistent/dir"}`, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, body := e.req(t, "POST", "/v1/terminals", testToken, tc.body); code != tc.status {
				t.Errorf("%d %s; want %d", code, body, tc.status)
			}
		})
	}
}

// TestTerminalNative runs the scenario in a sandboxed shell, then checks
// the terminal profile from inside: the workdir and $HOME writable,
// ~/.ssh unreadable, the rest of the host read-only.
func TestTerminalNative(t *testing.T) {
	if out, err := exec.Command("bwrap", "--ro-bind", "/", "/", "--unshare-user", "true").CombinedOutput(); err != nil {
		t.Skipf("bubblewrap cannot run here: %v %s", err, out)
	}
	home := t.TempDir()
	os.MkdirAll(home+"/.ssh", 0o700)
	os.WriteFile(home+"/.ssh/id_ed25519", []byte("SECRET-KEY"), 0o600)
	work := t.TempDir()
	e := newEnv(t, func(c *Config) { c.Terminal = TerminalConfig{Shell: "/bin/bash", Home: home} })
	typeAndRead(t, e.c, client.TerminalRequest{Backend: "native", Cwd: work}, port.BackendNative)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	term, err := e.c.OpenTerminal(ctx, client.TerminalRequest{Backend: "native", Cwd: work})
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	var out screen
	go io.Copy(&out, term)
	out.waitMatch(t, regexp.MustCompile(`[#$] $`))
	other := t.TempDir()
	term.Write([]byte("touch w1 && echo W=ok; touch ~/h1 && echo H=ok; cat ~/.ssh/id_ed25519; touch " + other + "/x || echo O=refused; echo D=$SANDBOX_RUNTIME\n"))
	out.waitMatch(t, regexp.MustCompile(`D=1`))
	s := out.String()
	for _, want := range []string{"W=ok", "H=ok", "O=refused"} {
		if !strings.Contains(s, want) {
			t.Errorf("no %s in\n%q", want, s)
		}
	}
	if strings.Contains(s, "SECRET-KEY") {
		t.Errorf("~/.ssh was readable:\n%q", s)
	}
	if _, err := os.Stat(work + "/w1"); err != nil {
		t.Errorf("workdir write did not land on the host: %v", err)
	}
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if b, err := os.ReadFile("/proc/" + itoa(pid) + "/stat"); err == nil {
		// A zombie is dead; it waits for its parent only.
		if i := bytes.LastIndexByte(b, ')'); i > 0 && len(b) > i+2 && b[i+2] == 'Z' {
			return false
		}
	}
	return syscall.Kill(pid, 0) == nil
}

func itoa(i int) string { return strconv.Itoa(i) }
func atoi(s string) int { i, _ := strconv.Atoi(s); return i }
