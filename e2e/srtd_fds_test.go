package e2e

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/srt-go/srt/client"
	"github.com/srt-go/srt/port"
	"github.com/srt-go/srt/proxy"
)

// holdConns runs in a session: it opens connections to the session's HTTP
// proxy, eight at a time, until one is refused (closed at once, after a
// 503) or it runs out of descriptors, keeps the others open, and prints
// how many it holds and what the refused one got. Accept is first in,
// first out, so when one is refused every earlier one was accepted: what
// survives the final sweep is what the proxy serves.
const holdConns = `
import os, select, socket, time
hp = os.environ["HTTP_PROXY"].split("://", 1)[1].rstrip("/")
host, port = hp.rsplit(":", 1)
def closed(socks, ms):
    p = select.poll()
    for s in socks:
        p.register(s, select.POLLIN)
    return {fd for fd, _ in p.poll(ms)}
held, answer, full = [], None, False
while not full and len(held) < 20000:
    batch = []
    for i in range(8):
        try:
            batch.append(socket.create_connection((host, int(port)), timeout=5))
        except OSError as e:
            print("connect failed after %d: %s" % (len(held) + len(batch), e), flush=True)
            full = True
            break
    gone = closed(batch, 30)
    for s in batch:
        if s.fileno() in gone:
            full = True
            if answer is None:
                answer = s.recv(300).decode(errors="replace").splitlines()[:1]
            s.close()
        else:
            held.append(s)
time.sleep(0.5)
gone = closed(held, 0)
live = [s for s in held if s.fileno() not in gone]
print("HOLDING %d answer=%s" % (len(live), answer), flush=True)
time.sleep(25)
`

// TestSrtdDescriptorExhaustion: one session opening every connection it
// can to its own proxy neither spends srtd's descriptors nor stops
// another session (issue 16, "Descriptor exhaustion"). srtd runs with a
// descriptor limit of 8192, so it lowers its per-session cap to fit
// (logged); the attacking session holds at most that many, the refusals
// are a violation on its exec stream, and meanwhile a second session
// launches and runs a command and /healthz answers. Without the cap the
// session would open close to 8192 connections, each one a descriptor
// in srtd, and the second launch would fail.
func TestSrtdDescriptorExhaustion(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		prefix := []string{"prlimit", "--nofile=8192:8192", "--"}
		if !u.direct {
			prefix = append(prefix, "setpriv", "--reuid", fmt.Sprint(u.uid), "--regid", fmt.Sprint(u.gid), "--init-groups", "--")
		}
		env := []string{"PATH=" + cleanPATH, "HOME=" + u.home, "USER=" + u.name, "SHELL=/bin/bash"}
		d := launchSrtd(t, buildSrtd(t), u.workDir(t), prefix, env, 20*time.Second, "--microvm", "off")

		m := regexp.MustCompile(`msg="descriptor budget" limit=(\d+) .*connsPerSession=(\d+)`).FindStringSubmatch(d.stderr())
		if m == nil {
			t.Fatalf("no descriptor budget line in\n%s", d.stderr())
		}
		limit, _ := strconv.Atoi(m[1])
		cap, _ := strconv.Atoi(m[2])
		if limit != 8192 || cap >= port.DefaultMaxConnsPerSession || cap < 8 {
			t.Fatalf("limit %d, per-session cap %d; want 8192 and a cap lowered below %d to fit", limit, cap, port.DefaultMaxConnsPerSession)
		}
		if !strings.Contains(d.stderr(), "lowered to fit the descriptor limit") {
			t.Errorf("the lowered cap is not logged:\n%s", d.stderr())
		}

		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := d.c.Launch(ctx, port.Spec{SessionID: "a", WorkspaceID: "w"}, port.BackendNative); err != nil {
			t.Fatal(err)
		}
		actx, stopA := context.WithCancel(ctx)
		defer stopA()
		events, err := d.c.Exec(actx, "a", client.ExecRequest{Argv: []string{"python3", "-c", holdConns}})
		if err != nil {
			t.Fatal(err)
		}
		holding := make(chan string, 1)
		limitViolation := make(chan port.Violation, 1)
		go func() {
			var out strings.Builder
			sent := false
			for ev, err := range events {
				if err != nil {
					break
				}
				switch {
				case ev.Type == port.EventStdout || ev.Type == port.EventStderr:
					out.Write(ev.Data)
					if !sent && strings.Contains(out.String(), "HOLDING") && strings.HasSuffix(out.String(), "\n") {
						holding <- out.String()
						sent = true
					}
				case ev.Type == port.EventViolation && ev.Violation != nil && ev.Violation.Rule == proxy.RuleConnLimit:
					select {
					case limitViolation <- *ev.Violation:
					default:
					}
				}
			}
			if !sent {
				holding <- out.String()
			}
		}()

		var got string
		select {
		case got = <-holding:
		case <-time.After(60 * time.Second):
			t.Fatalf("session a never reported; srtd:\n%s", d.stderr())
		}
		hm := regexp.MustCompile(`HOLDING (\d+) answer=(.*)`).FindStringSubmatch(got)
		if hm == nil {
			t.Fatalf("session a: %q", got)
		}
		held, _ := strconv.Atoi(hm[1])
		if held > cap || held < cap/2 {
			t.Errorf("session a holds %d connections to its proxy; want at most the cap %d (and most of it)", held, cap)
		}
		if !strings.Contains(hm[2], "503") {
			t.Errorf("the refused connection got %s; want a 503", hm[2])
		}

		// While a holds them: b launches and runs, srtd answers.
		if _, err := d.c.Launch(ctx, port.Spec{SessionID: "b", WorkspaceID: "w"}, port.BackendNative); err != nil {
			t.Fatalf("launch of b while a holds %d connections: %v\n%s", held, err, d.stderr())
		}
		if out, code := d.sh(t, "b", "echo ok-from-b"); code != 0 || !strings.Contains(out, "ok-from-b") {
			t.Errorf("exec in b: %d %q", code, out)
		}
		resp, err := http.Get(d.url + "/healthz")
		if err != nil {
			t.Fatalf("/healthz: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("/healthz: %d", resp.StatusCode)
		}

		select {
		case v := <-limitViolation:
			if !strings.Contains(v.Raw, proxy.RuleConnLimit) || v.Action != "network-outbound" {
				t.Errorf("violation %+v; want a network-outbound refusal naming the %s", v, proxy.RuleConnLimit)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("no %q violation on session a's exec stream", proxy.RuleConnLimit)
		}
		if !strings.Contains(d.stderr(), "proxy connection refused: limit reached") {
			t.Errorf("no log line for the refusals:\n%s", d.stderr())
		}
	})
}
