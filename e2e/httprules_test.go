package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestHTTPRules: network.httpRules through the real srt CLI, as root and
// as a user. curl inside the sandbox may GET under /api on a filtered
// host and is refused (403, a violation on stderr) a POST, a path beside
// the prefix, an HTTPS tunnel the proxy cannot see into (no
// tlsTerminate) and the loopback relay of the same port; with
// refuseOpaqueTunnels every tunnel (the relay too) is refused; bad rules are one srt: line
// and exit 125, nothing run.
func TestHTTPRules(t *testing.T) {
	requireSandbox(t)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "origin saw %s %s\n", r.Method, r.RequestURI)
	}))
	t.Cleanup(hs.Close)
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "tls origin saw %s %s\n", r.Method, r.RequestURI)
	}))
	t.Cleanup(ts.Close)
	hp, tp := strconv.Itoa(portOf(t, hs.Listener.Addr())), strconv.Itoa(portOf(t, ts.Listener.Addr()))
	allowed := `"allowedDomains":["127.0.0.1:` + hp + `","127.0.0.1:` + tp + `"]`
	// --noproxy '': the proxy even for 127.0.0.1, which NO_PROXY lists.
	curl := "curl -sS -i --noproxy '' --max-time 10 "
	script := curl + "http://127.0.0.1:" + hp + "/api/x; " +
		curl + "-X POST http://127.0.0.1:" + hp + "/api/x; " +
		curl + "http://127.0.0.1:" + hp + "/apix; " +
		curl + "-k https://127.0.0.1:" + tp + "/api/x; echo https=$?; " +
		"curl -sS --max-time 10 http://127.0.0.1:" + hp + "/api/x; echo relay=$?"
	rules := `"httpRules":[{"domains":["127.0.0.1"],"methods":["GET"],"paths":["/api"]}]`

	forEachUser(t, func(t *testing.T, u *account) {
		t.Run("rules", func(t *testing.T) {
			stdout, stderr, code := sh(t, u, u.workDir(t), `{"network":{`+allowed+`,`+rules+`}}`, script)
			report := fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			if n := strings.Count(stdout, "origin saw"); n != 1 || !strings.Contains(stdout, "origin saw GET /api/x") {
				t.Errorf("want exactly the GET to reach an origin; %s", report)
			}
			for _, w := range []string{"HTTP/1.1 403 Forbidden", "X-Proxy-Error: blocked-by-filter",
				"POST /api/x: the method and path match no rule for 127.0.0.1 (network.httpRules[0])",
				"GET /apix: the method and path match no rule", "https=56"} {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q; %s", w, report)
				}
			}
			if strings.Contains(stdout, "relay=0") {
				t.Errorf("the loopback relay carried a request to a filtered host; %s", report)
			}
			for _, w := range []string{
				"deny network-outbound 127.0.0.1:" + hp + " (POST /api/x: the method and path match no rule for 127.0.0.1 (network.httpRules[0]))",
				"deny network-outbound 127.0.0.1:" + tp + " (requests to 127.0.0.1 are filtered (network.httpRules) and this tunnel cannot be inspected: enable network.tlsTerminate)",
			} {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks the violation %q; %s", w, report)
				}
			}
		})
		t.Run("refuseOpaqueTunnels", func(t *testing.T) {
			stdout, stderr, code := sh(t, u, u.workDir(t), `{"network":{`+allowed+`,"refuseOpaqueTunnels":true}}`,
				curl+"-k https://127.0.0.1:"+tp+"/; echo https=$?; "+curl+"-X POST http://127.0.0.1:"+hp+"/any; "+
					"curl -sS --max-time 10 http://127.0.0.1:"+hp+"/relayed; echo relay=$?")
			if !strings.Contains(stdout, "https=56") || strings.Contains(stdout, "tls origin saw") || !strings.Contains(stdout, "origin saw POST /any") ||
				strings.Contains(stdout, "/relayed") || strings.Contains(stdout, "relay=0") ||
				!strings.Contains(stderr, "network.refuseOpaqueTunnels: a tunnel to 127.0.0.1 cannot be inspected") {
				t.Errorf("want the tunnel refused, plain HTTP through: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
		})
		t.Run("bad-input", func(t *testing.T) {
			for _, tc := range []struct{ name, nw, want string }{
				{"method", `"httpRules":[{"domains":["a.test"],"methods":["get"]}]`, `network.httpRules[0].methods[0]: methods are case-sensitive; write "GET"`},
				{"path", `"httpRules":[{"domains":["a.test"],"paths":["api"]}]`, `network.httpRules[0].paths[0]: a path prefix must start with "/"`},
				{"pattern", `"httpRules":[{"domains":["*.com"]}]`, `network.httpRules[0].domains[0]: invalid domain pattern "*.com"`},
				{"ambiguous", `"ambiguousRequestTarget":"lenient"`, `network.ambiguousRequestTarget: "lenient": want one of refuse, asSpelled, normalize`},
			} {
				stdout, stderr, code := runSrt(t, u, u.workDir(t), `{"network":{`+tc.nw+`}}`, "echo", "ran")
				lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
				if code != 125 || stdout != "" || len(lines) != 1 || !strings.HasPrefix(lines[0], "srt: ") ||
					!strings.Contains(stderr, settingsName+":1:") || !strings.Contains(stderr, tc.want) {
					t.Errorf("%s: exit %d, stdout %q, stderr %q; want 125 and one srt: line with %q", tc.name, code, stdout, stderr, tc.want)
				}
			}
		})
	})
}
