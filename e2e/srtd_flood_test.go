package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/srt-go/srt/port"
)

// floodDenials runs in a session: two processes each CONNECT to the
// session's HTTP proxy, one distinct denied host after another, argv[1]
// times each (or for 30 s at most), then print how many they sent.
const floodDenials = `
import os, socket, sys, time
hp = os.environ["HTTP_PROXY"].split("://", 1)[1].rstrip("/")
host, port = hp.rsplit(":", 1)
end = time.time() + 30
kids = []
for k in range(2):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        n = 0
        while n < int(sys.argv[1]) and time.time() < end:
            s = socket.create_connection((host, int(port)), timeout=5)
            s.sendall(b"CONNECT h%d-%d.denied-example.org:443 HTTP/1.1\r\nHost: x\r\n\r\n" % (k, n))
            s.recv(4096)
            s.close()
            n += 1
        os.write(w, b"%d" % n)
        os._exit(0)
    os.close(w)
    kids.append((pid, r))
total = 0
for pid, r in kids:
    os.waitpid(pid, 0)
    total += int(os.read(r, 64) or b"0")
print("SENT %d" % total, flush=True)
`

// vmRSS returns pid's resident set, bytes (/proc/<pid>/status).
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no VmRSS in %s", b)
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10
}

// TestSrtdViolationFlood: an exec that floods its proxy with denied
// CONNECTs, each to another host, while its client does not read (a
// receive buffer of 4 KiB, nothing read until the command has ended),
// does not grow srtd without bound (issue 16, F4): once the client reads,
// the stream holds the violations srtd kept, a lost event counting the
// ones it dropped, the command's output and its exit, in that order; and
// srtd's VmRSS stays under a generous bound (a sanity check: the lost
// event is what fails without the bound, srtd holding every violation
// instead).
func TestSrtdViolationFlood(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		d := startSrtd(t, u, "--microvm", "off")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := d.c.Launch(ctx, port.Spec{SessionID: "flood", WorkspaceID: "w"}, port.BackendNative); err != nil {
			t.Fatal(err)
		}
		before := vmRSS(t, d.cmd.Process.Pid)

		dialer := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
			return serr
		}}
		hc := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
		// 20000 denials: many more than srtd's socket buffers and the
		// stream's bound hold together (about 8000).
		body := `{"argv":["python3","-c",` + strconv.Quote(floodDenials) + `,"10000"]}`
		req, _ := http.NewRequestWithContext(ctx, "POST", d.url+"/v1/sandboxes/flood/exec", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+d.token)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("exec: %d", resp.StatusCode)
		}
		// Not reading while the command floods, until it has ended (the
		// sandbox is warm again once its exit is queued).
		peak := before
		for deadline := time.Now().Add(90 * time.Second); d.handle(t, "flood").State != port.StateWarm; {
			if time.Now().After(deadline) {
				t.Fatal("the flood did not end in 90 s")
			}
			time.Sleep(500 * time.Millisecond)
			peak = max(peak, vmRSS(t, d.cmd.Process.Pid))
		}

		var delivered, lost uint64
		var out strings.Builder
		var order []port.EventType
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev port.Event
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatal(err)
			}
			switch ev.Type {
			case port.EventViolation:
				delivered += max(ev.Count, 1)
				if len(order) > 0 && order[len(order)-1] == port.EventViolation {
					continue
				}
			case port.EventLost:
				lost += ev.Lost
			case port.EventStdout, port.EventStderr:
				out.Write(ev.Data)
			}
			order = append(order, ev.Type)
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		t.Logf("srtd VmRSS %d MiB before, peak %d MiB; %d violations delivered, %d lost; output %q; events %v",
			before>>20, peak>>20, delivered, lost, out.String(), order)
		m := regexp.MustCompile(`SENT (\d+)`).FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("no SENT line in the output %q", out.String())
		}
		sent, _ := strconv.ParseUint(m[1], 10, 64)
		if lost == 0 {
			t.Errorf("no lost event: srtd held all %d violations for a client that did not read", delivered)
		}
		// Each CONNECT is one denial; the last ones may be reported
		// after the command's exit.
		if delivered+lost > sent || delivered+lost+4 < sent {
			t.Errorf("%d delivered + %d lost; want the %d sent", delivered, lost, sent)
		}
		if len(order) < 2 || order[len(order)-1] != port.EventExit {
			t.Errorf("the stream does not end with exit: %v", order)
		}
		if i := indexOf(order, port.EventLost); i < 0 || i > indexOf(order, port.EventExit) {
			t.Errorf("lost after exit: %v", order)
		}
		if peak > before+128<<20 {
			t.Errorf("srtd VmRSS grew from %d MiB to %d MiB while the client did not read", before>>20, peak>>20)
		}
	})
}

func indexOf(s []port.EventType, v port.EventType) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
