package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/srt-go/srt/client"
	"github.com/srt-go/srt/port"
)

// requireQEMUStrict fails, rather than skips, without QEMU or root,
// unless SRT_E2E_ALLOW_SKIP=1.
func requireQEMUStrict(t *testing.T) {
	t.Helper()
	why := ""
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		why = "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
	} else if os.Geteuid() != 0 {
		why = "the microvm terminal test runs as root"
	}
	if why == "" {
		return
	}
	if os.Getenv("SRT_E2E_ALLOW_SKIP") == "1" {
		t.Skip("SRT_E2E_ALLOW_SKIP=1 and " + why)
	}
	t.Fatal(why + " (set SRT_E2E_ALLOW_SKIP=1 to skip instead)")
}

// termDetails reads GET /v1/terminals/{id} raw: the client has no call
// for it.
func termDetails(t *testing.T, d *srtd, id string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("GET", d.url+"/v1/terminals/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var info struct {
		Backend string         `json:"backend"`
		Details map[string]any `json:"details"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET terminal: %d %v", resp.StatusCode, err)
	}
	if info.Backend != "microvm" {
		t.Fatalf("GET terminal: backend %q", info.Backend)
	}
	return info.Details
}

// listTree is every path under dir, relative.
func listTree(dir string) []string {
	var out []string
	filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if r, _ := filepath.Rel(dir, p); r != "." {
			out = append(out, r)
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// termSession types into a terminal and reads its output.
type termSession struct {
	t    *testing.T
	term *client.Terminal
	mu   sync.Mutex
	out  bytes.Buffer
}

func newTermSession(t *testing.T, term *client.Terminal) *termSession {
	s := &termSession{t: t, term: term}
	go func() {
		r := bufio.NewReader(term)
		for {
			b, err := r.ReadByte()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.out.WriteByte(b)
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *termSession) wait(re *regexp.Regexp) []string {
	s.t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		s.mu.Lock()
		m := re.FindStringSubmatch(s.out.String())
		s.mu.Unlock()
		if m != nil {
			return m
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.t.Fatalf("no %s in %q", re, s.out.String())
	return nil
}

// TestSrtdMicroVMTerminal: a terminal with backend microvm is a shell in
// a fresh VM, over the same WebSocket protocol: typing, output, resize,
// exit code; the VM (its QEMU) is gone once the shell exits or the client
// disconnects. $HOME is not shared (the guest cannot hide ~/.ssh inside a
// share), and a workdir holding a secret directory or srtd's token file
// is refused. The
// workdir is shared writable under the creation-time rules in the guest
// (issue 20): the review's attack from a VM shell (a new nested
// repository's pre-commit hook, sub/.bashrc, .vscode/tasks.json, the
// host repository's hook) is refused while an ordinary file is made, no
// placeholder appears on the host, the host tree holds no protected name
// afterwards, and the host's next git commit runs no hook.
func TestSrtdMicroVMTerminal(t *testing.T) {
	requireQEMUStrict(t)
	d := startSrtdVM(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if p := awaitMicroVMProbe(t, d); !p.MicroVMAvailable {
		t.Fatalf("probe %+v; want microvmAvailable", p)
	}

	t.Run("home-refused", func(t *testing.T) {
		_, err := d.c.OpenTerminal(ctx, client.TerminalRequest{Backend: port.BackendMicroVM, Cwd: os.Getenv("HOME")})
		if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), ".ssh") {
			t.Fatalf("a microvm terminal in $HOME: %v; want a 400 naming .ssh", err)
		}
	})

	t.Run("token-dir-refused", func(t *testing.T) {
		term, err := d.c.OpenTerminal(ctx, client.TerminalRequest{Backend: port.BackendMicroVM, Cwd: filepath.Dir(d.tokenF)})
		if err == nil {
			term.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "token") {
			t.Fatalf("a microvm terminal in the token file's directory: %v; want a 400 naming the token", err)
		}
	})

	open := func(t *testing.T, wd string) (*client.Terminal, *termSession, int) {
		t0 := time.Now()
		term, err := d.c.OpenTerminal(ctx, client.TerminalRequest{Backend: port.BackendMicroVM, Cwd: wd,
			Env: map[string]string{"PS1": "$ "}, Cols: 80, Rows: 24})
		if err != nil {
			t.Fatalf("open: %v\n%s", err, d.stderr())
		}
		t.Logf("microvm terminal open in %v", time.Since(t0))
		if term.Info.Backend != port.BackendMicroVM || term.Info.Pid != 0 {
			t.Fatalf("info %+v; want backend microvm and no host pid", term.Info)
		}
		det := termDetails(t, d, term.Info.ID)
		if h, _ := det["home"].(string); !strings.Contains(h, "not shared") {
			t.Errorf("details do not say $HOME is not shared: %v", det)
		}
		pid, _ := det["pid"].(float64)
		if !pidAlive(int(pid)) {
			t.Fatalf("QEMU pid %v not running: %v", det["pid"], det)
		}
		return term, newTermSession(t, term), int(pid)
	}
	gone := func(t *testing.T, qemu int, wd string, before []string) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); pidAlive(qemu); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("QEMU %d still alive after the terminal ended", qemu)
			}
		}
		var after []string
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			after = listTree(wd)
			if slices.Equal(after, before) || time.Now().After(deadline) {
				break
			}
		}
		if !slices.Equal(after, before) {
			t.Errorf("workdir after the terminal %v; want %v (placeholders left?)", after, before)
		}
		if out, err := exec.Command("pgrep", "-f", "srt-term-").Output(); err == nil {
			t.Errorf("processes of a terminal VM remain: %s", out)
		}
	}

	t.Run("type-resize-attack-exit", func(t *testing.T) {
		wd := t.TempDir()
		os.WriteFile(filepath.Join(wd, "hello.txt"), []byte("from-host\n"), 0o644)
		git := func(args ...string) error {
			c := exec.Command("git", append([]string{"-C", wd, "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid"}, args...)...)
			c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
			out, err := c.CombinedOutput()
			if err != nil {
				return fmt.Errorf("git %v: %w\n%s", args, err, out)
			}
			return nil
		}
		if err := git("init", "-q"); err != nil {
			t.Fatal(err)
		}
		before := listTree(wd)
		term, s, qemu := open(t, wd)
		defer term.Close()
		if ws, _ := termDetails(t, d, term.Info.ID)["workdirShare"].(string); !strings.HasPrefix(ws, "writable, under the creation-time name rules") {
			t.Errorf("details.workdirShare %q; want writable under the creation-time rules", ws)
		}
		// No placeholder on the host: nothing of the host tree changes
		// while the VM runs.
		if now := listTree(wd); !slices.Equal(now, before) {
			t.Errorf("workdir while the terminal runs %v; want %v", now, before)
		}
		term.Write([]byte("uname -r; echo $((6*7))\n"))
		// The shell is the host's /bin/sh: its prompt may land before the
		// output when the input was typed ahead of it.
		m := s.wait(regexp.MustCompile(`(?:[\r\n]|# )(\d+\.\d+\.\d+\S*)\r?\n42\r?\n`))
		t.Logf("guest kernel %s", m[1])
		term.Write([]byte("cat hello.txt; pwd\n"))
		s.wait(regexp.MustCompile(`from-host\r?\n` + regexp.QuoteMeta(wd) + `\r?\n`))
		term.Resize(100, 30)
		time.Sleep(300 * time.Millisecond)
		term.Write([]byte("stty size\n"))
		s.wait(regexp.MustCompile(`[\r\n]30 100\r?\n`))
		// The review's attack, one line per attempt. The typed line's
		// echo spells AT""TEMPT, so only the output matches.
		const hook = `printf "#!/bin/sh\nexit 1\n" >`
		attempts := [][3]string{
			{"nested-repo-hook", `mkdir -p sub/.git/hooks && ` + hook + ` sub/.git/hooks/pre-commit && chmod +x sub/.git/hooks/pre-commit`, "REFUSED"},
			{"nested-bashrc", `mkdir -p sub && echo pwned >> sub/.bashrc`, "REFUSED"},
			{"vscode-tasks", `mkdir -p .vscode && echo "{}" > .vscode/tasks.json`, "REFUSED"},
			{"repo-hook", hook + ` .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`, "REFUSED"},
			{"bashrc", `echo pwned >> .bashrc`, "REFUSED"},
			{"deep-bashrc", `mkdir -p a/b/c/d/e && echo pwned > a/b/c/d/e/.bashrc`, "REFUSED"},
			{"plain-file", `echo new > made.txt`, "WROTE"},
		}
		script := `a() { if sh -c "$2" 2>/dev/null; then echo "AT""TEMPT $1 WROTE"; else echo "AT""TEMPT $1 REFUSED"; fi; }` + "\n"
		for _, a := range attempts {
			script += "a " + a[0] + " '" + a[1] + "'\n"
		}
		script += `echo "DO""NE"` + "\n"
		term.Write([]byte(script))
		s.wait(regexp.MustCompile(`(?:[\r\n]|# )DONE\r?\n`))
		s.mu.Lock()
		got := map[string]string{}
		for _, m := range regexp.MustCompile(`ATTEMPT (\S+) (WROTE|REFUSED)`).FindAllStringSubmatch(s.out.String(), -1) {
			got[m[1]] = m[2]
		}
		s.mu.Unlock()
		for _, a := range attempts {
			if got[a[0]] != a[2] {
				t.Errorf("attempt %s: %q; want %s", a[0], got[a[0]], a[2])
			}
		}
		term.Write([]byte("exit 7\n"))
		if code, err := term.Wait(); err != nil || code != 7 {
			t.Errorf("exit %d %v; want 7", code, err)
		}
		if got := deniedOnHostVM(wd); len(got) > 0 {
			t.Errorf("ESCAPE: protected names on the host after the terminal: %v", got)
		}
		if b, _ := os.ReadFile(filepath.Join(wd, "made.txt")); string(b) != "new\n" {
			t.Errorf("the workdir is not writable from the guest: made.txt = %q", b)
		}
		// What the shell was allowed to make; the rest of the tree is as
		// before.
		os.Remove(filepath.Join(wd, "made.txt"))
		os.RemoveAll(filepath.Join(wd, "sub"))
		os.RemoveAll(filepath.Join(wd, "a"))
		gone(t, qemu, wd, before)
		// The host's next commit runs no hook the VM planted.
		if err := git("commit", "-q", "--allow-empty", "-m", "after the terminal"); err != nil {
			t.Errorf("the host's commit after the terminal: %v", err)
		}
	})

	t.Run("disconnect-destroys-vm", func(t *testing.T) {
		wd := t.TempDir()
		before := listTree(wd)
		term, s, qemu := open(t, wd)
		term.Write([]byte("echo A$((1+1))B\n"))
		s.wait(regexp.MustCompile(`A2B`))
		term.Close() // the client goes away without exit
		gone(t, qemu, wd, before)
	})
}
