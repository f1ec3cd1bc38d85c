package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The relayed host loopback ports (issue 17, "Allow-listed host loopback
// ports just work"): an allowedDomains entry "localhost:PORT" (or
// "127.0.0.1:PORT", "[::1]:PORT") makes the sandbox's own loopback serve
// that port, relayed to the host's, for every client, proxy-aware or not.

// loopbackPy runs inside the sandbox: argv[1] is the half-close echo
// port, argv[2] the listed HTTP port, argv[3] a port that is not listed.
// Each line is "name: outcome".
const loopbackPy = `
import errno, socket, sys
echo, web, other = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])

def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if e.errno else type(e).__name__

# A client with its own dialer, no proxy: a raw connection to 127.0.0.1.
try:
    s = socket.create_connection(("127.0.0.1", web), timeout=10)
    s.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    print("raw-v4:", "reached" if b"dev-server" in data else "empty " + repr(data[:80]))
except OSError as e:
    print("raw-v4:", err(e))

# Half-close: the client ends its side, the host server answers after
# reading to the end, and the answer still arrives.
try:
    s = socket.create_connection(("127.0.0.1", echo), timeout=10)
    s.sendall(b"ping")
    s.shutdown(socket.SHUT_WR)
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    print("half-close:", data.decode())
except OSError as e:
    print("half-close:", err(e))

# [::1] in the sandbox: relayed to the host's [::1], or to its 127.0.0.1
# when nothing answers there (the host servers listen on 127.0.0.1 only).
try:
    s = socket.create_connection(("::1", web), timeout=10)
    s.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
    data = s.recv(65536)
    print("raw-v6:", "reached" if b"HTTP/1." in data else "empty")
except OSError as e:
    print("raw-v6:", err(e))

# A port that is not listed (only a port-less "localhost" names it):
# nothing listens in the sandbox.
try:
    socket.create_connection(("127.0.0.1", other), timeout=10)
    print("unlisted:", "reached")
except OSError as e:
    print("unlisted:", err(e))

# The command cannot take a relayed port to answer in the host server's
# place: PID 1 bound it before the command ran.
for name, fam, addr in (("bind-v4", socket.AF_INET, "127.0.0.1"), ("bind-any4", socket.AF_INET, "0.0.0.0"),
                        ("bind-any6", socket.AF_INET6, "::")):
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if hasattr(socket, "SO_REUSEPORT"):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        s.bind((addr, web))
        s.listen(1)
        print(name + ":", "bound")
    except OSError as e:
        print(name + ":", err(e))
    s.close()
`

// TestLoopbackRelay: with "localhost:PORT" allowed, curl --noproxy '*'
// and a raw Python socket reach the host's server on 127.0.0.1:PORT, a
// half-close is passed on, a port not listed (a port-less "localhost"
// lists none) is refused inside, the command cannot bind the relayed
// port itself, and srtd's own address, listed too, is refused and
// recorded.
func TestLoopbackRelay(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "dev-server") }))
	defer web.Close()
	webPort := portOf(t, web.Listener.Addr())
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "other-server") }))
	defer other.Close()
	otherPort := portOf(t, other.Listener.Addr())
	echoPort := halfCloseServer(t)
	forEachUser(t, func(t *testing.T, u *account) {
		d := startSrtd(t, u)
		su, _ := url.Parse(d.url)
		srtdPort, _ := strconv.Atoi(su.Port())
		dir := u.workDir(t)
		settings := fmt.Sprintf(`{"filesystem":{"allowWrite":["."]},"network":{"allowedDomains":["localhost:%d","127.0.0.1:%d","localhost","localhost:%d"]}}`,
			webPort, echoPort, srtdPort)
		u.write(t, filepath.Join(dir, "loop.py"), loopbackPy)
		vfile := filepath.Join(dir, "violations.jsonl")
		script := fmt.Sprintf(`curl -sS --max-time 10 --noproxy '*' -w '\n' http://localhost:%d/
curl -sS --max-time 10 -o /dev/null -w 'srtd=%%{http_code}\n' --noproxy '*' http://127.0.0.1:%d/healthz
python3 loop.py %d %d %d`, webPort, srtdPort, echoPort, webPort, otherPort)
		stdout, stderr, _ := srtRun{u: u, dir: dir, settings: settings, pre: []string{"--violations", vfile},
			args: []string{"sh", "-c", script}}.run(t)
		want := []string{"dev-server\n", "srtd=000\n", "raw-v4: reached\n", "half-close: pong:ping\n",
			"unlisted: ECONNREFUSED\n", "bind-v4: EADDRINUSE\n", "bind-any4: EADDRINUSE\n"}
		if ipv6Loopback() {
			want = append(want, "raw-v6: reached\n", "bind-any6: EADDRINUSE\n")
		}
		for _, w := range want {
			if !strings.Contains(stdout, w) {
				t.Errorf("stdout lacks %q:\n%s\nstderr:\n%s", w, stdout, stderr)
			}
		}
		// The refused relay to srtd is recorded; the allowed ones and the
		// unlisted port (no relay) are not.
		target := fmt.Sprintf("127.0.0.1:%d", srtdPort)
		var got []map[string]any
		for _, v := range readLoopbackViolations(t, vfile) {
			if v["protocol"] == "loopback" {
				got = append(got, v)
			}
		}
		if len(got) != 1 || got[0]["target"] != target || got[0]["action"] != "network-outbound" ||
			!strings.Contains(fmt.Sprint(got[0]["reason"]), "srtd") {
			t.Errorf("loopback violations %v, want one network-outbound %s naming srtd", got, target)
		}
	})
}

// TestLoopbackRelayDenied: a listed port that deniedDomains refuses is
// not served at all, and an entry spelled [::1]:PORT serves the sandbox's
// [::1] only, relayed to the host's [::1].
func TestLoopbackRelayDenied(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "dev-server") }))
	defer web.Close()
	p := portOf(t, web.Listener.Addr())
	v6, q := ipv6Loopback(), 0
	if v6 {
		ln, err := net.Listen("tcp6", "[::1]:0")
		if err != nil {
			t.Fatal(err)
		}
		go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "v6-server") }))
		defer ln.Close()
		q = portOf(t, ln.Addr())
	}
	forEachUser(t, func(t *testing.T, u *account) {
		dir := u.workDir(t)
		settings := fmt.Sprintf(`{"network":{"allowedDomains":["localhost:%d","[::1]:%d"],"deniedDomains":["127.0.0.1:%d","localhost:%d"]}}`, p, q, p, p)
		script := fmt.Sprintf(`curl -sS --max-time 10 --noproxy '*' http://127.0.0.1:%d/ 2>&1; echo "denied=$?"
curl -sS --max-time 10 --noproxy '*' http://127.0.0.1:%d/ 2>&1; echo "v6-entry-on-v4=$?"
[ %d -ne 0 ] && curl -sS --max-time 10 --noproxy '*' -g -w '\n' 'http://[::1]:%d/'`, p, q, q, q)
		stdout, stderr, _ := srtRun{u: u, dir: dir, settings: settings, args: []string{"sh", "-c", script}}.run(t)
		want := []string{"denied=7\n"} // curl 7: could not connect
		if v6 {
			want = append(want, "v6-entry-on-v4=7\n", "v6-server\n")
		}
		for _, w := range want {
			if !strings.Contains(stdout, w) {
				t.Errorf("stdout lacks %q:\n%s\nstderr:\n%s", w, stdout, stderr)
			}
		}
		if strings.Contains(stdout, "dev-server") {
			t.Errorf("a denied port was relayed:\n%s", stdout)
		}
	})
}

// halfCloseServer listens on the host's 127.0.0.1 and answers each
// connection, once the client has half-closed, with "pong:" and what it
// sent.
func halfCloseServer(t *testing.T) int {
	t.Helper()
	return serveTCP(t, func(c net.Conn) {
		if b, err := io.ReadAll(c); err == nil {
			io.WriteString(c, "pong:"+string(b))
		}
	})
}

// ipv6Loopback reports whether this host has ::1, which a new network
// namespace then has too.
func ipv6Loopback() bool {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// readLoopbackViolations parses a --violations file into generic records
// (the protocol key included); a missing file is no records.
func readLoopbackViolations(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var v map[string]any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, v)
	}
	return out
}
