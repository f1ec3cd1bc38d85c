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
	"github.com/srt-go/srt/microvm"
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
		why = "the microvm terminal test runs as root (and as the unprivileged user through setpriv)"
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

// startSrtdTermVM starts srtd as u with home as its $HOME (the
// terminal's home directory) and its token and address files in
// home/.srtd, as srtd keeps them by default without XDG_RUNTIME_DIR. For
// the unprivileged user the kernel cache is linked as startSrtdVMAs does.
func startSrtdTermVM(t *testing.T, u *account, home string) *srtd {
	t.Helper()
	state := filepath.Join(home, ".srtd")
	u.mkdir(t, state)
	os.Chmod(state, 0o700)
	env := []string{"PATH=" + cleanPATH, "HOME=" + home, "USER=" + u.name, "SHELL=/bin/sh"}
	var prefix []string
	if !u.direct {
		cache := filepath.Join(u.workDir(t), "cache")
		u.mkdir(t, cache)
		for _, pat := range []string{"debian-*", "mini-current"} {
			m, _ := filepath.Glob(filepath.Join(microvm.DefaultCacheDir(), pat))
			for _, k := range m {
				if err := os.Symlink(k, filepath.Join(cache, filepath.Base(k))); err != nil {
					t.Fatal(err)
				}
			}
		}
		prefix = []string{"setpriv", "--reuid", fmt.Sprint(u.uid), "--regid", fmt.Sprint(u.gid), "--init-groups", "--"}
		env = append(env, "SRT_MICROVM_CACHE="+cache)
	}
	return launchSrtd(t, buildSrtdStatic(t), state, prefix, env, 120*time.Second)
}

// TestSrtdMicroVMTerminal: a terminal with backend microvm is a shell in
// a fresh VM, over the same WebSocket protocol: typing, output, resize,
// exit code; the VM (its QEMU) is gone once the shell exits or the client
// disconnects. It has the native terminal's profile: $HOME and the
// workdir shared writable under the creation-time rules in the guest
// (issue 20), the secret directories (~/.ssh, ~/.aws, ~/.config/gh) and
// srtd's token file hidden host-side, srtd's state directory read-only,
// and the user's login shell (the host's /etc/passwd). From a VM shell,
// the review's attack (a new nested repository's pre-commit hook,
// sub/.bashrc, .vscode/tasks.json, the workdir repository's hook) and
// its $HOME variants (~/.bashrc, a new repository's hook under ~) are
// refused, the fake key, the cloud credentials and the token cannot be
// read, nothing can be planted in ~/.ssh or srtd's directory, while
// ordinary files in the workdir and in $HOME are made; the host tree
// holds no protected name afterwards and the host's next git commit runs
// no hook. A terminal in $HOME itself opens (the secrets are hidden, not
// refused). As root and as the unprivileged user (srtd, and so QEMU,
// running as that user); two VMs each.
func TestSrtdMicroVMTerminal(t *testing.T) {
	requireQEMUStrict(t)
	forEachUser(t, testSrtdMicroVMTerminal)
}

func testSrtdMicroVMTerminal(t *testing.T, u *account) {
	home := u.workDir(t)
	const key = "FAKE-PRIVATE-KEY-b7f3e1"
	u.write(t, filepath.Join(home, ".ssh/id_ed25519"), key+"\n")
	os.Chmod(filepath.Join(home, ".ssh/id_ed25519"), 0o600)
	const awsKey = "FAKE-AWS-SECRET-9c21"
	u.write(t, filepath.Join(home, ".aws/credentials"), "[default]\naws_secret_access_key="+awsKey+"\n")
	u.write(t, filepath.Join(home, ".config/gh/hosts.yml"), "github.com:\n  oauth_token: "+awsKey+"\n")
	d := startSrtdTermVM(t, u, home)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if p := awaitMicroVMProbe(t, d); !p.MicroVMAvailable {
		t.Fatalf("probe %+v; want microvmAvailable\n%s", p, d.stderr())
	}

	open := func(t *testing.T, wd string) (*client.Terminal, *termSession, int, map[string]any) {
		t0 := time.Now()
		term, err := d.c.OpenTerminal(ctx, client.TerminalRequest{Backend: port.BackendMicroVM, Cwd: wd,
			Env: map[string]string{"PS1": "$ ", "HISTFILE": ""}, Cols: 80, Rows: 24})
		if err != nil {
			t.Fatalf("open: %v\n%s", err, d.stderr())
		}
		t.Logf("microvm terminal open in %v", time.Since(t0))
		if term.Info.Backend != port.BackendMicroVM || term.Info.Pid != 0 {
			t.Fatalf("info %+v; want backend microvm and no host pid", term.Info)
		}
		det := termDetails(t, d, term.Info.ID)
		if h, _ := det["home"].(string); !strings.HasPrefix(h, "shared writable at "+home) || !strings.Contains(h, filepath.Join(home, ".ssh")) || !strings.Contains(h, d.tokenF) {
			t.Errorf("details.home %q; want $HOME shared writable with .ssh and the token hidden", h)
		}
		if sh, _ := det["shell"].(string); !strings.HasPrefix(sh, fmt.Sprintf("/bin/bash (the login shell of uid %d in the host's /etc/passwd)", u.uid)) {
			t.Errorf("details.shell %q; want the login shell of uid %d", sh, u.uid)
		}
		pid, _ := det["pid"].(float64)
		if !pidAlive(int(pid)) {
			t.Fatalf("QEMU pid %v not running: %v", det["pid"], det)
		}
		return term, newTermSession(t, term), int(pid), det
	}
	gone := func(t *testing.T, qemu int, dir string, before []string) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); pidAlive(qemu); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("QEMU %d still alive after the terminal ended", qemu)
			}
		}
		var after []string
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			after = listTree(dir)
			if slices.Equal(after, before) || time.Now().After(deadline) {
				break
			}
		}
		if !slices.Equal(after, before) {
			t.Errorf("%s after the terminal %v; want %v (placeholders left?)", dir, after, before)
		}
		if out, err := exec.Command("pgrep", "-f", "srt-term-").Output(); err == nil {
			t.Errorf("processes of a terminal VM remain: %s", out)
		}
	}
	secretsIntact := func(t *testing.T) {
		t.Helper()
		if b, _ := os.ReadFile(filepath.Join(home, ".ssh/id_ed25519")); string(b) != key+"\n" {
			t.Errorf("the host's key changed: %q", b)
		}
		if got := listTree(filepath.Join(home, ".ssh")); !slices.Equal(got, []string{"id_ed25519"}) {
			t.Errorf("ESCAPE: ~/.ssh on the host holds %v; want only id_ed25519", got)
		}
		if got := listTree(filepath.Join(home, ".srtd")); !slices.Equal(got, []string{"addr", "token"}) {
			t.Errorf("ESCAPE: srtd's directory on the host holds %v; want addr, token", got)
		}
	}

	t.Run("type-resize-attack-exit", func(t *testing.T) {
		wd := filepath.Join(home, "ws")
		u.mkdir(t, wd)
		u.write(t, filepath.Join(wd, "hello.txt"), "from-host\n")
		git := func(args ...string) error {
			c := u.command(ctx, wd, []string{"GIT_CONFIG_NOSYSTEM=1"}, append([]string{"git", "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid"}, args...)...)
			if out, err := c.CombinedOutput(); err != nil {
				return fmt.Errorf("git %v: %w\n%s", args, err, out)
			}
			return nil
		}
		if err := git("init", "-q"); err != nil {
			t.Fatal(err)
		}
		before := listTree(home)
		term, s, qemu, det := open(t, wd)
		defer term.Close()
		if ws, _ := det["workdirShare"].(string); !strings.HasPrefix(ws, "writable, under the creation-time name rules") {
			t.Errorf("details.workdirShare %q; want writable under the creation-time rules", ws)
		}
		// No placeholder on the host: nothing of the host tree changes
		// while the VM runs.
		if now := listTree(home); !slices.Equal(now, before) {
			t.Errorf("$HOME while the terminal runs %v; want %v", now, before)
		}
		term.Write([]byte("uname -r; echo $((6*7))\n"))
		// The prompt may land before the output when the input was typed
		// ahead of it.
		m := s.wait(regexp.MustCompile(`(?:[\r\n]|[#$] )(\d+\.\d+\.\d+\S*)\r?\n42\r?\n`))
		t.Logf("guest kernel %s", m[1])
		term.Write([]byte("cat hello.txt; pwd; echo \"SH=$SHELL HOME=$HOME\"\n"))
		s.wait(regexp.MustCompile(`from-host\r?\n` + regexp.QuoteMeta(wd) + `\r?\nSH=/bin/bash HOME=` + regexp.QuoteMeta(home) + `\r?\n`))
		term.Resize(100, 30)
		time.Sleep(300 * time.Millisecond)
		term.Write([]byte("stty size\n"))
		s.wait(regexp.MustCompile(`[\r\n]30 100\r?\n`))
		// One line per attempt. The typed line's echo spells AT""TEMPT,
		// so only the output matches.
		const hook = `printf "#!/bin/sh\nexit 1\n" >`
		attempts := [][3]string{
			{"nested-repo-hook", `mkdir -p sub/.git/hooks && ` + hook + ` sub/.git/hooks/pre-commit && chmod +x sub/.git/hooks/pre-commit`, "FAILED"},
			{"nested-bashrc", `mkdir -p sub && echo pwned >> sub/.bashrc`, "FAILED"},
			{"vscode-tasks", `mkdir -p .vscode && echo "{}" > .vscode/tasks.json`, "FAILED"},
			{"repo-hook", hook + ` .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`, "FAILED"},
			{"bashrc", `echo pwned >> .bashrc`, "FAILED"},
			{"deep-bashrc", `mkdir -p a/b/c/d/e && echo pwned > a/b/c/d/e/.bashrc`, "FAILED"},
			{"plain-file", `echo new > made.txt`, "OK"},
			{"home-bashrc", `echo x > ~/.bashrc`, "FAILED"},
			{"home-profile", `echo x > ~/.profile`, "FAILED"},
			{"home-new-repo-hook", `mkdir -p ~/proj/sub && git init -q ~/proj/sub && echo > ~/proj/sub/.git/hooks/pre-commit`, "FAILED"},
			{"home-file", `echo made > ~/notes.txt`, "OK"},
			{"ssh-key-read", `cat ~/.ssh/id_ed25519`, "FAILED"},
			{"ssh-ls-empty", `test -d ~/.ssh && test -z "$(ls -A ~/.ssh)"`, "OK"},
			{"ssh-plant", `echo ssh-ed25519 AAAA >> ~/.ssh/authorized_keys`, "FAILED"},
			{"ssh-rename", `mv ~/.ssh ~/ssh-moved`, "FAILED"},
			{"aws-read", `cat ~/.aws/credentials`, "FAILED"},
			{"gh-read", `cat ~/.config/gh/hosts.yml`, "FAILED"},
			{"token-read", `grep . ~/.srtd/token`, "FAILED"},
			{"token-replace", `echo forged > ~/.srtd/token`, "FAILED"},
			{"token-dir-plant", `echo x > ~/.srtd/planted`, "FAILED"},
			{"token-dir-rename", `mv ~/.srtd ~/srtd-moved`, "FAILED"},
		}
		script := `a() { if sh -c "$2" 2>/dev/null; then echo "AT""TEMPT $1 OK"; else echo "AT""TEMPT $1 FAILED"; fi; }` + "\n"
		for _, a := range attempts {
			script += "a " + a[0] + " '" + a[1] + "'\n"
		}
		script += `echo "DO""NE"` + "\n"
		term.Write([]byte(script))
		s.wait(regexp.MustCompile(`(?:[\r\n]|# )DONE\r?\n`))
		s.mu.Lock()
		out := s.out.String()
		s.mu.Unlock()
		got := map[string]string{}
		for _, m := range regexp.MustCompile(`ATTEMPT (\S+) (OK|FAILED)`).FindAllStringSubmatch(out, -1) {
			got[m[1]] = m[2]
		}
		for _, a := range attempts {
			if got[a[0]] != a[2] {
				t.Errorf("attempt %s: %q; want %s", a[0], got[a[0]], a[2])
			}
		}
		for _, secret := range []string{key, awsKey, d.token} {
			if strings.Contains(out, secret) {
				t.Errorf("ESCAPE: a secret of the host reached the terminal: %q", secret)
			}
		}
		term.Write([]byte("exit 7\n"))
		if code, err := term.Wait(); err != nil || code != 7 {
			t.Errorf("exit %d %v; want 7", code, err)
		}
		if got := deniedOnHostVM(home); len(got) > 0 {
			t.Errorf("ESCAPE: protected names on the host after the terminal: %v", got)
		}
		secretsIntact(t)
		if b, _ := os.ReadFile(filepath.Join(wd, "made.txt")); string(b) != "new\n" {
			t.Errorf("the workdir is not writable from the guest: made.txt = %q", b)
		}
		if b, _ := os.ReadFile(filepath.Join(home, "notes.txt")); string(b) != "made\n" {
			t.Errorf("$HOME is not writable from the guest: notes.txt = %q", b)
		}
		// What the shell was allowed to make; the rest of the tree is as
		// before.
		for _, p := range []string{"ws/made.txt", "ws/sub", "ws/a", "notes.txt", "proj"} {
			os.RemoveAll(filepath.Join(home, p))
		}
		gone(t, qemu, home, before)
		// The host's next commit runs no hook the VM planted.
		if err := git("commit", "-q", "--allow-empty", "-m", "after the terminal"); err != nil {
			t.Errorf("the host's commit after the terminal: %v", err)
		}
	})

	t.Run("home-disconnect-destroys-vm", func(t *testing.T) {
		before := listTree(home)
		term, s, qemu, _ := open(t, "") // the default workdir: $HOME
		term.Write([]byte("pwd; ls -A ~/.ssh | wc -l; echo A$((1+1))B\n"))
		s.wait(regexp.MustCompile(regexp.QuoteMeta(home) + `\r?\n\s*0\r?\nA2B`))
		term.Close() // the client goes away without exit
		gone(t, qemu, home, before)
		secretsIntact(t)
	})
}
