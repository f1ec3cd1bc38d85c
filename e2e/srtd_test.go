package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/srt-go/srt/client"
	"github.com/srt-go/srt/port"
)

// srtd end to end (issue 6): the real binary on 127.0.0.1, real HTTP and
// WebSocket clients, the real port.

var (
	srtdOnce sync.Once
	srtdBin  string
	srtdErr  error
)

// buildSrtd builds srtd next to srt (a world-readable directory).
func buildSrtd(t *testing.T) string {
	t.Helper()
	srtdOnce.Do(func() {
		srtdBin = filepath.Join(filepath.Dir(srtBin), "srtd")
		gomod, _ := exec.Command("go", "env", "GOMOD").Output()
		b := exec.Command("go", "build", "-o", srtdBin, "./cmd/srtd")
		b.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
		if out, err := b.CombinedOutput(); err != nil {
			srtdErr = fmt.Errorf("building srtd: %v\n%s", err, out)
		}
		os.Chmod(srtdBin, 0o755)
	})
	if srtdErr != nil {
		t.Fatal(srtdErr)
	}
	return srtdBin
}

// srtd is a running srtd.
type srtd struct {
	cmd    *exec.Cmd
	c      *client.Client
	url    string
	token  string
	tokenF string
	logMu  sync.Mutex
	log    bytes.Buffer
	exited chan struct{}
}

func (d *srtd) stderr() string {
	d.logMu.Lock()
	defer d.logMu.Unlock()
	return d.log.String()
}

func (d *srtd) Write(p []byte) (int, error) {
	d.logMu.Lock()
	defer d.logMu.Unlock()
	return d.log.Write(p)
}

// startSrtd runs srtd as u on a random loopback port and waits for it.
func startSrtd(t *testing.T, u *account, args ...string) *srtd {
	t.Helper()
	return startSrtdHome(t, u, u.home, args...)
}

// startSrtdHome is startSrtd with HOME set to home.
func startSrtdHome(t *testing.T, u *account, home string, args ...string) *srtd {
	t.Helper()
	var prefix []string
	if !u.direct {
		prefix = []string{"setpriv", "--reuid", fmt.Sprint(u.uid), "--regid", fmt.Sprint(u.gid), "--init-groups", "--"}
	}
	env := []string{"PATH=" + cleanPATH, "HOME=" + home, "USER=" + u.name, "SHELL=/bin/bash"}
	return launchSrtd(t, buildSrtd(t), u.workDir(t), prefix, env, 20*time.Second, args...)
}

// launchSrtd starts bin (behind prefix, e.g. setpriv) on a random loopback
// port with its address and token files in dir, waits until it listens
// (up to wait), and stops it with SIGTERM when the test ends.
func launchSrtd(t *testing.T, bin, dir string, prefix, env []string, wait time.Duration, args ...string) *srtd {
	t.Helper()
	d := &srtd{tokenF: filepath.Join(dir, "token"), exited: make(chan struct{})}
	addrF := filepath.Join(dir, "addr")
	argv := append(append(prefix, bin, "--addr", "127.0.0.1:0", "--addr-file", addrF, "--token-file", d.tokenF), args...)
	d.cmd = exec.Command(argv[0], argv[1:]...)
	d.cmd.Env = env
	d.cmd.Stderr = d
	d.cmd.Stdout = d
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.cmd.Wait(); close(d.exited) }()
	t.Cleanup(func() {
		d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(20 * time.Second):
			d.cmd.Process.Kill()
		}
	})
	for deadline := time.Now().Add(wait); ; time.Sleep(20 * time.Millisecond) {
		a, _ := os.ReadFile(addrF)
		tok, _ := os.ReadFile(d.tokenF)
		if len(a) > 0 && len(tok) > 0 {
			d.url = "http://" + strings.TrimSpace(string(a))
			d.token = strings.TrimSpace(string(tok))
			break
		}
		select {
		case <-d.exited:
			t.Fatalf("srtd exited: %s", d.stderr())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("srtd did not start: %s", d.stderr())
		}
	}
	d.c = client.New(d.url, d.token)
	return d
}

// sh runs a shell command in a session and returns stdout+stderr and code.
func (d *srtd) sh(t *testing.T, id, script string) (string, int) {
	t.Helper()
	out, errb, code, err := d.c.Run(context.Background(), id, client.ExecRequest{Argv: []string{"sh", "-c", script}})
	if err != nil {
		t.Fatalf("exec %q: %v", script, err)
	}
	return string(out) + string(errb), code
}

// TestSrtdProbeLine: exactly one start-up line per case, and a /healthz
// without a sandbox field; the token file is 0600.
func TestSrtdProbeLine(t *testing.T) {
	requireSandbox(t)
	me := &account{name: "me", uid: os.Getuid(), gid: os.Getgid(), home: os.Getenv("HOME"), direct: true}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"on", nil, "agent sandbox ON bubblewrap"},
		{"off", []string{"--sandbox", "off"}, "agent sandbox DISABLED by --sandbox off"},
		{"no-backend", []string{"--bwrap", "/nonexistent/bwrap"}, "no OS-native agent sandbox on this host "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := startSrtd(t, me, tc.args...)
			lines := regexp.MustCompile(`agent sandbox ON|no OS-native agent sandbox|agent sandbox DISABLED`).FindAllString(d.stderr(), -1)
			if len(lines) != 1 || !strings.Contains(d.stderr(), tc.want) {
				t.Errorf("start-up lines %q; want one with %q in\n%s", lines, tc.want, d.stderr())
			}
			resp, err := http.Get(d.url + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || bytes.Contains(b, []byte("sandbox")) {
				t.Errorf("healthz: %d %s", resp.StatusCode, b)
			}
			if st, err := os.Stat(d.tokenF); err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("token file: %v %v; want mode 0600", st.Mode(), err)
			}
			if _, err := client.New(d.url, "wrong").Probe(context.Background()); err == nil {
				t.Error("a bad token was accepted")
			}
		})
	}
	t.Run("non-loopback-refused", func(t *testing.T) {
		out, err := exec.Command(buildSrtd(t), "--addr", "0.0.0.0:0", "--token-file", filepath.Join(t.TempDir(), "t")).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "not a loopback address") {
			t.Errorf("srtd --addr 0.0.0.0:0: %v %s", err, out)
		}
	})
}

// TestSrtdBackendRule: an explicit microvm fails loudly; a default of
// microvm falls back to native with a log line; the handle never claims
// a backend it does not run on.
func TestSrtdBackendRule(t *testing.T) {
	requireSandbox(t)
	me := &account{name: "me", uid: os.Getuid(), gid: os.Getgid(), home: os.Getenv("HOME"), direct: true}
	ctx := context.Background()
	d := startSrtd(t, me, "--default-backend", "microvm")
	_, err := d.c.Launch(ctx, port.Spec{SessionID: "vm", WorkspaceID: "w"}, port.BackendMicroVM)
	if ce, ok := err.(*client.Error); !ok || ce.Status != 503 {
		t.Errorf("explicit microvm: %v; want 503", err)
	}
	h, err := d.c.Launch(ctx, port.Spec{SessionID: "dflt", WorkspaceID: "w"}, "")
	if err != nil || h.Backend != port.BackendNative {
		t.Fatalf("default: %+v %v; want native", h, err)
	}
	if !strings.Contains(d.stderr(), "falling back to native") {
		t.Errorf("no fallback log line in\n%s", d.stderr())
	}
	off := startSrtd(t, me, "--sandbox", "off")
	if h, err := off.c.Launch(ctx, port.Spec{SessionID: "o", WorkspaceID: "w"}, ""); err != nil || h.Backend != port.BackendNone {
		t.Errorf("--sandbox off default: %+v %v; want none", h, err)
	}
	if _, err := off.c.Launch(ctx, port.Spec{SessionID: "o2", WorkspaceID: "w"}, port.BackendNative); err == nil {
		t.Error("--sandbox off accepted an explicit native")
	}
	// Terminals follow the same rule: no native shell under --sandbox off.
	if tm, err := off.c.OpenTerminal(ctx, client.TerminalRequest{Backend: port.BackendNative}); err == nil {
		tm.Close()
		t.Error("--sandbox off opened a native terminal")
	} else if ce := (*client.Error)(nil); !errors.As(err, &ce) || ce.Status != http.StatusConflict {
		t.Errorf("--sandbox off native terminal: %v; want the 409 a native session gets", err)
	}
}

// TestSrtdModes tries every mode's write rules from inside, through the
// API: chat writes its writable bind, the other modes cannot;
// protectedPaths never, runnerStateDirs always. The standard launch
// policy (file-name glob denies) launches with a writable bind and
// refuses those names when they are created.
func TestSrtdModes(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		ctx := context.Background()
		strict := startSrtd(t, u)
		bind := u.workDir(t)
		h, err := strict.c.Launch(ctx, port.Spec{SessionID: "g", WorkspaceID: "w", Mode: port.ModeChat,
			BindMounts: []port.BindMount{{HostPath: bind, GuestPath: bind}}}, port.BackendNative)
		if err != nil {
			t.Fatalf("standard launch policy, writable bind: %v", err)
		}
		out, _ := strict.sh(t, h.SessionID, fmt.Sprintf("echo x > %[1]s/.env && echo env=w; echo x > %[1]s/id.key && echo key=w; echo x > %[1]s/f && echo f=w", bind))
		if strings.Contains(out, "env=w") || strings.Contains(out, "key=w") || !strings.Contains(out, "f=w") {
			t.Errorf("standard launch policy inside: %s", out)
		}
		if _, err := os.Lstat(bind + "/.env"); err == nil {
			t.Error(".env landed on the host")
		}

		d := startSrtd(t, u, "--name-glob-write-denies", "none")
		for _, mode := range []port.Mode{port.ModeChat, port.ModeReview, port.ModePlan, port.ModeOrchestrate} {
			t.Run(string(mode), func(t *testing.T) {
				bind, prot, state := u.workDir(t), u.workDir(t), u.workDir(t)
				h, err := d.c.Launch(ctx, port.Spec{
					SessionID: "m-" + string(mode), WorkspaceID: "w", Mode: mode,
					BindMounts: []port.BindMount{
						{HostPath: bind, GuestPath: bind},
						{HostPath: prot, GuestPath: prot},
						{HostPath: state, GuestPath: state},
					},
					ProtectedPaths: []string{prot}, RunnerStateDirs: []string{state}, GuestWorkdir: bind,
				}, port.BackendNative)
				if err != nil {
					t.Fatal(err)
				}
				if h.Backend != port.BackendNative || h.State != port.StateWarm {
					t.Fatalf("handle %+v", h)
				}
				out, _ := d.sh(t, h.SessionID, fmt.Sprintf(
					"touch %s/f && echo bind=w; touch %s/f && echo prot=w; touch %s/f && echo state=w; touch /etc/srtd-x && echo etc=w; cat /etc/hostname >/dev/null && echo read=ok", bind, prot, state))
				wantBind := mode == port.ModeChat
				if strings.Contains(out, "bind=w") != wantBind {
					t.Errorf("bind writable=%v; want %v\n%s", !wantBind, wantBind, out)
				}
				for _, bad := range []string{"prot=w", "etc=w"} {
					if strings.Contains(out, bad) {
						t.Errorf("%s in\n%s", bad, out)
					}
				}
				for _, good := range []string{"state=w", "read=ok"} {
					if !strings.Contains(out, good) {
						t.Errorf("no %s in\n%s", good, out)
					}
				}
				if _, err := d.c.Destroy(ctx, h.SessionID); err != nil {
					t.Error(err)
				}
			})
		}
	})
}

// TestSrtdEgress: the session's proxies allow an allow-listed IP literal
// and refuse the metadata endpoint, unlisted names (both wildcard forms
// too) and everything with networkEnabled false.
func TestSrtdEgress(t *testing.T) {
	requireSandbox(t)
	me := &account{name: "me", uid: os.Getuid(), gid: os.Getgid(), home: os.Getenv("HOME"), direct: true}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "host-says-hi") }))
	defer ln.Close()
	ctx := context.Background()
	d := startSrtd(t, me)
	curl := func(id, url string) string {
		out, _ := d.sh(t, id, "curl -s -o /dev/null -w '%{http_code}' --noproxy '' --max-time 10 "+url)
		return out
	}
	allow := []string{ln.Addr().String(), "*.wild.test", "api.*.mid.test"}
	if _, err := d.c.Launch(ctx, port.Spec{SessionID: "net", WorkspaceID: "w", NetworkEnabled: true, EgressAllowlist: allow}, port.BackendNative); err != nil {
		t.Fatal(err)
	}
	if _, err := d.c.Launch(ctx, port.Spec{SessionID: "nonet", WorkspaceID: "w", NetworkEnabled: false, EgressAllowlist: allow}, port.BackendNative); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, id, url string
		refused       bool
	}{
		{"allowed-literal", "net", "http://" + ln.Addr().String() + "/", false},
		{"metadata", "net", "http://169.254.169.254/latest/meta-data/", true},
		{"unlisted", "net", "http://example.org/", true},
		{"leading-wildcard-not-apex", "net", "http://wild.test/", true},
		{"mid-label-two-labels", "net", "http://api.a.b.mid.test/", true},
		{"network-disabled", "nonet", "http://" + ln.Addr().String() + "/", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code := curl(tc.id, tc.url)
			if (code == "403") != tc.refused {
				t.Errorf("HTTP %s; refused want %v", code, tc.refused)
			}
			if !tc.refused && code != "200" {
				t.Errorf("HTTP %s; want 200", code)
			}
		})
	}
	// The allowed wildcard forms are not refused by the proxy (there is
	// no DNS here, so they fail later, not with 403).
	for _, u := range []string{"http://a.b.wild.test/", "http://api.x.mid.test/"} {
		if code := curl("net", u); code == "403" {
			t.Errorf("%s: refused by the allow-list", u)
		}
	}
}

// TestSrtdTerminal types into a terminal through the real binary: host
// shell (badge none) and native (badge native), echo and resize.
func TestSrtdTerminal(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		// A home of its own: the host's rc files are not under test (and
		// may be slow: pyenv rehash in root's .bashrc).
		d := startSrtdHome(t, u, u.workDir(t))
		for _, backend := range []port.Backend{port.BackendNone, port.BackendNative} {
			t.Run(string(backend), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				term, err := d.c.OpenTerminal(ctx, client.TerminalRequest{Backend: backend, Cwd: u.workDir(t), Env: map[string]string{"PS1": "$ "}})
				if err != nil {
					t.Fatal(err)
				}
				defer term.Close()
				if term.Info.Backend != backend {
					t.Fatalf("badge %q; want %q", term.Info.Backend, backend)
				}
				var mu sync.Mutex
				var out bytes.Buffer
				go func() {
					r := bufio.NewReader(term)
					for {
						b, err := r.ReadByte()
						if err != nil {
							return
						}
						mu.Lock()
						out.WriteByte(b)
						mu.Unlock()
					}
				}()
				wait := func(re *regexp.Regexp) {
					t.Helper()
					for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
						mu.Lock()
						ok := re.Match(out.Bytes())
						mu.Unlock()
						if ok {
							return
						}
					}
					mu.Lock()
					defer mu.Unlock()
					t.Fatalf("no %s in %q", re, out.String())
				}
				term.Write([]byte("bash --norc --noprofile\n"))
				time.Sleep(300 * time.Millisecond)
				term.Write([]byte("echo $((6*7))\n"))
				wait(regexp.MustCompile(`[\r\n]42\r?\n`))
				term.Resize(100, 30)
				time.Sleep(200 * time.Millisecond)
				term.Write([]byte("stty size\n"))
				wait(regexp.MustCompile(`[\r\n]30 100\r?\n`))
				term.Write([]byte("exit\nexit 7\n"))
				if code, err := term.Wait(); err != nil || code != 7 {
					t.Errorf("exit %d %v; want 7", code, err)
				}
			})
		}
	})
}

// TestSrtd50Sessions launches 50 native sessions at once, each writing
// its own bind; none sees another's files.
func TestSrtd50Sessions(t *testing.T) {
	requireSandbox(t)
	me := &account{name: "me", uid: os.Getuid(), gid: os.Getgid(), home: os.Getenv("HOME"), direct: true}
	d := startSrtd(t, me, "--name-glob-write-denies", "none")
	ctx := context.Background()
	const n = 50
	binds := make([]string, n)
	for i := range binds {
		binds[i] = me.workDir(t)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprint("s", i)
			_, err := d.c.Launch(ctx, port.Spec{SessionID: id, WorkspaceID: "w", Mode: port.ModeChat,
				BindMounts: []port.BindMount{{HostPath: binds[i], GuestPath: binds[i]}}}, port.BackendNative)
			if err != nil {
				t.Errorf("%s: %v", id, err)
				return
			}
			other := binds[(i+1)%n]
			out, _, code, err := d.c.Run(ctx, id, client.ExecRequest{Argv: []string{"sh", "-c",
				fmt.Sprintf("echo %s > %s/mine && cat %s/mine && ls %s 2>/dev/null | wc -l", id, binds[i], binds[i], other)}})
			if err != nil || code != 0 {
				t.Errorf("%s: %v %d %s", id, err, code, out)
				return
			}
			if f := strings.Fields(string(out)); len(f) != 2 || f[0] != id || f[1] != "0" {
				t.Errorf("%s: output %q; want its id and 0 files of its neighbour", id, out)
			}
		})
	}
	wg.Wait()
}

// TestSrtdSigterm: SIGTERM destroys every sandbox and removes the token.
func TestSrtdSigterm(t *testing.T) {
	requireSandbox(t)
	me := &account{name: "me", uid: os.Getuid(), gid: os.Getgid(), home: os.Getenv("HOME"), direct: true}
	d := startSrtd(t, me)
	ctx := context.Background()
	var pids []int
	for i := range 3 {
		h, err := d.c.Launch(ctx, port.Spec{SessionID: fmt.Sprint("t", i), WorkspaceID: "w"}, port.BackendNative)
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := h.Details["bwrapPid"].(float64); ok {
			pids = append(pids, int(p))
		}
	}
	if len(pids) != 3 {
		t.Fatalf("no bwrapPid in the handles' details")
	}
	events, err := d.c.Exec(ctx, "t0", client.ExecRequest{Argv: []string{"sleep", "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	var last port.Event
	for ev, err := range events {
		if err != nil {
			break
		}
		last = ev
	}
	select {
	case <-d.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("srtd did not exit on SIGTERM")
	}
	if last.Type != port.EventKilled && last.Type != port.EventExit {
		t.Errorf("last event of the running exec: %q", last.Type)
	}
	for _, p := range pids {
		if syscall.Kill(p, 0) == nil {
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p)); !bytes.Contains(b, []byte(") Z")) {
				t.Errorf("sandbox process %d survived SIGTERM", p)
			}
		}
	}
	if _, err := os.Stat(d.tokenF); err == nil {
		t.Error("token file left behind")
	}
}
