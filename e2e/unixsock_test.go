package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestUnixSocketIPC: a socketpair is the only unix socket the sandbox
// may make; it must neither create names by bind(2) (a socket named
// .env, a/b/c/d/.bashrc, or the refs of a trap repository whose config
// runs core.fsmonitor) nor reach a host datagram socket (issue 14, items
// 2 and 3). A bare repository that is on disk before the run is protected
// whatever its name. TCP binds keep working.
func TestUnixSocketIPC(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 missing")
	}
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		for _, mode := range []string{"rules-on", "rules-off"} {
			t.Run(mode, func(t *testing.T) {
				w := u.workDir(t)
				// A host datagram socket the sandbox can see (as /dev/log
				// or journald's would be), with a reader.
				hostSock := filepath.Join(w, "host-dgram.sock")
				conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: hostSock, Net: "unixgram"})
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				os.Chmod(hostSock, 0o777)
				got := make(chan string, 1)
				go func() {
					buf := make([]byte, 64)
					conn.SetReadDeadline(time.Now().Add(20 * time.Second))
					n, _ := conn.Read(buf)
					got <- string(buf[:n])
				}()
				// A bare repository made before the run, not named .git.
				u.mkdir(t, filepath.Join(w, "trap/objects"))
				u.mkdir(t, filepath.Join(w, "trap/refs"))
				u.mkdir(t, filepath.Join(w, "trap/hooks"))
				u.write(t, filepath.Join(w, "trap/HEAD"), "ref: refs/heads/main\n")
				u.write(t, filepath.Join(w, "trap/config"), "[core]\n\tbare = true\n")
				u.mkdir(t, filepath.Join(w, "made"))
				u.write(t, filepath.Join(w, "made/HEAD"), "ref: refs/heads/main\n")
				u.mkdir(t, filepath.Join(w, "made/objects"))
				u.write(t, filepath.Join(w, "made/config"), "[core]\n\tfsmonitor = echo pwned\n")
				settings := modeSettings(mode, `"allowWrite":["."]`)
				script := `
import socket, os
def attempt(name, f):
    try:
        f(); print("ESCAPED", name)
    except OSError as e:
        print("refused", name, e.errno)
a, b = socket.socketpair()
attempt("bind-.env", lambda: a.bind(".env"))
os.makedirs("a/b/c/d", exist_ok=True)
attempt("bind-deep-bashrc", lambda: a.bind("a/b/c/d/.bashrc"))
attempt("bind-refs", lambda: a.bind("made/refs"))
attempt("bind-abstract", lambda: a.bind("\0srt-e2e"))
def dgram():
    x, y = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    x.sendto(b"leak", "host-dgram.sock")
attempt("dgram-to-host", dgram)
def raw():
    x, y = socket.socketpair(socket.AF_UNIX, socket.SOCK_RAW)
    x.sendto(b"leak", "host-dgram.sock")
attempt("raw-is-dgram-to-host", raw)
attempt("stream-connect-host", lambda: a.connect("host-dgram.sock"))
def hooks():
    with open("trap/hooks/pre-commit", "w") as f: f.write("echo pwned")
attempt("bare-hook", hooks)
def cfg():
    with open("trap/config", "a") as f: f.write("[core]\n\tfsmonitor = echo pwned\n")
attempt("bare-config", cfg)
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
c = socket.create_connection(s.getsockname()); k, _ = s.accept(); c.send(b"tcp"); print("tcp", k.recv(3).decode())
`
				out, errOut, _ := runSrt(t, u, w, settings, "python3", "-c", script)
				if strings.Contains(out, "ESCAPED") {
					t.Errorf("escaped:\n%s\nstderr %s", out, errOut)
				}
				if !strings.Contains(out, "tcp tcp") {
					t.Errorf("a TCP bind on loopback failed: %s %s", out, errOut)
				}
				for _, p := range []string{".env", "a/b/c/d/.bashrc", "made/refs", "trap/hooks/pre-commit"} {
					if _, err := os.Lstat(filepath.Join(w, p)); err == nil {
						t.Errorf("%s exists on the host", p)
					}
				}
				if b, _ := os.ReadFile(filepath.Join(w, "trap/config")); strings.Contains(string(b), "fsmonitor") {
					t.Errorf("the bare repository's config was changed: %q", b)
				}
				conn.Close()
				if m := <-got; m != "" {
					t.Errorf("the host datagram socket received %q from the sandbox", m)
				}
			})
		}
	})
}

// TestHostFIFO: a read-only mount refuses writes to files, not opens of
// a FIFO for writing; the host's FIFOs (/run/initctl, a tool's control
// pipe) must not be written from the sandbox, while the sandbox's own
// FIFOs work (adversarial review). Creation-time rules on: they perform
// every write open.
func TestHostFIFO(t *testing.T) {
	t.Parallel()
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel()
		w := u.workDir(t)
		u.mkdir(t, filepath.Join(w, "proj"))
		u.mkdir(t, filepath.Join(w, "host"))
		fifo := filepath.Join(w, "host/control")
		if err := exec.Command("mkfifo", "-m", "666", fifo).Run(); err != nil {
			t.Fatal(err)
		}
		// O_RDWR: the host's reader opens without waiting for a writer.
		r, err := os.OpenFile(fifo, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		out, errOut, _ := sh(t, u, filepath.Join(w, "proj"), `{"filesystem":{"allowWrite":["."]}}`,
			`(echo leak > ../host/control) 2>/dev/null && echo WROTE; (exec 3<>../host/control) 2>/dev/null && echo OPENED-RDWR
mkfifo own && { cat own & echo own-ok > own; wait; }`)
		if strings.Contains(out, "WROTE") || strings.Contains(out, "OPENED") {
			t.Errorf("the host's FIFO was opened for writing: %s (stderr %s)", out, errOut)
		}
		if !strings.Contains(out, "own-ok") {
			t.Errorf("the sandbox's own FIFO failed: %q %s", out, errOut)
		}
		r.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		buf := make([]byte, 16)
		if n, _ := r.Read(buf); n > 0 {
			t.Errorf("the host's FIFO received %q", buf[:n])
		}
	})
}
