package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/srt-go/srt/port"
)

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	id, event string
	data      port.Event
}

// subscribe opens GET /v1/sandboxes/{id}/events; lastID "" sends no
// Last-Event-ID. The events arrive on the channel until the stream ends.
func (e *env) subscribe(t *testing.T, id, lastID string) <-chan sseEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r, _ := http.NewRequestWithContext(ctx, "GET", e.url+"/v1/sandboxes/"+id+"/events", nil)
	r.Header.Set("Authorization", "Bearer "+testToken)
	if lastID != "" {
		r.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	ch := make(chan sseEvent)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				json.Unmarshal([]byte(line[6:]), &ev.data)
			case line == "":
				ch <- ev
				ev = sseEvent{}
			}
		}
	}()
	return ch
}

func nextSSE(t *testing.T, ch <-chan sseEvent, want port.EventType) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatalf("stream ended; want %s", want)
		}
		if ev.event != string(want) || ev.data.Type != want {
			t.Fatalf("event %+v; want %s", ev, want)
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatalf("no %s event in 5s", want)
	}
	return sseEvent{}
}

// TestLaunchNoWait: "wait": false answers 202 with the handle created;
// GET shows it warm soon after; a start that fails stays in error, with
// the reason, until DELETE. The synchronous checks still answer at once.
func TestLaunchNoWait(t *testing.T) {
	e := newEnv(t, nil)
	code, body := e.req(t, "POST", "/v1/sandboxes", testToken, `{"sessionId":"nw","workspaceId":"w","wait":false}`)
	var h port.Handle
	json.Unmarshal([]byte(body), &h)
	if code != http.StatusAccepted || h.State != port.StateCreated {
		t.Fatalf("wait:false: %d %s; want 202 created", code, body)
	}
	waitFor(t, "warm", func() bool {
		_, b := e.req(t, "GET", "/v1/sandboxes/nw", testToken, "")
		return strings.Contains(b, `"state":"warm"`)
	})
	if code, body := e.req(t, "POST", "/v1/sandboxes", testToken, `{"sessionId":"nw","workspaceId":"w","wait":false}`); code != http.StatusConflict {
		t.Errorf("same id, wait:false: %d %s; want 409", code, body)
	}
	if code, body := e.req(t, "POST", "/v1/sandboxes", testToken, `{"sessionId":"nx","workspaceId":"w","wait":false,"mode":"yolo"}`); code != http.StatusBadRequest {
		t.Errorf("bad mode, wait:false: %d %s; want 400", code, body)
	}
	if code, _ := e.req(t, "POST", "/v1/sandboxes", testToken, `{"sessionId":"fl","workspaceId":"w","agentId":"fail","wait":false}`); code != http.StatusAccepted {
		t.Fatalf("failing start: %d", code)
	}
	waitFor(t, "error", func() bool {
		_, b := e.req(t, "GET", "/v1/sandboxes/fl", testToken, "")
		return strings.Contains(b, `"state":"error"`) && strings.Contains(b, `"error":"fake start failure"`)
	})
	if _, b := e.req(t, "GET", "/v1/sandboxes", testToken, ""); !strings.Contains(b, `"fl"`) {
		t.Errorf("a sandbox in error is not listed: %s", b)
	}
	if code, _ := e.req(t, "DELETE", "/v1/sandboxes/fl", testToken, ""); code != 200 {
		t.Errorf("DELETE in error: %d", code)
	}
	if code, body := e.req(t, "POST", "/v1/sandboxes", testToken, `{"sessionId":"bw","workspaceId":"w","wait":true}`); code != http.StatusCreated || !strings.Contains(body, `"state":"warm"`) {
		t.Errorf("wait:true: %d %s; want 201 warm", code, body)
	}
}

// TestSandboxEventStream: the events stream's framing (id = the
// sandbox's seq), Last-Event-ID resuming after it, state and agent
// events, and the end after destroyed.
func TestSandboxEventStream(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	if _, err := e.c.Launch(ctx, spec("es"), ""); err != nil {
		t.Fatal(err)
	}
	evs := e.subscribe(t, "es", "")
	tag := fmt.Sprintf("%x", "es") // the fake's StreamTag
	if ev := nextSSE(t, evs, port.EventStarting); ev.id != tag+".1" || ev.data.Seq != 1 {
		t.Errorf("starting: %+v", ev)
	}
	nextSSE(t, evs, port.EventReady)
	if code, body := e.req(t, "POST", "/v1/sandboxes/es/exec", testToken, `{"argv":["count","1"]}`); code != 200 || !strings.Contains(body, "event: exit") {
		t.Fatalf("exec: %d %s", code, body)
	}
	if ev := nextSSE(t, evs, port.EventExit); ev.data.ExecID == "" || ev.data.ExitCode == nil {
		t.Errorf("exit: %+v", ev)
	}
	e.c.Suspend(ctx, "es")
	nextSSE(t, evs, port.EventSuspended)
	e.c.Resume(ctx, "es")
	nextSSE(t, evs, port.EventResumed)
	if code, body := e.req(t, "PATCH", "/v1/sandboxes/es", testToken, `{"agentId":"agent-2"}`); code != 200 || !strings.Contains(body, `"agentId":"agent-2"`) {
		t.Errorf("PATCH: %d %s", code, body)
	}
	if ev := nextSSE(t, evs, port.EventAgent); ev.data.AgentID != "agent-2" {
		t.Errorf("agent: %+v", ev)
	}
	resumed := e.subscribe(t, "es", tag+".4")
	if ev := <-resumed; ev.event != string(port.EventResumed) || ev.id != tag+".5" {
		t.Errorf("Last-Event-ID %s.4: first %s id %s, want resumed id %s.5", tag, ev.event, ev.id, tag)
	}
	// Another stream's id (another tag, the plain seq form) is a reset,
	// which the port answers with a lost event first: never silence.
	for _, stale := range []string{"0123456789ab.4", "4"} {
		again := e.subscribe(t, "es", stale)
		if ev := <-again; ev.event != string(port.EventLost) || ev.data.Reason != port.LostReset || ev.id != tag+".0" {
			t.Errorf("Last-Event-ID %s: first %+v; want lost, reason reset, id %s.0", stale, ev, tag)
		}
		if ev := <-again; ev.id != tag+".1" {
			t.Errorf("Last-Event-ID %s: then id %s, want %s.1", stale, ev.id, tag)
		}
	}
	for _, bad := range []string{"x", ".4", tag + ".x", "-1"} {
		if code, body := e.req(t, "GET", "/v1/sandboxes/es/events", testToken, "", "Last-Event-ID", bad); code != 400 || !strings.Contains(body, `"field":"Last-Event-ID"`) {
			t.Errorf("bad Last-Event-ID %q: %d %s", bad, code, body)
		}
	}
	e.c.Destroy(ctx, "es")
	nextSSE(t, evs, port.EventDestroyed)
	if _, ok := <-evs; ok {
		t.Error("stream goes on after destroyed")
	}
	if code, _ := e.req(t, "GET", "/v1/sandboxes/es/events", testToken, ""); code != 404 {
		t.Errorf("events of a destroyed sandbox: %d; want 404", code)
	}
}

// TestPatch: only agentId can change; every other member is a 400
// naming it, and a bad agentId a 400 for agentId.
func TestPatch(t *testing.T) {
	e := newEnv(t, nil)
	if _, err := e.c.Launch(context.Background(), spec("p"), ""); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		body  string
		code  int
		field string
	}{
		{`{"agentId":"ok.1"}`, 200, ""},
		{`{"agentId":""}`, 200, ""},
		{`{"mode":"review"}`, 400, "mode"},
		{`{"agentId":"x","bindMounts":[]}`, 400, "bindMounts"},
		{`{"AgentId":"x"}`, 400, "AgentId"},
		{`{}`, 400, "agentId"},
		{`{"agentId":"a b"}`, 400, "agentId"},
		{`{"agentId":7}`, 400, "agentId"},
	} {
		code, body := e.req(t, "PATCH", "/v1/sandboxes/p", testToken, c.body)
		var ae apiError
		json.Unmarshal([]byte(body), &ae)
		if code != c.code || ae.Field != c.field {
			t.Errorf("PATCH %s: %d %s; want %d field %q", c.body, code, body, c.code, c.field)
		}
	}
	if code, _ := e.req(t, "PATCH", "/v1/sandboxes/ghost", testToken, `{"agentId":"a"}`); code != 404 {
		t.Errorf("PATCH ghost: %d", code)
	}
}
