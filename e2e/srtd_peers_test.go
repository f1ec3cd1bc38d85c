package e2e

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// slowBodies opens connections to srtd and holds each with a request whose
// body never comes (the slow-body lock-out a review found), then prints
// how many the server closed within 15 s (an answer would need the body;
// a served connection stays open, one refused is closed, at once when the
// machine is idle).
const slowBodies = `
import socket, sys, time
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
conns = []
for i in range(n):
    s = socket.create_connection((host, port))
    s.sendall(b"POST /v1/sandboxes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n")
    conns.append(s)
closed, end = 0, time.time() + 15
for s in conns:
    s.settimeout(max(0.05, end - time.time()))
    try:
        if s.recv(1) == b"":
            closed += 1
    except socket.timeout:
        pass
    except OSError:
        closed += 1
print(closed, flush=True)
time.sleep(int(sys.argv[4]))
`

// inflateAndFlood keeps many listening sockets open (a big socket table
// makes a per-connection scan of /proc/net/tcp slow) and connects and
// closes at once, repeatedly, for the given seconds.
const inflateAndFlood = `
import resource, socket, sys, time
port, n, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held = []
for i in range(min(n, hard - 64)):
    s = socket.socket()
    s.bind(("127.0.%d.%d" % (3 + i // 62500, 1 + (i // 250) % 250), 10000 + i % 250))
    s.listen(1)
    held.append(s)
print("ready", len(held), flush=True)
end = time.time() + secs
while time.time() < end:
    c = socket.socket(); c.setblocking(False); c.connect_ex(("127.0.0.1", port)); c.close()
    time.sleep(0.002)
`

// fromOtherAddress connects to srtd from every other address of this host
// it can bind and prints, per address, whether srtd answered a request.
const fromOtherAddress = `
import socket, sys
host, port = sys.argv[1], int(sys.argv[2])
srcs = [a for a in sys.argv[3:]]
for src in srcs:
    s = socket.socket()
    try:
        s.bind((src, 0)); s.connect((host, port))
    except OSError as e:
        print(src, "skip", e); continue
    s.settimeout(3)
    try:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        r = s.recv(64)
    except OSError:
        r = b""
    print(src, "answered" if r else "closed", flush=True)
`

// TestSrtdOtherUsersConnections: another local user, who cannot read the
// token, cannot hold srtd's API connection slots either: its connections
// are closed before a byte is read, and the token holder is served while
// it tries. Without the peer check, --max-api-conns slow-body requests
// locked the legitimate client out for good.
func TestSrtdOtherUsersConnections(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		d := startSrtd(t, u, "--max-api-conns", "8")
		host, port, _ := strings.Cut(strings.TrimPrefix(d.url, "http://"), ":")
		// The attacker: nobody, neither srtd's user nor root.
		cmd := exec.Command("/usr/bin/python3", "-c", slowBodies, host, port, "40", "30")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		cmd.Dir = os.TempDir()
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		b := make([]byte, 32)
		n, _ := out.Read(b)
		closed, _ := strconv.Atoi(strings.TrimSpace(string(b[:n])))
		if closed != 40 {
			t.Errorf("srtd closed %d of another user's 40 connections at once; want all", closed)
		}
		// While the attacker still holds its sockets, the token holder is
		// served.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, err := d.c.Probe(ctx); err != nil {
			t.Errorf("the token holder is locked out while another user holds connections: %v", err)
		}
		// From another address of this host (the peer check once let any
		// non-loopback source through).
		var srcs []string
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() {
					srcs = append(srcs, ip.IP.String())
				}
			}
		}
		if len(srcs) > 0 {
			other := exec.Command("/usr/bin/python3", append([]string{"-c", fromOtherAddress, host, port}, srcs...)...)
			other.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			other.Dir = os.TempDir()
			out, _ := other.Output()
			if strings.Contains(string(out), "answered") {
				t.Errorf("another user's connection from another address of this host was served:\n%s", out)
			}
			t.Logf("%s", out)
		}
		// A flood of connects from a user whose socket table is big: the
		// owner lookups must not make srtd serial and slow.
		flood := exec.Command("/usr/bin/python3", "-c", inflateAndFlood, port, "15000", "20")
		flood.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		flood.Dir = os.TempDir()
		fout, err := flood.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		flood.Stderr = os.Stderr
		if err := flood.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { flood.Process.Kill(); flood.Wait() })
		fout.Read(make([]byte, 64)) // "ready N"
		time.Sleep(3 * time.Second) // the flood runs
		// A new connection (the client's keep-alive one would not need
		// srtd to accept anything).
		fresh := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		if resp, err := fresh.Get(d.url + "/healthz"); err != nil {
			t.Errorf("the token holder is locked out by another user's connect flood: %v", err)
		} else {
			resp.Body.Close()
		}
		if !strings.Contains(d.stderr(), "API connection refused: another user's") {
			t.Errorf("no log line for the refused connections:\n%s", d.stderr())
		}
	})
}
