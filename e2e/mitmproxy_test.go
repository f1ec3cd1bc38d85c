package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// mitmFixture is an HTTP forward proxy (CONNECT and absolute-URI plain
// HTTP) on a unix socket, bound by the test (root), that sends every name
// to 127.0.0.1 from parentFrom, so that the upstreams (onlyViaParent)
// answer only what came through it. It records the targets it was asked.
type mitmFixture struct {
	path    string
	mu      sync.Mutex
	targets []string
}

func (m *mitmFixture) seen() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return strings.Join(m.targets, "|")
}

func startMITMFixture(t *testing.T, dir string) *mitmFixture {
	t.Helper()
	m := &mitmFixture{path: filepath.Join(dir, "mitm.sock")}
	fwd := forwardProxy(t, dialFromParentFrom)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.targets = append(m.targets, r.Method+" "+r.RequestURI)
		m.mu.Unlock()
		fwd.ServeHTTP(w, r)
	})
	ln, err := net.Listen("unix", m.path)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(m.path, 0o777) // the unprivileged user's srt connects too
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return m
}

// foreignSocket binds a unix socket as nobody (python3 as a helper
// process), moves it to path in a root-owned directory and gives the file
// to root, so that only its listener's peer credentials betray it.
func foreignSocket(t *testing.T, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("binding a socket as another user needs root")
	}
	tmp, err := os.MkdirTemp(baseDir, "nobody-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chown(tmp, 65534, 65534)
	t.Cleanup(func() { os.RemoveAll(tmp) })
	bound := filepath.Join(tmp, "s.sock")
	cmd := exec.Command("/usr/bin/python3", "-c", `import socket,sys,time
s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8); print("ready", flush=True)
while True:
    c,_=s.accept(); c.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")`, bound)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Skipf("python3 as nobody: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("helper: %q", line)
	}
	if err := os.Rename(bound, path); err != nil {
		t.Fatal(err)
	}
	os.Chown(path, 0, 0)
	os.Chmod(path, 0o777)
}

// TestMITMProxy: with network.mitmProxy, curl inside the sandbox reaches
// upstreams (plain HTTP and HTTPS through an opaque CONNECT) that only the
// MITM proxy on a unix socket can reach, for its domains only (another
// allowed name is dialled directly, and fails); the socket cannot be
// read from inside; a missing
// socket and a socket whose listener is another user's give a 502 naming
// the socket; bad settings exit 125 with one srt: line.
func TestMITMProxy(t *testing.T) {
	requireSandbox(t)
	dir, err := os.MkdirTemp(baseDir, "mitm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	m := startMITMFixture(t, dir)
	var hits sync.Map
	count := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n, _ := hits.LoadOrStore(r.Host, new(int))
			*n.(*int)++
			h.ServeHTTP(w, r)
		})
	}
	hs := httptest.NewServer(count(onlyViaParent(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "via mitm %s\n", r.Host)
	}))))
	t.Cleanup(hs.Close)
	caPath, tp := startViaParentTLS(t, dir, "via mitm over TLS")
	hp := strconv.Itoa(portOf(t, hs.Listener.Addr()))
	settingsFor := func(sock string) string {
		return `{"filesystem":{"allowWrite":["."]},"network":{"allowedDomains":["` + hostAllowed + `","other.srt-test"],` +
			`"mitmProxy":{"socketPath":"` + sock + `","domains":["` + hostAllowed + `"]}}}`
	}
	curl := "curl -sS --max-time 10 --cacert " + caPath + " "

	forEachUser(t, func(t *testing.T, u *account) {
		t.Run("routes", func(t *testing.T) {
			before := m.seen()
			script := curl + "http://" + hostAllowed + ":" + hp + "/; " + curl + "https://" + hostAllowed + ":" + tp + "/" +
				"; curl -sS -i --max-time 10 http://other.srt-test:" + hp + "/; echo; cat " + m.path + " 2>&1; echo cat=$?"
			stdout, stderr, code := sh(t, u, u.workDir(t), settingsFor(m.path), script)
			for _, w := range []string{"via mitm " + hostAllowed + ":" + hp, "via mitm over TLS " + hostAllowed + ":" + tp,
				"502 Bad Gateway", "cat=1"} {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q (exit %d)\nstdout:\n%s\nstderr:\n%s", w, code, stdout, stderr)
				}
			}
			got := strings.TrimPrefix(strings.TrimPrefix(m.seen(), before), "|")
			if want := "GET http://" + hostAllowed + ":" + hp + "/|CONNECT " + hostAllowed + ":" + tp; got != want {
				t.Errorf("the MITM proxy saw %q, want %q", got, want)
			}
		})
		t.Run("missing-socket", func(t *testing.T) {
			sock := filepath.Join(dir, "none.sock")
			stdout, stderr, code := sh(t, u, u.workDir(t), settingsFor(sock), "curl -sS -i --max-time 10 http://"+hostAllowed+":"+hp+"/")
			if !strings.Contains(stdout, "502 Bad Gateway") || !strings.Contains(stdout, "MITM proxy unix:"+sock) {
				t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
		})
		t.Run("foreign-listener", func(t *testing.T) {
			sock := filepath.Join(dir, "foreign-"+u.name+".sock")
			foreignSocket(t, sock)
			stdout, stderr, code := sh(t, u, u.workDir(t), settingsFor(sock),
				"curl -sS -i --max-time 10 http://"+hostAllowed+":"+hp+"/; "+curl+"https://"+hostAllowed+":"+tp+"/; echo curl=$?")
			if !strings.Contains(stdout, "502 Bad Gateway") || !strings.Contains(stdout, "its listener runs as uid 65534") ||
				!strings.Contains(stdout, "curl=56") || strings.Contains(stdout, "via mitm") {
				t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
		})
		t.Run("bad-input", func(t *testing.T) {
			for _, tc := range []struct{ name, nw, want string }{
				{"relative", `"mitmProxy":{"socketPath":"mitm.sock","domains":["a.test"]}`, `network.mitmProxy.socketPath: "mitm.sock" must be an absolute path`},
				{"no-domains", `"mitmProxy":{"socketPath":"/run/m.sock","domains":[]}`, "network.mitmProxy.domains: must list at least one domain pattern"},
				{"bad-pattern", `"mitmProxy":{"socketPath":"/run/m.sock","domains":["http://x"]}`, "network.mitmProxy.domains[0]"},
				{"all-unix", `"allowAllUnixSockets":true,"mitmProxy":{"socketPath":"/run/m.sock","domains":["a.test"]}`, "cannot be combined with allowAllUnixSockets"},
				{"write-root", `"mitmProxy":{"socketPath":"` + filepath.Join(dir, "w", "m.sock") + `","domains":["a.test"]}`, "lies in a write root"},
			} {
				s := `{"filesystem":{"allowWrite":["` + dir + `/w"]},"network":{` + tc.nw + `}}`
				os.MkdirAll(filepath.Join(dir, "w"), 0o755)
				stdout, stderr, code := runSrt(t, u, u.workDir(t), s, "echo", "ran")
				lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
				// Every case names the key's position, the write root's too,
				// which is found when the policy compiles.
				at := settingsName + ":1:"
				if tc.name == "write-root" {
					at += strconv.Itoa(strings.Index(s, `"socketPath":`)+len(`"socketPath":`)+1) + ": network.mitmProxy.socketPath: "
				}
				if code != 125 || stdout != "" || len(lines) != 1 || !strings.HasPrefix(lines[0], "srt: ") || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, at) {
					t.Errorf("%s: exit %d, stdout %q, stderr %q; want 125 and one srt: line with %q", tc.name, code, stdout, stderr, tc.want)
				}
			}
		})
	})
}
