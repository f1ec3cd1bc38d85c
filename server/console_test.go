package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/srt-go/srt/api"
	"github.com/srt-go/srt/server/console"
)

// consoleEnv is an env serving a console, logged in: cookie is its
// session cookie.
func consoleEnv(t *testing.T) (e *env, cookie string) {
	t.Helper()
	con := console.New(0)
	e = newEnv(t, func(c *Config) {
		c.Console = con
		c.Terminal = TerminalConfig{Shell: "/bin/sh", Home: t.TempDir()}
	})
	u, _ := url.Parse(con.LoginURL(strings.TrimPrefix(e.url, "http://")))
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("login: %d %v", resp.StatusCode, resp.Cookies())
	}
	return e, con.CookieName() + "=" + resp.Cookies()[0].Value
}

// TestConsoleCookieAuth: the console's cookie authorizes the page's own
// calls (same-origin fetch metadata or Origin), never a foreign page's,
// and never replaces a bad bearer token.
func TestConsoleCookieAuth(t *testing.T) {
	e, cookie := consoleEnv(t)
	self := e.url
	for _, tc := range []struct {
		name         string
		method, path string
		token        string
		hdr          []string
		status       int
	}{
		{"page-fetch", "GET", "/v1/sandboxes", "", []string{"Cookie", cookie, "Sec-Fetch-Site", "same-origin"}, 200},
		{"page-post", "POST", "/v1/sandboxes", "", []string{"Cookie", cookie, "Origin", self}, 201},
		{"foreign-origin", "POST", "/v1/sandboxes", "", []string{"Cookie", cookie, "Origin", "http://evil.example"}, 403},
		{"foreign-origin-get", "GET", "/v1/sandboxes", "", []string{"Cookie", cookie, "Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"}, 403},
		{"other-loopback-port", "GET", "/v1/sandboxes", "", []string{"Cookie", cookie, "Origin", "http://127.0.0.1:1"}, 403},
		{"same-site-no-origin", "GET", "/v1/sandboxes", "", []string{"Cookie", cookie, "Sec-Fetch-Site", "same-site"}, 401},
		{"tossed-cookie-first", "GET", "/v1/sandboxes", "", []string{"Cookie", "srtd_console_0=bogus; " + cookie, "Sec-Fetch-Site", "same-origin"}, 200},
		{"cookie-alone", "GET", "/v1/sandboxes", "", []string{"Cookie", cookie}, 401},
		{"no-cookie", "GET", "/v1/sandboxes", "", []string{"Sec-Fetch-Site", "same-origin"}, 401},
		{"bad-bearer-good-cookie", "GET", "/v1/sandboxes", "wrong", []string{"Cookie", cookie, "Sec-Fetch-Site", "same-origin"}, 401},
		{"bearer-still-works", "GET", "/v1/sandboxes", testToken, nil, 200},
		{"dns-rebinding", "GET", "/v1/sandboxes", "", []string{"Cookie", cookie, "Sec-Fetch-Site", "same-origin", "Host", "evil.example"}, 403},
		{"console-dns-rebinding", "GET", "/console/", "", []string{"Cookie", cookie, "Host", "evil.example"}, 403},
		{"console-foreign-origin", "POST", "/console/logout", "", []string{"Cookie", cookie, "Origin", "http://evil.example"}, 403},
		{"console-page", "GET", "/console/", "", []string{"Cookie", cookie}, 200},
		{"console-no-cookie", "GET", "/console/", "", nil, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := ""
			if tc.method == "POST" && strings.HasPrefix(tc.path, "/v1/") {
				body = `{"sessionId":"c-` + tc.name + `","workspaceId":"w"}`
			}
			if code, out := e.req(t, tc.method, tc.path, tc.token, body, tc.hdr...); code != tc.status {
				t.Errorf("%d %s; want %d", code, out, tc.status)
			}
		})
	}

	// The terminal WebSocket: the page's origin with the cookie attaches;
	// a foreign one with the cookie is refused before the upgrade.
	info := e.newTerminal(t, `{}`)
	ws := "ws" + strings.TrimPrefix(e.url, "http") + info.WebSocket
	h := http.Header{"Cookie": {cookie}, "Origin": {"http://evil.example"}}
	if _, resp, err := websocket.Dial(context.Background(), ws, &websocket.DialOptions{HTTPHeader: h}); err == nil || resp == nil || resp.StatusCode != 403 {
		t.Errorf("WebSocket, cookie, foreign Origin: %v %v; want 403", resp, err)
	}
	h = http.Header{"Cookie": {cookie}}
	if _, resp, err := websocket.Dial(context.Background(), ws, &websocket.DialOptions{HTTPHeader: h}); err == nil || resp == nil || resp.StatusCode != 401 {
		t.Errorf("WebSocket, cookie, no Origin: %v %v; want 401", resp, err)
	}
	h = http.Header{"Cookie": {cookie}, "Origin": {e.url}}
	c, _, err := websocket.Dial(context.Background(), ws, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatalf("WebSocket, cookie, the page's Origin: %v", err)
	}
	c.CloseNow()
}

// TestConsoleNone: without a console, /console/ is an API path like any
// other (401 without the token), and a cookie authorizes nothing.
func TestConsoleNone(t *testing.T) {
	e := newEnv(t, nil)
	if code, _ := e.req(t, "GET", "/console/", "", ""); code != 401 {
		t.Errorf("GET /console/ without a console: %d; want 401", code)
	}
	if code, _ := e.req(t, "GET", "/v1/sandboxes", "", "", "Cookie", console.CookiePrefix+"0=x", "Sec-Fetch-Site", "same-origin"); code != 401 {
		t.Errorf("cookie without a console: %d; want 401", code)
	}
}

// TestConsoleDisabled: an off console (no peer-uid check) serves its
// reason, 404, and a cookie authorizes nothing; the bearer token works.
func TestConsoleDisabled(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Console = console.Disabled("test reason") })
	if code, out := e.req(t, "GET", "/console/", "", ""); code != 404 || !strings.Contains(out, "test reason") {
		t.Errorf("GET /console/: %d %q; want 404 with the reason", code, out)
	}
	if code, _ := e.req(t, "GET", "/v1/sandboxes", "", "", "Cookie", console.CookiePrefix+"0=x", "Sec-Fetch-Site", "same-origin"); code != 401 {
		t.Errorf("cookie with the console off: %d; want 401", code)
	}
	if code, _ := e.req(t, "GET", "/v1/sandboxes", testToken, ""); code != 200 {
		t.Errorf("bearer token with the console off: %d; want 200", code)
	}
}

// TestAPINoSniff: API answers, errors included, forbid MIME sniffing.
func TestAPINoSniff(t *testing.T) {
	e := newEnv(t, nil)
	for _, tok := range []string{testToken, ""} {
		r, _ := http.NewRequest("GET", e.url+"/v1/sandboxes", nil)
		if tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET /v1/sandboxes (%d): X-Content-Type-Options %q; want nosniff", resp.StatusCode, resp.Header.Get("X-Content-Type-Options"))
		}
	}
}

// TestExecHistory: the last execs of a sandbox with their output, capped,
// and none once the sandbox is destroyed and launched again.
func TestExecHistory(t *testing.T) {
	e := newEnv(t, nil)
	if code, out := e.req(t, "POST", "/v1/sandboxes", testToken, `{"sessionId":"h","workspaceId":"w"}`); code != 201 {
		t.Fatalf("launch: %d %s", code, out)
	}
	execs := func() []api.ExecRecord {
		t.Helper()
		code, out := e.req(t, "GET", "/v1/sandboxes/h/execs", testToken, "")
		if code != 200 {
			t.Fatalf("GET execs: %d %s", code, out)
		}
		var recs []api.ExecRecord
		if err := json.Unmarshal([]byte(out), &recs); err != nil {
			t.Fatal(err)
		}
		return recs
	}
	if recs := execs(); len(recs) != 0 {
		t.Errorf("before any exec: %+v", recs)
	}
	e.req(t, "POST", "/v1/sandboxes/h/exec", testToken, `{"argv":["count","3"],"env":{"SECRET":"s3cret"},"stdin":"in-put"}`)
	e.req(t, "POST", "/v1/sandboxes/h/exec", testToken, `{"argv":["flood"]}`)
	recs := execs()
	if len(recs) != 2 {
		t.Fatalf("%d records; want 2: %+v", len(recs), recs)
	}
	r := recs[0]
	if strings.Join(r.Argv, " ") != "count 3" || r.State != api.ExecExited || r.ExitCode == nil || *r.ExitCode != 0 || r.EndedAt == nil ||
		len(r.Output) != 1 || r.Output[0].Stream != "stdout" || string(r.Output[0].Data) != "0\n1\n2\n" {
		t.Errorf("count 3: %+v; want exited 0 with stdout 0 1 2 merged in one chunk", r)
	}
	if recs[1].Violations != 3+7 {
		t.Errorf("flood: %d violations; want 10 (a folded 3, a lost 7)", recs[1].Violations)
	}
	_, raw := e.req(t, "GET", "/v1/sandboxes/h/execs", testToken, "")
	if strings.Contains(raw, "s3cret") || strings.Contains(raw, "in-put") {
		t.Errorf("the history keeps env or stdin: %s", raw)
	}

	// Output past the cap is counted, not kept; records past the limit
	// drop the oldest.
	e.req(t, "POST", "/v1/sandboxes/h/exec", testToken, `{"argv":["count","8000"]}`)
	big := execs()[2]
	kept := 0
	for _, o := range big.Output {
		kept += len(o.Data)
	}
	if kept != api.ExecHistoryOutputBytes || big.OutputTruncated == 0 {
		t.Errorf("count 8000: %d bytes kept, %d truncated; want %d kept and the rest counted", kept, big.OutputTruncated, api.ExecHistoryOutputBytes)
	}
	for range api.ExecHistoryLimit {
		e.req(t, "POST", "/v1/sandboxes/h/exec", testToken, `{"argv":["count","1"]}`)
	}
	if recs := execs(); len(recs) != api.ExecHistoryLimit || strings.Join(recs[0].Argv, " ") != "count 1" {
		t.Errorf("%d records, oldest %v; want %d, all count 1", len(recs), recs[0].Argv, api.ExecHistoryLimit)
	}

	// Argv is capped in bytes, each element counting one more than its
	// length (70,000 empty strings are not free), and in elements.
	for _, tc := range []struct {
		name string
		argv []string
		want int
	}{
		{"empty-strings", append([]string{"count"}, make([]string, 70000)...), api.ExecHistoryArgvElems},
		{"one-byte-strings", append([]string{"count"}, strings.Split(strings.Repeat("x", 3000), "")...), api.ExecHistoryArgvElems},
		{"long-strings", append([]string{"count"}, strings.Repeat("y", 1100), strings.Repeat("y", 1100), strings.Repeat("y", 1100), strings.Repeat("y", 1100), "z"), 4},
	} {
		b, _ := json.Marshal(map[string]any{"argv": tc.argv})
		if code, out := e.req(t, "POST", "/v1/sandboxes/h/exec", testToken, string(b)); code != 200 {
			t.Fatalf("%s: exec %d %s", tc.name, code, out)
		}
		recs := execs()
		r := recs[len(recs)-1]
		cost := 0
		for _, a := range r.Argv {
			cost += len(a) + 1
		}
		if len(r.Argv) != tc.want || !r.ArgvTruncated || cost > api.ExecHistoryArgvBytes {
			t.Errorf("%s: %d elements kept (%d bytes counted), truncated %v; want %d, truncated, at most %d bytes", tc.name, len(r.Argv), cost, r.ArgvTruncated, tc.want, api.ExecHistoryArgvBytes)
		}
	}

	e.req(t, "DELETE", "/v1/sandboxes/h", testToken, "")
	if code, _ := e.req(t, "GET", "/v1/sandboxes/h/execs", testToken, ""); code != 404 {
		t.Errorf("execs of a destroyed sandbox: %d; want 404", code)
	}
	e.req(t, "POST", "/v1/sandboxes", testToken, `{"sessionId":"h","workspaceId":"w"}`)
	if recs := execs(); len(recs) != 0 {
		t.Errorf("a sandbox launched again under the same id: %d records; want none", len(recs))
	}
}

// TestExecHistoryClientGone: an exec whose client went away is still
// recorded to its end (killed), and shows running before.
func TestExecHistoryClientGone(t *testing.T) {
	e := newEnv(t, nil)
	if code, out := e.req(t, "POST", "/v1/sandboxes", testToken, `{"sessionId":"g","workspaceId":"w"}`); code != 201 {
		t.Fatalf("launch: %d %s", code, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r, _ := http.NewRequestWithContext(ctx, "POST", e.url+"/v1/sandboxes/g/exec", strings.NewReader(`{"argv":["sleep"]}`))
	r.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	state := func() string {
		_, out := e.req(t, "GET", "/v1/sandboxes/g/execs", testToken, "")
		var recs []api.ExecRecord
		json.Unmarshal([]byte(out), &recs)
		if len(recs) != 1 {
			return "none"
		}
		return string(recs[0].State) + " " + recs[0].Reason
	}
	waitFor(t, "the exec recorded as running", func() bool { return state() == "running " })
	cancel()
	resp.Body.Close()
	waitFor(t, "the exec recorded as killed", func() bool { return state() == "killed manual" })
}
