package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/srt-go/srt/server/console"
)

// openAPI is api/openapi.json, the document the tests hold srtd to.
type openAPI struct {
	doc map[string]any
}

func loadOpenAPI(t *testing.T) *openAPI {
	t.Helper()
	b, err := os.ReadFile("../api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("api/openapi.json: %v", err)
	}
	return &openAPI{doc: doc}
}

func (o *openAPI) ref(v any) map[string]any {
	m, _ := v.(map[string]any)
	for m != nil && m["$ref"] != nil {
		path := strings.TrimPrefix(m["$ref"].(string), "#/")
		var cur any = o.doc
		for _, p := range strings.Split(path, "/") {
			cur = cur.(map[string]any)[p]
		}
		m, _ = cur.(map[string]any)
	}
	return m
}

// operation finds the operation of method on a concrete path.
func (o *openAPI) operation(method, path string) (map[string]any, string) {
	for tmpl, item := range o.doc["paths"].(map[string]any) {
		re := "^" + regexp.MustCompile(`\\\{[^}]+\\\}`).ReplaceAllString(regexp.QuoteMeta(tmpl), `[^/]+`) + "$"
		if regexp.MustCompile(re).MatchString(path) {
			if op, ok := item.(map[string]any)[strings.ToLower(method)].(map[string]any); ok {
				return op, tmpl
			}
		}
	}
	return nil, ""
}

// responseSchema is the schema documented for status and content type.
func (o *openAPI) responseSchema(method, path string, status int, ctype string) (map[string]any, error) {
	op, tmpl := o.operation(method, path)
	if op == nil {
		return nil, fmt.Errorf("%s %s is not in api/openapi.json", method, path)
	}
	resp := o.ref(op["responses"].(map[string]any)[fmt.Sprint(status)])
	if resp == nil {
		return nil, fmt.Errorf("%s %s: status %d is not documented", method, tmpl, status)
	}
	content, _ := resp["content"].(map[string]any)
	media, ok := content[ctype].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s %s %d: content type %s is not documented", method, tmpl, status, ctype)
	}
	return o.ref(media["schema"]), nil
}

// validate checks v against the JSON Schema subset the document uses:
// type (one or a list), enum, required, properties, additionalProperties,
// items, minItems, minimum, maximum, pattern, $ref.
func (o *openAPI) validate(schema map[string]any, v any, at string) error {
	schema = o.ref(schema)
	if schema == nil {
		return nil
	}
	if ts, ok := schema["type"]; ok {
		var types []string
		switch ts := ts.(type) {
		case string:
			types = []string{ts}
		case []any:
			for _, t := range ts {
				types = append(types, t.(string))
			}
		}
		if !slices.Contains(types, jsonType(v)) && !(jsonType(v) == "integer" && slices.Contains(types, "number")) {
			return fmt.Errorf("%s: %s, want %v", at, jsonType(v), types)
		}
	}
	if enum, ok := schema["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return e == v }) {
		return fmt.Errorf("%s: %v not in %v", at, v, enum)
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		for _, r := range asList(schema["required"]) {
			if _, ok := v[r]; !ok {
				return fmt.Errorf("%s: required %q missing", at, r)
			}
		}
		for k, x := range v {
			if ps, ok := props[k]; ok {
				if err := o.validate(ps.(map[string]any), x, at+"."+k); err != nil {
					return err
				}
				continue
			}
			switch ap := schema["additionalProperties"].(type) {
			case bool:
				if !ap {
					return fmt.Errorf("%s: undocumented property %q", at, k)
				}
			case map[string]any:
				if err := o.validate(ap, x, at+"."+k); err != nil {
					return err
				}
			}
		}
	case []any:
		if mi, ok := schema["minItems"].(float64); ok && float64(len(v)) < mi {
			return fmt.Errorf("%s: %d items, want >= %v", at, len(v), mi)
		}
		if items, ok := schema["items"].(map[string]any); ok {
			for i, x := range v {
				if err := o.validate(items, x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	case float64:
		if m, ok := schema["minimum"].(float64); ok && v < m {
			return fmt.Errorf("%s: %v < %v", at, v, m)
		}
		if m, ok := schema["maximum"].(float64); ok && v > m {
			return fmt.Errorf("%s: %v > %v", at, v, m)
		}
	case string:
		if p, ok := schema["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(v) {
			return fmt.Errorf("%s: %q does not match %s", at, v, p)
		}
	}
	return nil
}

func asList(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		out = append(out, x.(string))
	}
	return out
}

func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if v == float64(int64(v)) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "?"
}

// checkResponse validates one real response against the document: status
// documented, content type documented, body (or each SSE event) valid.
func (o *openAPI) checkResponse(t *testing.T, method, path string, resp *http.Response) {
	t.Helper()
	defer resp.Body.Close()
	ctype, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	schema, err := o.responseSchema(method, path, resp.StatusCode, ctype)
	if err != nil {
		t.Error(err)
		return
	}
	if ctype == "text/event-stream" {
		sc := bufio.NewScanner(resp.Body)
		n := 0
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var v any
				json.Unmarshal([]byte(data), &v)
				if err := o.validate(schema, v, fmt.Sprintf("%s %s event %d", method, path, n)); err != nil {
					t.Error(err)
				}
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s %s: no events", method, path)
		}
		return
	}
	b, _ := io.ReadAll(resp.Body)
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Errorf("%s %s %d: body is not JSON: %q", method, path, resp.StatusCode, b)
		return
	}
	if err := o.validate(schema, v, fmt.Sprintf("%s %s %d", method, path, resp.StatusCode)); err != nil {
		t.Error(err)
	}
}

// TestOpenAPIResponses sends real requests covering every documented
// operation and many of its statuses and validates each response.
func TestOpenAPIResponses(t *testing.T) {
	o := loadOpenAPI(t)
	con := console.New(0)
	e := newEnv(t, func(c *Config) {
		c.Terminal = TerminalConfig{Shell: "/bin/sh", Home: t.TempDir()}
		c.Port.(*fakePort).max = 2
		c.Console = con
	})
	steps := []struct{ method, path, token, body string }{
		{"GET", "/healthz", "", ""},
		{"GET", "/v1/probe", testToken, ""},
		{"GET", "/v1/probe", "", ""},
		{"POST", "/v1/sandboxes", testToken, `{"sessionId":"oa","workspaceId":"w","mode":"chat","bindMounts":[{"hostPath":"/tmp","guestPath":"/tmp","readOnly":true}]}`},
		{"POST", "/v1/sandboxes", testToken, `{"sessionId":"oa","workspaceId":"w"}`},
		{"POST", "/v1/sandboxes", testToken, `{"sessionId":"ob","workspaceId":"w","mode":"nope"}`},
		{"POST", "/v1/sandboxes", testToken, `{"sessionId":"ob","workspaceId":"w","backend":"microvm"}`},
		{"POST", "/v1/sandboxes", testToken, `{"sessionId":"ob","workspaceId":"w","backend":"none"}`},
		{"POST", "/v1/sandboxes", testToken, `{"sessionId":"oc","workspaceId":"w","credentials":{"envVars":[{"name":"GH_TOKEN","mode":"mask","value":"ghp_example","injectHosts":["api.github.com"]},{"name":"NPM_TOKEN","mode":"deny"}]}}`},
		{"POST", "/v1/sandboxes", testToken, `{"sessionId":"od","workspaceId":"w","credentials":{"envVars":[{"name":"GH_TOKEN","mode":"nope","value":"x"}]}}`},
		{"GET", "/v1/sandboxes", testToken, ""},
		{"GET", "/v1/sandboxes/oc", testToken, ""},
		{"GET", "/v1/sandboxes/oa", testToken, ""},
		{"GET", "/v1/sandboxes/zz", testToken, ""},
		{"PATCH", "/v1/sandboxes/oa", testToken, `{"agentId":"agent-1"}`},
		{"PATCH", "/v1/sandboxes/oa", testToken, `{"mode":"review"}`},
		{"PATCH", "/v1/sandboxes/zz", testToken, `{"agentId":"a"}`},
		{"GET", "/v1/sandboxes/zz/events", testToken, ""},
		{"POST", "/v1/sandboxes/oa/exec", testToken, `{"argv":["count","3"],"stdin":"x"}`},
		{"POST", "/v1/sandboxes/oa/exec", testToken, `{"argv":["flood"]}`},
		{"POST", "/v1/sandboxes/oa/exec", testToken, `{"argv":[]}`},
		{"GET", "/v1/sandboxes/oa/execs", testToken, ""},
		{"GET", "/v1/sandboxes/zz/execs", testToken, ""},
		{"GET", "/v1/sandboxes/oa/execs", "", ""},
		{"POST", "/v1/sandboxes/zz/exec", testToken, `{"argv":["true"]}`},
		{"POST", "/v1/sandboxes/oa/resume", testToken, ""},
		{"POST", "/v1/sandboxes/oa/suspend", testToken, ""},
		{"POST", "/v1/sandboxes/oa/exec", testToken, `{"argv":["true"]}`},
		{"POST", "/v1/sandboxes/oa/suspend", testToken, ""},
		{"POST", "/v1/sandboxes/oa/resume", testToken, ""},
		{"POST", "/v1/sandboxes/zz/suspend", testToken, ""},
		{"DELETE", "/v1/sandboxes/oa", testToken, ""},
		{"DELETE", "/v1/sandboxes/oa", testToken, ""},
		{"POST", "/v1/terminals", testToken, `{"backend":"microvm"}`},
		{"POST", "/v1/terminals", testToken, `{"cwd":"rel"}`},
		{"GET", "/v1/terminals/zz", testToken, ""},
		{"DELETE", "/v1/terminals/zz", testToken, ""},
		{"GET", "/v1/terminals/zz/ws", testToken, ""},
	}
	for _, s := range steps {
		r, _ := http.NewRequestWithContext(context.Background(), s.method, e.url+s.path, strings.NewReader(s.body))
		if s.token != "" {
			r.Header.Set("Authorization", "Bearer "+s.token)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		o.checkResponse(t, s.method, s.path, resp)
	}
	// The launch that does not wait (202, created; then warm or error),
	// and the events stream of a sandbox, read to its end (destroyed).
	e.fake.mu.Lock()
	e.fake.max = 0
	e.fake.mu.Unlock()
	do := func(method, path, body string, hdr ...string) *http.Response {
		t.Helper()
		r, _ := http.NewRequest(method, e.url+path, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+testToken)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, body := range []string{`{"sessionId":"nw","workspaceId":"w","wait":false}`, `{"sessionId":"nf","workspaceId":"w","agentId":"fail","wait":false}`} {
		resp := do("POST", "/v1/sandboxes", body)
		if resp.StatusCode != http.StatusAccepted {
			t.Errorf("wait false: %d", resp.StatusCode)
		}
		o.checkResponse(t, "POST", "/v1/sandboxes", resp)
	}
	waitFor(t, "nf in error", func() bool {
		_, b := e.req(t, "GET", "/v1/sandboxes/nf", testToken, "")
		return strings.Contains(b, `"state":"error"`)
	})
	o.checkResponse(t, "GET", "/v1/sandboxes/nf", do("GET", "/v1/sandboxes/nf", ""))
	o.checkResponse(t, "GET", "/v1/sandboxes/nw/events", do("GET", "/v1/sandboxes/nw/events", "", "Last-Event-ID", "x"))
	// A stale Last-Event-ID: a lost event with reason reset first; the
	// stream ends with the destroy.
	stale := do("GET", "/v1/sandboxes/nw/events", "", "Last-Event-ID", "0123456789ab.9")
	o.checkResponse(t, "DELETE", "/v1/sandboxes/nw", do("DELETE", "/v1/sandboxes/nw", ""))
	o.checkResponse(t, "GET", "/v1/sandboxes/nw/events", stale)
	stream := do("GET", "/v1/sandboxes/nf/events", "")
	go func() {
		e.req(t, "PATCH", "/v1/sandboxes/nf", testToken, `{"agentId":"x"}`)
		e.req(t, "DELETE", "/v1/sandboxes/nf", testToken, "")
	}()
	o.checkResponse(t, "GET", "/v1/sandboxes/nf/events", stream)
	// The console: its login (303), its page (200, 401) and logout (303),
	// and the headers every answer of it carries.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var cookie *http.Cookie
	for _, s := range []struct{ method, path, query string }{
		{"GET", "/console/", "?token=wrong"},
		{"GET", "/console/", ""},
		{"GET", "/console/", strings.TrimPrefix(con.LoginURL("127.0.0.1:1"), "http://127.0.0.1:1/console/")},
		{"GET", "/console/", ""},
		{"POST", "/console/logout", ""},
	} {
		r, _ := http.NewRequest(s.method, e.url+s.path+s.query, nil)
		if cookie != nil {
			r.AddCookie(cookie)
		}
		if s.method == "POST" {
			r.Header.Set("Origin", e.url)
		}
		resp, err := noFollow.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		if cs := resp.Cookies(); len(cs) == 1 && cs[0].Value != "" {
			cookie = cs[0]
		}
		o.checkConsole(t, s.method, s.path, resp)
	}
	if cookie == nil {
		t.Error("the console login set no cookie")
	}
	// A terminal: create, get, delete.
	info := e.newTerminal(t, `{"cols":100,"rows":40}`)
	for _, m := range []string{"GET", "DELETE"} {
		r, _ := http.NewRequest(m, e.url+"/v1/terminals/"+info.ID, nil)
		r.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		o.checkResponse(t, m, "/v1/terminals/"+info.ID, resp)
	}
}

// checkConsole validates a console answer: status documented, its
// content type if it has a body, and the documented headers' values.
func (o *openAPI) checkConsole(t *testing.T, method, path string, resp *http.Response) {
	t.Helper()
	defer resp.Body.Close()
	op, tmpl := o.operation(method, path)
	if op == nil {
		t.Errorf("%s %s is not in api/openapi.json", method, path)
		return
	}
	doc := o.ref(op["responses"].(map[string]any)[fmt.Sprint(resp.StatusCode)])
	if doc == nil {
		t.Errorf("%s %s: status %d is not documented", method, tmpl, resp.StatusCode)
		return
	}
	if content, ok := doc["content"].(map[string]any); ok {
		ctype, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
		if _, ok := content[ctype]; !ok {
			t.Errorf("%s %s %d: content type %q is not documented", method, tmpl, resp.StatusCode, ctype)
		}
	}
	hdrs, _ := doc["headers"].(map[string]any)
	for name, h := range hdrs {
		if err := o.validate(h.(map[string]any)["schema"].(map[string]any), resp.Header.Get(name), fmt.Sprintf("%s %s %d header %s", method, tmpl, resp.StatusCode, name)); err != nil {
			t.Error(err)
		}
	}
}
