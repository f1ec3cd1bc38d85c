package proxy

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/srt-go/srt/netrule"
)

// TestTerminateFiltered: inside a terminated tunnel, over HTTP/1.1 and
// HTTP/2, requests are judged as on plain HTTP (judgeRequest): httpRules
// refuse a method and a path outside their prefixes, an ambiguous target
// is refused, the hook's header edits reach the upstream and its
// observer sees the response; each refusal is a violation with Protocol
// "https", and nothing refused reaches the upstream.
func TestTerminateFiltered(t *testing.T) {
	var seen []string
	rules := NewHTTPRules([]HTTPRule{{Name: "r", Domains: []netrule.Pattern{mustPattern(t, "example.com")},
		Methods: []string{"GET", "POST"}, Paths: []string{"/api"}}})
	te := startTerm(t, baseRules, true, nil, func(c *Config) {
		c.Filtering = Filtering{HTTPRules: rules, StripResponseHeaders: []string{"x-drop"},
			FilterRequest: func(_ context.Context, r *FilterRequest) FilterDecision {
				if r.Scheme != "https" || r.SNI != "example.com" {
					return FilterDecision{Deny: true, Status: 451, Reason: "bad view " + r.Scheme + " " + r.SNI}
				}
				if r.Method == "POST" {
					return FilterDecision{Deny: true, Status: 451, Reason: "no posts"}
				}
				return FilterDecision{SetHeaders: http.Header{"X-Added": {"yes"}}, RemoveHeaders: []string{"X-Secret"},
					OnResponse: func(resp *http.Response) { seen = append(seen, resp.Status) }}
			}}
	})
	te.up.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		te.hits.inc()
		w.Header().Set("X-Drop", "1")
		io.WriteString(w, "path="+r.URL.RawPath+r.URL.Path+" added="+r.Header.Get("X-Added")+" secret="+r.Header.Get("X-Secret"))
	})
	base := "https://" + te.target
	n := 0
	for _, h2 := range []bool{false, true} {
		c := te.client(te.caPool, h2)
		req := mustReq(t, base+"/api/x")
		req.Header.Set("X-Secret", "s")
		resp, body := fetchAll(t, c, req)
		if resp.StatusCode != 200 || body != "path=/api/x added=yes secret=" || resp.Header.Get("X-Drop") != "" {
			t.Errorf("h2=%v allowed: %d %q %v", h2, resp.StatusCode, body, resp.Header)
		}
		for _, tc := range []struct {
			method, path string
			status       int
		}{
			{"DELETE", "/api/x", 403},               // httpRules: method
			{"GET", "/apix", 403},                   // httpRules: path prefix at a segment boundary
			{"GET", "/api/%c0%ae%c0%ae/admin", 403}, // overlong UTF-8: no reading srt can vouch for
			{"GET", "/api/x%00.html", 403},          // a NUL, where C servers cut the path
			{"POST", "/api/x", 451},                 // the hook
			{"GET", "/api/../admin", 400},           // ambiguous
			{"GET", "/api/..;/admin", 400},          // ambiguous to a servlet container
			{"GET", "/api/x#override", 400},         // X-HTTP-Method-Override below
			{"GET", "/api/x#override_", 400},        // X_Original_URL below
			{"TRACE", "/api/x", 405},
		} {
			var body io.Reader
			if tc.method == "POST" {
				// A body still unread when the refusal is written (curl
				// over HTTP/2 is the client that shows a cut answer: see
				// e2e TestTLSTerminate).
				body = strings.NewReader(strings.Repeat("b", 256<<10))
			}
			req, _ := http.NewRequest(tc.method, base+"/", body)
			req.URL.Opaque = tc.path // sent as spelled
			if strings.HasSuffix(tc.path, "#override") {
				req.URL.Opaque = strings.TrimSuffix(tc.path, "#override")
				req.Header.Set("X-HTTP-Method-Override", "DELETE")
			}
			if strings.HasSuffix(tc.path, "#override_") {
				req.URL.Opaque = strings.TrimSuffix(tc.path, "#override_")
				req.Header["X_Original_URL"] = []string{"/admin"} // as sent, not canonicalised
			}
			resp, got := fetchAll(t, c, req)
			if resp.StatusCode != tc.status || !strings.Contains(got, strings.TrimSuffix(strings.TrimSuffix(tc.path, "_"), "#override")) && tc.status != 405 {
				t.Errorf("h2=%v %s %s: %d %q, want %d and the refusal's text", h2, tc.method, tc.path, resp.StatusCode, got, tc.status)
			}
			n++
		}
		c.CloseIdleConnections()
	}
	vs := te.vio.wait(t, n)
	for _, v := range vs {
		if v.Protocol != "https" || v.Target != te.target {
			t.Errorf("violation %+v", v)
		}
	}
	if got := te.hits.get(); got != 2 {
		t.Errorf("upstream saw %d requests, want the 2 allowed", got)
	}
	if len(seen) != 2 || seen[0] != "200 OK" {
		t.Errorf("OnResponse saw %v", seen)
	}
}

// TestTerminateFilteredOpaque: a CONNECT to a filtered host that would be
// terminated but carries no TLS is closed, not tunnelled, and reported.
func TestTerminateFilteredOpaque(t *testing.T) {
	echo := echoServer(t)
	rules := NewHTTPRules([]HTTPRule{{Name: "r", Domains: []netrule.Pattern{mustPattern(t, "allowed.test")}}})
	te := startTerm(t, baseRules, true, nil, func(c *Config) { c.Filtering = Filtering{HTTPRules: rules} })
	c, br := connectVia(t, te.httpAddr, allowedTarget(echo))
	defer c.Close()
	io.WriteString(c, "SSH-2.0-OpenSSH_9.6\r\n")
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if l, err := br.ReadString('\n'); err == nil {
		t.Fatalf("a filtered host's non-TLS tunnel was relayed: %q", l)
	}
	v := te.vio.wait(t, 1)[0]
	if v.Rule != opaqueRule || !strings.Contains(v.Reason, "cannot be inspected") {
		t.Errorf("violation %+v", v)
	}
}

// TestTerminateUpgradeRefused: an Upgrade to h2c is never relayed (its
// requests would go unjudged), and with request filtering only a
// websocket upgrade is; nothing refused reaches the upstream.
func TestTerminateUpgradeRefused(t *testing.T) {
	for _, tc := range []struct {
		name, upgrade string
		filtered      bool
		want          int
	}{
		{"h2c", "h2c", false, 403},
		{"h2c-listed-second", "websocket, h2c", false, 403},
		{"other-unfiltered", "foo/1", false, 101},
		{"other-filtered", "foo/1", true, 403},
		{"websocket-filtered", "websocket", true, 101},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mods []func(*Config)
			if tc.filtered {
				rules := NewHTTPRules([]HTTPRule{{Name: "r", Domains: []netrule.Pattern{mustPattern(t, "example.com")}}})
				mods = append(mods, func(c *Config) { c.Filtering = Filtering{HTTPRules: rules} })
			}
			te := startTerm(t, baseRules, false, nil, mods...)
			conn, br := tlsTunnel(t, te.httpAddr, te.target, "example.com")
			io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: "+te.target+"\r\nConnection: Upgrade\r\nUpgrade: "+tc.upgrade+"\r\n\r\n")
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != tc.want {
				t.Fatalf("Upgrade %q: %v %v, want %d", tc.upgrade, resp, err, tc.want)
			}
			if tc.want != 101 && te.hits.get() != 0 {
				t.Errorf("a refused upgrade reached the upstream")
			}
		})
	}
}
