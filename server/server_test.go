package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/srt-go/srt/client"
	"github.com/srt-go/srt/port"
)

const testToken = "test-token-0123456789"

type env struct {
	srv  *Server
	fake *fakePort
	url  string
	c    *client.Client
}

// newEnv serves a Server on a random 127.0.0.1 port with a fake port.
func newEnv(t *testing.T, mod func(*Config)) *env {
	t.Helper()
	cfg := Config{Port: newFakePort(true), Token: testToken}
	if mod != nil {
		mod(&cfg)
	}
	f, _ := cfg.Port.(*fakePort)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		s.Close(context.Background())
		hs.Close()
	})
	return &env{srv: s, fake: f, url: hs.URL, c: client.New(hs.URL, testToken)}
}

// req sends a raw request and returns status and body.
func (e *env) req(t *testing.T, method, path, token, body string, hdr ...string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r, _ := http.NewRequest(method, e.url+path, rd)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			r.Host = hdr[i+1]
		} else {
			r.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func spec(id string) port.Spec {
	return port.Spec{SessionID: id, WorkspaceID: "ws", Mode: port.ModeChat}
}

func TestAuth(t *testing.T) {
	e := newEnv(t, nil)
	code, body := e.req(t, "GET", "/healthz", "", "")
	if code != 200 || strings.Contains(body, "sandbox") {
		t.Errorf("healthz without token: %d %s; want 200 and no sandbox field", code, body)
	}
	for _, tc := range []struct{ name, method, path, token string }{
		{"probe-no-token", "GET", "/v1/probe", ""},
		{"probe-bad-token", "GET", "/v1/probe", "wrong"},
		{"probe-token-prefix", "GET", "/v1/probe", testToken[:5]},
		{"probe-token-longer", "GET", "/v1/probe", testToken + "x"},
		{"launch-no-token", "POST", "/v1/sandboxes", ""},
		{"get-bad-token", "GET", "/v1/sandboxes/x", "nope"},
		{"terminal-no-token", "POST", "/v1/terminals", ""},
		{"ws-no-token", "GET", "/v1/terminals/x/ws", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, body := e.req(t, tc.method, tc.path, tc.token, ""); code != 401 {
				t.Errorf("%d %s; want 401", code, body)
			}
		})
	}
	// Basic auth with the token as password is not a bearer token.
	r, _ := http.NewRequest("GET", e.url+"/v1/probe", nil)
	r.SetBasicAuth("x", testToken)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("basic auth: %d; want 401", resp.StatusCode)
	}
	if _, err := e.c.Probe(context.Background()); err != nil {
		t.Errorf("probe with token: %v", err)
	}
}

func TestOrigin(t *testing.T) {
	e := newEnv(t, nil)
	host := strings.TrimPrefix(e.url, "http://")
	for _, tc := range []struct {
		name   string
		hdr    []string
		status int
	}{
		{"evil-page", []string{"Origin", "https://evil.example"}, 403},
		{"null-origin", []string{"Origin", "null"}, 403},
		{"other-loopback-port", []string{"Origin", "http://127.0.0.1:1"}, 403},
		{"file-origin", []string{"Origin", "file://"}, 403},
		{"dns-rebinding-host", []string{"Host", "evil.example:80"}, 403},
		{"same-loopback-origin", []string{"Origin", "http://" + host}, 200},
		{"no-origin", nil, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, body := e.req(t, "GET", "/v1/probe", testToken, "", tc.hdr...); code != tc.status {
				t.Errorf("%d %s; want %d", code, body, tc.status)
			}
		})
	}
	// The WebSocket handshake of a terminal, from a web page.
	info := e.newTerminal(t, `{}`)
	h := http.Header{}
	h.Set("Authorization", "Bearer "+testToken)
	h.Set("Origin", "https://evil.example")
	_, resp, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(e.url, "http")+info.WebSocket, &websocket.DialOptions{HTTPHeader: h})
	if err == nil || resp == nil || resp.StatusCode != 403 {
		t.Errorf("WebSocket with a foreign Origin: %v %v; want 403", resp, err)
	}
}

func (e *env) newTerminal(t *testing.T, body string) client.TerminalInfo {
	t.Helper()
	code, out := e.req(t, "POST", "/v1/terminals", testToken, body)
	if code != 201 {
		t.Fatalf("POST /v1/terminals %s: %d %s", body, code, out)
	}
	var info client.TerminalInfo
	json.Unmarshal([]byte(out), &info)
	return info
}

func TestLimits(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxBodyBytes = 4096; c.Port.(*fakePort).max = 3; c.MaxExecs = 2; c.MaxTerminals = 1 })
	ctx := context.Background()
	t.Run("body", func(t *testing.T) {
		big := fmt.Sprintf(`{"sessionId":"big","workspaceId":"w","agentId":%q}`, strings.Repeat("a", 5000))
		if code, body := e.req(t, "POST", "/v1/sandboxes", testToken, big); code != 413 {
			t.Errorf("%d %s; want 413", code, body)
		}
	})
	t.Run("sessions", func(t *testing.T) {
		for i := range 3 {
			if _, err := e.c.Launch(ctx, spec(fmt.Sprint("s", i)), ""); err != nil {
				t.Fatal(err)
			}
		}
		_, err := e.c.Launch(ctx, spec("s3"), "")
		if ce, ok := err.(*client.Error); !ok || ce.Status != 429 {
			t.Fatalf("4th session: %v; want 429", err)
		}
		e.c.Destroy(ctx, "s2")
		if _, err := e.c.Launch(ctx, spec("s3"), ""); err != nil {
			t.Errorf("after a destroy: %v", err)
		}
	})
	t.Run("execs", func(t *testing.T) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		for range 2 {
			if _, err := e.c.Exec(ctx, "s0", client.ExecRequest{Argv: []string{"sleep"}}); err != nil {
				t.Fatal(err)
			}
		}
		_, err := e.c.Exec(ctx, "s1", client.ExecRequest{Argv: []string{"sleep"}})
		if ce, ok := err.(*client.Error); !ok || ce.Status != 429 {
			t.Errorf("3rd exec: %v; want 429", err)
		}
	})
	t.Run("terminals", func(t *testing.T) {
		e.newTerminal(t, `{}`)
		if code, body := e.req(t, "POST", "/v1/terminals", testToken, `{}`); code != 429 {
			t.Errorf("2nd terminal: %d %s; want 429", code, body)
		}
	})
}

func TestBadRequests(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct {
		name, body, field string
	}{
		{"unknown-field", `{"sessionId":"a","workspaceId":"w","evil":1}`, "evil"},
		{"unknown-case", `{"sessionId":"a","workspaceId":"w","SessionId":"b"}`, "SessionId"},
		{"unknown-nested", `{"sessionId":"a","workspaceId":"w","bindMounts":[{"evil":1}]}`, "bindMounts/0/evil"},
		{"wrong-type", `{"sessionId":"a","workspaceId":"w","bindMounts":"x"}`, "bindMounts"},
		{"bad-session-id", `{"sessionId":"../x","workspaceId":"w"}`, "sessionId"},
		{"empty-session-id", `{"workspaceId":"w"}`, "sessionId"},
		{"session-id-leading-dash", `{"sessionId":"-a","workspaceId":"w"}`, "sessionId"},
		{"bad-mode", `{"sessionId":"a","workspaceId":"w","mode":"yolo"}`, "mode"},
		{"port-validation", `{"sessionId":"a"}`, "workspaceId"},
		{"bad-backend", `{"sessionId":"a","workspaceId":"w","backend":"vmware"}`, "backend"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := e.req(t, "POST", "/v1/sandboxes", testToken, tc.body)
			var ae apiError
			json.Unmarshal([]byte(body), &ae)
			if code != 400 || ae.Field != tc.field {
				t.Errorf("%d %s; want 400 naming %q", code, body, tc.field)
			}
		})
	}
	// An exec request is the port's to check, on the sandbox it names: a
	// sandbox that does not exist is a 404 whatever the body.
	if _, err := e.c.Launch(context.Background(), spec("x"), ""); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ body, field string }{
		{`{"argv":[]}`, "argv"},
		{`{"argv":[""]}`, "argv"},
		{`{"argv":["true"],"timeoutMs":-1}`, "timeoutMs"},
		{`{"argv":["true"],"cwd":"rel"}`, "cwd"},
		{`{"argv":["true"],"env":{"A=B":"c"}}`, "env.A=B"},
	} {
		code, body := e.req(t, "POST", "/v1/sandboxes/x/exec", testToken, tc.body)
		var ae apiError
		json.Unmarshal([]byte(body), &ae)
		if code != 400 || ae.Field != tc.field {
			t.Errorf("exec %s: %d %s; want 400 naming %q", tc.body, code, body, tc.field)
		}
	}
	if code, body := e.req(t, "POST", "/v1/sandboxes/nope/exec", testToken, `{"argv":[]}`); code != 404 {
		t.Errorf("empty argv on no sandbox: %d %s; want 404", code, body)
	}
}

func TestNotFoundAndConflict(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	for _, p := range []struct{ method, path, body string }{
		{"GET", "/v1/sandboxes/ghost", ""},
		{"POST", "/v1/sandboxes/ghost/suspend", ""},
		{"POST", "/v1/sandboxes/ghost/resume", ""},
		{"DELETE", "/v1/sandboxes/ghost", ""},
		{"POST", "/v1/sandboxes/ghost/exec", `{"argv":["true"]}`},
		{"GET", "/v1/terminals/ghost", ""},
		{"GET", "/v1/terminals/ghost/ws", ""},
	} {
		if code, body := e.req(t, p.method, p.path, testToken, p.body); code != 404 {
			t.Errorf("%s %s: %d %s; want 404", p.method, p.path, code, body)
		}
	}
	if _, err := e.c.Launch(ctx, spec("a"), ""); err != nil {
		t.Fatal(err)
	}
	status := func(err error) int {
		if ce, ok := err.(*client.Error); ok {
			return ce.Status
		}
		return 0
	}
	if _, err := e.c.Launch(ctx, spec("a"), ""); status(err) != 409 {
		t.Errorf("same sessionId twice: %v; want 409", err)
	}
	if _, err := e.c.Resume(ctx, "a"); status(err) != 409 {
		t.Errorf("resume a warm sandbox: %v; want 409", err)
	}
	h, err := e.c.Suspend(ctx, "a")
	if err != nil || h.State != port.StateSuspended {
		t.Fatalf("suspend: %v %v", h, err)
	}
	if _, err := e.c.Suspend(ctx, "a"); status(err) != 409 {
		t.Errorf("suspend twice: %v; want 409", err)
	}
	if _, err := e.c.Exec(ctx, "a", client.ExecRequest{Argv: []string{"true"}}); status(err) != 409 {
		t.Errorf("exec while suspended: %v; want 409", err)
	}
	if h, err := e.c.Resume(ctx, "a"); err != nil || h.State != port.StateWarm {
		t.Errorf("resume: %v %v", h, err)
	}
	if h, err := e.c.Destroy(ctx, "a"); err != nil || h.State != port.StateDestroyed {
		t.Errorf("destroy: %v %v", h, err)
	}
	if _, err := e.c.Get(ctx, "a"); status(err) != 404 {
		t.Errorf("get after destroy: %v; want 404", err)
	}
}

// TestBackendRequest is the backend table as a client sees it: what it
// asks for, what the session really runs on, or the refusal.
func TestBackendRequest(t *testing.T) {
	for _, tc := range []struct {
		name      string
		available bool
		sandbox   bool
		backend   string // JSON value, "" for absent
		want      port.Backend
		status    int
	}{
		{"default-native-host", true, true, "", port.BackendNative, 201},
		{"null", true, true, "null", port.BackendNative, 201},
		{"none", true, true, `"none"`, port.BackendNone, 201},
		{"native", true, true, `"native"`, port.BackendNative, 201},
		{"docker-is-native", true, true, `"docker"`, port.BackendNative, 201},
		{"unknown-refused", true, true, `"podman"`, "", 400},
		{"explicit-microvm-fails-loudly", true, true, `"microvm"`, "", 503},
		{"default-no-backend-host", false, true, "", port.BackendNone, 201},
		{"explicit-native-no-backend-host", false, true, `"native"`, "", 503},
		{"sandbox-off-default", true, false, "", port.BackendNone, 201},
		{"sandbox-off-native-refused", true, false, `"native"`, "", 409},
		{"sandbox-off-microvm-refused", true, false, `"microvm"`, "", 409},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) {
				f := newFakePort(tc.available)
				f.sandboxOff = !tc.sandbox
				c.Port = f
			})
			body := `{"sessionId":"b","workspaceId":"w"`
			if tc.backend != "" {
				body += `,"backend":` + tc.backend
			}
			code, out := e.req(t, "POST", "/v1/sandboxes", testToken, body+"}")
			if code != tc.status {
				t.Fatalf("%d %s; want %d", code, out, tc.status)
			}
			if code == 201 {
				var h port.Handle
				json.Unmarshal([]byte(out), &h)
				if h.Backend != tc.want {
					t.Errorf("backend %q; want %q", h.Backend, tc.want)
				}
			}
		})
	}
}

// TestExecOrder: 20 concurrent execs of 2000 events each arrive complete
// and in order (seq 1..n, lines 0..1999, starting, ready first, exit last).
func TestExecOrder(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	if _, err := e.c.Launch(ctx, spec("o"), ""); err != nil {
		t.Fatal(err)
	}
	const n, execs = 2000, 20
	var wg sync.WaitGroup
	for range execs {
		wg.Go(func() {
			events, err := e.c.Exec(ctx, "o", client.ExecRequest{Argv: []string{"count", fmt.Sprint(n)}})
			if err != nil {
				t.Error(err)
				return
			}
			var got []port.Event
			for ev, err := range events {
				if err != nil {
					t.Error(err)
					return
				}
				got = append(got, ev)
			}
			if len(got) != n+3 {
				t.Errorf("%d events; want %d", len(got), n+3)
				return
			}
			for i, ev := range got {
				if ev.Seq != uint64(i+1) {
					t.Errorf("event %d has seq %d", i, ev.Seq)
					return
				}
			}
			if got[0].Type != port.EventStarting || got[1].Type != port.EventReady || got[n+2].Type != port.EventExit {
				t.Errorf("first/last events: %s %s … %s", got[0].Type, got[1].Type, got[n+2].Type)
			}
			for i := range n {
				if string(got[i+2].Data) != fmt.Sprintf("%d\n", i) {
					t.Errorf("line %d is %q", i, got[i+2].Data)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestExecClientGone: a client that drops the stream kills its command.
func TestExecClientGone(t *testing.T) {
	e := newEnv(t, nil)
	if _, err := e.c.Launch(context.Background(), spec("g"), ""); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	events, err := e.c.Exec(ctx, "g", client.ExecRequest{Argv: []string{"sleep"}})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range events {
		if ev.Type == port.EventReady {
			break
		}
	}
	if e.fake.running.Load() != 1 {
		t.Fatalf("%d execs running; want 1", e.fake.running.Load())
	}
	cancel()
	waitFor(t, "the exec to be killed", func() bool { return e.fake.running.Load() == 0 })
}

func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if f() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestCloseDestroysAll is the SIGTERM path: Close destroys every
// sandbox, ends every exec and refuses new launches.
func TestCloseDestroysAll(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	for i := range 5 {
		if _, err := e.c.Launch(ctx, spec(fmt.Sprint("c", i)), ""); err != nil {
			t.Fatal(err)
		}
	}
	events, err := e.c.Exec(ctx, "c0", client.ExecRequest{Argv: []string{"sleep"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var last port.Event
	for ev, err := range events {
		if err != nil {
			break
		}
		last = ev
	}
	if last.Type != port.EventKilled {
		t.Errorf("last event %q; want killed", last.Type)
	}
	if n := e.fake.aliveCount(); n != 0 {
		t.Errorf("%d sandboxes alive after Close", n)
	}
	if _, err := e.c.Launch(ctx, spec("late"), ""); err == nil {
		t.Error("launch after Close succeeded")
	} else if ce, ok := err.(*client.Error); !ok || ce.Status != 503 {
		t.Errorf("launch after Close: %v; want 503", err)
	}
}

func TestExecStdin(t *testing.T) {
	e := newEnv(t, nil)
	body, _ := json.Marshal(map[string]any{"argv": []string{"true"}, "stdin": "a", "stdinBase64": "YQ=="})
	if code, out := e.req(t, "POST", "/v1/sandboxes/x/exec", testToken, string(body)); code != 400 || !bytes.Contains([]byte(out), []byte("stdinBase64")) {
		t.Errorf("stdin and stdinBase64: %d %s; want 400", code, out)
	}
}

// TestSanitizedEnv: a terminal inherits srtd's ordinary variables only,
// gets its own HOME, SHELL and TERM, and drops an extra name exec could
// not carry.
func TestSanitizedEnv(t *testing.T) {
	t.Setenv("SRTD_TEST_SECRET", "x")
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("HOME", "/srtd-home")
	env := sanitizedEnv("/h", "/bin/sh", map[string]string{"FOO": "bar", "TERM": "dumb", "A=B": "c", "NUL": "a\x00b"})
	got := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	want := map[string]string{"LANG": "C.UTF-8", "HOME": "/h", "SHELL": "/bin/sh", "TERM": "dumb", "FOO": "bar"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s=%q, want %q (env %q)", k, got[k], v, env)
		}
	}
	for _, k := range []string{"SRTD_TEST_SECRET", "A", "NUL"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s reached the terminal: %q", k, env)
		}
	}
	if got["PATH"] == "" {
		t.Errorf("no PATH: %q", env)
	}
}
