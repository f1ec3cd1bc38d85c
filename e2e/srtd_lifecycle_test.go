package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/srt-go/srt/client"
	"github.com/srt-go/srt/port"
)

// The lifecycle a client can watch (issue 16): a launch that does not
// wait, the sandbox's own event stream, the handle's spec fields, the
// agent re-bound, and a start that fails in the background.

// call sends one request to d and returns the status and body.
func (d *srtd) call(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	r, _ := http.NewRequest(method, d.url+path, strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (d *srtd) handle(t *testing.T, id string) port.Handle {
	t.Helper()
	code, b := d.call(t, "GET", "/v1/sandboxes/"+id, "")
	var h port.Handle
	if err := json.Unmarshal(b, &h); code != 200 || err != nil {
		t.Fatalf("GET %s: %d %s", id, code, b)
	}
	return h
}

// sandboxEvents subscribes to id's events stream; each event's SSE id is
// checked against its seq. The channel closes when the stream ends.
func (d *srtd) sandboxEvents(t *testing.T, id string) <-chan port.Event {
	t.Helper()
	in := d.sandboxEventsAfter(t, id, "")
	ch := make(chan port.Event, 64)
	go func() {
		defer close(ch)
		for ev := range in {
			ch <- ev.Event
		}
	}()
	return ch
}

// sandboxSSE is one event of a sandbox's stream with its SSE id.
type sandboxSSE struct {
	ID string
	port.Event
}

// sseIDShape is the shape of a sandbox stream's SSE id: "<tag>.<seq>".
var sseIDShape = regexp.MustCompile(`^([0-9a-f]{12})\.(\d+)$`)

// sandboxEventsAfter is sandboxEvents with a Last-Event-ID header (none
// when lastID is ""), and the SSE ids: each is checked to be
// "<tag>.<seq>" with the event's seq. The channel closes when the stream
// ends.
func (d *srtd) sandboxEventsAfter(t *testing.T, id, lastID string) <-chan sandboxSSE {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r, _ := http.NewRequestWithContext(ctx, "GET", d.url+"/v1/sandboxes/"+id+"/events", nil)
	r.Header.Set("Authorization", "Bearer "+d.token)
	if lastID != "" {
		r.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events of %s: %d %s", id, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	ch := make(chan sandboxSSE, 64)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var sseID, sseType string
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "id: "); ok {
				sseID = v
			} else if v, ok := strings.CutPrefix(line, "event: "); ok {
				sseType = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				var ev port.Event
				json.Unmarshal([]byte(v), &ev)
				if m := sseIDShape.FindStringSubmatch(sseID); m == nil || m[2] != fmt.Sprint(ev.Seq) || sseType != string(ev.Type) {
					t.Errorf("SSE id %s event %s for %+v", sseID, sseType, ev)
				}
				ch <- sandboxSSE{sseID, ev}
			}
		}
	}()
	return ch
}

// expectEvents reads events until each of want has been seen in order
// (others may come between; "" takes whichever comes next), and returns
// the ones seen by type ("" for the any).
func expectEvents(t *testing.T, ch <-chan port.Event, want ...port.EventType) map[port.EventType]port.Event {
	t.Helper()
	seen := map[port.EventType]port.Event{}
	var got []string
	timeout := time.After(30 * time.Second)
	for len(want) > 0 {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("stream ended; still want %v; got %v", want, got)
			}
			got = append(got, string(ev.Type))
			if ev.Type == want[0] || want[0] == "" {
				seen[want[0]] = ev
				want = want[1:]
			}
		case <-timeout:
			t.Fatalf("still want %v after 30s; got %v", want, got)
		}
	}
	return seen
}

func TestSrtdLifecycle(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		ctx := context.Background()
		// A copy of bubblewrap that the test can make unusable once srtd
		// has probed it: then a start fails inside the backend.
		real, err := exec.LookPath("bwrap")
		if err != nil {
			t.Skip("no bwrap")
		}
		bwrap := filepath.Join(u.workDir(t), "bwrap")
		if b, err := os.ReadFile(real); err != nil || os.WriteFile(bwrap, b, 0o755) != nil {
			t.Fatalf("copying bwrap: %v", err)
		}
		d := startSrtd(t, u, "--bwrap", bwrap)
		ro := u.workDir(t)

		// wait:false: 202, created at once; GET then shows warm.
		code, body := d.call(t, "POST", "/v1/sandboxes", fmt.Sprintf(`{"sessionId":"life","workspaceId":"ws-1","agentId":"agent-1","mode":"chat",
			"bindMounts":[{"hostPath":%q,"guestPath":"/ro","readOnly":true}],"backend":"native","wait":false}`, ro))
		var h port.Handle
		json.Unmarshal(body, &h)
		if code != http.StatusAccepted || h.State != port.StateCreated || h.SessionID != "life" {
			t.Fatalf("launch wait:false: %d %s; want 202 created", code, body)
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if h = d.handle(t, "life"); h.State == port.StateWarm {
				break
			}
			if h.State != port.StateCreated || time.Now().After(deadline) {
				t.Fatalf("after a wait:false launch: %+v; want created, then warm", h)
			}
		}
		if h.Backend != port.BackendNative || h.WorkspaceID != "ws-1" || h.AgentID != "agent-1" || h.Mode != port.ModeChat ||
			!h.NetworkEnabled || len(h.BindMounts) != 1 || h.BindMounts[0].GuestPath != "/ro" || !h.BindMounts[0].ReadOnly {
			t.Errorf("handle does not report the spec: %+v", h)
		}

		// Subscribed after the launch, the stream still starts with it.
		evs := d.sandboxEvents(t, "life")
		first := expectEvents(t, evs, port.EventStarting, port.EventReady)
		if first[port.EventStarting].Seq != 1 {
			t.Errorf("starting has seq %d, want 1", first[port.EventStarting].Seq)
		}

		// An exec refused by the proxy: its violation and its exit, with
		// its execId, on the sandbox's stream too.
		run, err := d.c.Exec(ctx, "life", client.ExecRequest{Argv: []string{"sh", "-c",
			"curl -s -o /dev/null -w '%{http_code}' --noproxy '' --max-time 10 http://denied.example/; exit 7"}})
		if err != nil {
			t.Fatal(err)
		}
		execID := ""
		for ev, err := range run {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type == port.EventStarting {
				execID = ev.ExecID
			}
		}
		// Every violation comes (curl's refused AF_UNIX socket too), then
		// the exit.
		var denied *port.Event
		for {
			ev := expectEvents(t, evs, "")[""]
			if ev.Type == port.EventViolation && ev.Violation != nil && strings.Contains(ev.Violation.Target, "denied.example") {
				denied = &ev
			}
			if ev.Type == port.EventExit {
				if ev.ExecID != execID || ev.ExitCode == nil || *ev.ExitCode != 7 {
					t.Errorf("exit %+v; want execId %s, code 7", ev, execID)
				}
				break
			}
		}
		if denied == nil || denied.ExecID != execID || denied.Violation.Action == "" || denied.Violation.Raw == "" {
			t.Errorf("violation for denied.example: %+v; want one with execId %s, action and raw", denied, execID)
		}

		if _, err := d.c.Suspend(ctx, "life"); err != nil {
			t.Fatal(err)
		}
		if _, err := d.c.Resume(ctx, "life"); err != nil {
			t.Fatal(err)
		}
		expectEvents(t, evs, port.EventSuspended, port.EventResumed)

		// Re-binding the agent; the policy fields stay as launched.
		if code, b := d.call(t, "PATCH", "/v1/sandboxes/life", `{"agentId":"agent-2"}`); code != 200 {
			t.Fatalf("PATCH agentId: %d %s", code, b)
		}
		if a := expectEvents(t, evs, port.EventAgent)[port.EventAgent]; a.AgentID != "agent-2" {
			t.Errorf("agent event %+v", a)
		}
		if h := d.handle(t, "life"); h.AgentID != "agent-2" {
			t.Errorf("handle after PATCH: agentId %q", h.AgentID)
		}
		if code, b := d.call(t, "PATCH", "/v1/sandboxes/life", `{"mode":"review"}`); code != 400 || !strings.Contains(string(b), `"field":"mode"`) {
			t.Errorf("PATCH mode: %d %s; want 400 for mode", code, b)
		}

		if code, b := d.call(t, "DELETE", "/v1/sandboxes/life", ""); code != 200 {
			t.Fatalf("DELETE: %d %s", code, b)
		}
		expectEvents(t, evs, port.EventDestroyed)
		select {
		case ev, ok := <-evs:
			if ok {
				t.Errorf("event after destroyed: %+v", ev)
			}
		case <-time.After(10 * time.Second):
			t.Error("the stream did not end after destroyed")
		}

		// bubblewrap unusable now: a wait:false launch is accepted (the
		// checks before the start pass) and ends in error, listed, with
		// the reason, until DELETE; a waiting launch is refused and leaves
		// nothing.
		if err := os.Chmod(bwrap, 0o644); err != nil {
			t.Fatal(err)
		}
		if code, b := d.call(t, "POST", "/v1/sandboxes", `{"sessionId":"broken","workspaceId":"w","backend":"native","wait":false}`); code != http.StatusAccepted {
			t.Fatalf("wait:false with bwrap unusable: %d %s; want 202", code, b)
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if h = d.handle(t, "broken"); h.State == port.StateError {
				break
			}
			if h.State != port.StateCreated || time.Now().After(deadline) {
				t.Fatalf("a start that fails: %+v; want created, then error", h)
			}
		}
		if !strings.Contains(h.Error, "bwrap") {
			t.Errorf("error %q does not say why", h.Error)
		}
		bev := d.sandboxEvents(t, "broken")
		if e := expectEvents(t, bev, port.EventStarting, port.EventError)[port.EventError]; !strings.Contains(e.Error, "bwrap") {
			t.Errorf("error event %+v", e)
		}
		if code, b := d.call(t, "GET", "/v1/sandboxes", ""); code != 200 || !strings.Contains(string(b), `"broken"`) {
			t.Errorf("a sandbox in error is not listed: %d %s", code, b)
		}
		if _, err := d.c.Exec(ctx, "broken", client.ExecRequest{Argv: []string{"true"}}); err == nil || err.(*client.Error).Status != 409 {
			t.Errorf("exec in error: %v; want 409", err)
		}
		if code, b := d.call(t, "POST", "/v1/sandboxes", `{"sessionId":"broken2","workspaceId":"w","backend":"native"}`); code != http.StatusServiceUnavailable {
			t.Errorf("waiting launch with bwrap unusable: %d %s; want 503", code, b)
		}
		if code, _ := d.call(t, "GET", "/v1/sandboxes/broken2", ""); code != 404 {
			t.Errorf("a failed waiting launch left a sandbox: %d", code)
		}
		if code, b := d.call(t, "DELETE", "/v1/sandboxes/broken", ""); code != 200 {
			t.Errorf("DELETE in error: %d %s", code, b)
		}
		expectEvents(t, bev, port.EventDestroyed)
	})
}

// TestSrtdStartChecks: what the spec alone shows to be refused is refused
// before a launch that does not wait answers (the same 400 as a blocking
// one, not a 202 and an error state), and an exec in a working directory
// that does not exist says so rather than blaming the program.
func TestSrtdStartChecks(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		d := startSrtd(t, u)
		proj := u.workDir(t)
		for _, wait := range []string{"true", "false"} {
			code, b := d.call(t, "POST", "/v1/sandboxes", fmt.Sprintf(`{"sessionId":"tmp-%s","wait":%s,"bindMounts":[{"hostPath":%q,"guestPath":"/tmp"}]}`, wait, wait, proj))
			if code != http.StatusBadRequest || !strings.Contains(string(b), `"bindMounts[0].guestPath"`) {
				t.Errorf("wait %s, a bind over the sandbox's TMPDIR: %d %s; want a 400 naming bindMounts[0].guestPath", wait, code, b)
			}
		}
		if code, b := d.call(t, "GET", "/v1/sandboxes/tmp-false", ""); code != http.StatusNotFound {
			t.Errorf("the refused launch left a sandbox: %d %s", code, b)
		}

		if code, b := d.call(t, "POST", "/v1/sandboxes", `{"sessionId":"cwd"}`); code != http.StatusCreated {
			t.Fatalf("launch: %d %s", code, b)
		}
		for _, tc := range []struct{ cwd, want string }{
			{"/nonexistent", "working directory /nonexistent: no such file or directory"},
			{"/etc/passwd", "working directory /etc/passwd: not a directory"},
		} {
			out, errb, code, err := d.c.Run(context.Background(), "cwd", client.ExecRequest{Argv: []string{"ls"}, Cwd: tc.cwd})
			if err != nil || code == 0 || !strings.Contains(string(errb), tc.want) {
				t.Errorf("cwd %s: code %d err %v stdout %q stderr %q; want a failure saying %q", tc.cwd, code, err, out, errb, tc.want)
			}
		}
	})
}
