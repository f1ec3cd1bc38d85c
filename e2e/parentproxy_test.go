package e2e

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// parentFrom is the address the parent proxy fixture dials from. The
// upstreams answer only connections from it, so an answer proves srt went
// through the parent (srt itself dials from 127.0.0.1).
const parentFrom = "127.0.0.2"

// parentFixture is a forward proxy (CONNECT and absolute-URI HTTP)
// requiring Basic user:pw that sends every name to 127.0.0.1, from
// parentFrom, and echoes a TRACE with Max-Forwards: 0 as a parent does. It
// records the request targets it was asked for.
type parentFixture struct {
	port    int
	mu      sync.Mutex
	targets []string
}

func (p *parentFixture) saw(sub string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.targets {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func startParentFixture(t *testing.T) *parentFixture {
	t.Helper()
	p := &parentFixture{}
	fwd := forwardProxy(t, dialFromParentFrom)
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("user:pw"))
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.targets = append(p.targets, r.Method+" "+r.RequestURI)
		p.mu.Unlock()
		if r.Header.Get("Proxy-Authorization") != want {
			w.Header().Set("Proxy-Authenticate", `Basic realm="e2e"`)
			http.Error(w, "proxy auth required", http.StatusProxyAuthRequired)
			return
		}
		if r.Method == "TRACE" && r.Header.Get("Max-Forwards") == "0" {
			// RFC 9110 §9.3.8: the last recipient echoes the request,
			// Proxy-Authorization included.
			w.Header().Set("Content-Type", "message/http")
			r.Write(w)
			return
		}
		// The parent's credentials stop here.
		out := r.Clone(r.Context())
		out.Header.Del("Proxy-Authorization")
		fwd.ServeHTTP(w, out)
	}))
	t.Cleanup(s.Close)
	p.port = portOf(t, s.Listener.Addr())
	return p
}

// onlyViaParent wraps h to refuse every connection not from parentFrom.
func onlyViaParent(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if host, _, _ := net.SplitHostPort(r.RemoteAddr); host != parentFrom {
			http.Error(w, "direct connection from "+host+" refused", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// TestParentProxy: with network.parentProxy, or HTTP(S)_PROXY in srt's
// own environment, curl and git inside the sandbox reach upstreams that
// only the parent can reach; srt's own rules still come first; a parent
// wanting credentials gives a clear 502; bad values are one srt: line and
// exit 125.
func TestParentProxy(t *testing.T) {
	requireSandbox(t)
	dir, err := os.MkdirTemp(baseDir, "parent-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	repo := bareRepo(t, dir, "hello from the parent repo")
	mux := http.NewServeMux()
	mux.Handle("/repo.git/", http.StripPrefix("/repo.git/", http.FileServer(http.Dir(repo))))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "via parent %s\n", r.Host) })
	hs := httptest.NewServer(onlyViaParent(mux))
	t.Cleanup(hs.Close)
	caPath, tp := startViaParentTLS(t, dir, "via parent over TLS")
	parent := startParentFixture(t)

	hp := strconv.Itoa(portOf(t, hs.Listener.Addr()))
	parentURL := "http://user:pw@127.0.0.1:" + strconv.Itoa(parent.port)
	rules := `"allowedDomains":["` + hostAllowed + `","` + hostDenied + `"],"deniedDomains":["` + hostDenied + `"]`
	settingsWith := func(pp string) string {
		s := `{"filesystem":{"allowWrite":["."]},"network":{` + rules
		if pp != "" {
			s += `,"parentProxy":` + pp
		}
		return s + `}}`
	}
	curl := "curl -sS --max-time 10 --cacert " + caPath + " "
	httpURL := "http://" + hostAllowed + ":" + hp + "/"
	httpsURL := "https://" + hostAllowed + ":" + tp + "/"
	script := curl + httpURL + "; " + curl + httpsURL +
		"; git clone -q http://" + hostAllowed + ":" + hp + "/repo.git clone && cat clone/README" +
		"; curl -sS -i --max-time 10 http://" + hostDenied + ":" + hp + "/"
	check := func(t *testing.T, stdout, stderr string, code int) {
		t.Helper()
		for _, w := range []string{"via parent " + hostAllowed + ":" + hp, "via parent over TLS " + hostAllowed + ":" + tp,
			"hello from the parent repo", "403 Forbidden", "X-Proxy-Error: blocked-by-allowlist"} {
			if !strings.Contains(stdout, w) {
				t.Errorf("stdout lacks %q (exit %d)\nstdout:\n%s\nstderr:\n%s", w, code, stdout, stderr)
			}
		}
		if strings.Contains(stdout, "direct connection") {
			t.Errorf("an upstream was reached directly:\n%s", stdout)
		}
	}

	forEachUser(t, func(t *testing.T, u *account) {
		t.Run("settings", func(t *testing.T) {
			stdout, stderr, code := sh(t, u, u.workDir(t), settingsWith(`{"http":"`+parentURL+`","noProxy":["example.invalid"]}`), script)
			check(t, stdout, stderr, code)
		})
		t.Run("environment", func(t *testing.T) {
			d := u.workDir(t)
			stdout, stderr, code := srtRun{u: u, dir: d, settings: settingsWith(""), args: []string{"sh", "-c", script},
				env: []string{"HTTPS_PROXY=" + parentURL, "http_proxy=" + parentURL}}.run(t)
			check(t, stdout, stderr, code)
		})
		t.Run("credentials-kept-out", func(t *testing.T) {
			// A corporate environment sets the proxy for many tools: none
			// of those variables, nor any value holding the credentials,
			// reaches the sandbox.
			d := u.workDir(t)
			stdout, stderr, code := srtRun{u: u, dir: d, settings: settingsWith(""), args: []string{"sh", "-c", "env; echo done"},
				env: []string{"HTTPS_PROXY=" + parentURL, "PIP_PROXY=" + parentURL, "npm_config_https_proxy=" + parentURL,
					"GLOBAL_AGENT_HTTPS_PROXY=" + parentURL, "SOCKS_PROXY=" + parentURL, "MY_NOTE=" + parentURL + "/x"}}.run(t)
			if !strings.Contains(stdout, "done") || strings.Contains(stdout, "user:pw") || strings.Contains(stdout, "PIP_PROXY") {
				t.Errorf("the parent's credentials or the user's proxy variables reached the sandbox (exit %d):\n%s\nstderr:\n%s", code, stdout, stderr)
			}
		})
		t.Run("no-credentials", func(t *testing.T) {
			stdout, stderr, code := sh(t, u, u.workDir(t), settingsWith(`{"http":"http://127.0.0.1:`+strconv.Itoa(parent.port)+`"}`),
				"curl -sS -i --max-time 10 "+httpURL+"; "+curl+httpsURL+"; echo curl=$?")
			for _, w := range []string{"502 Bad Gateway", "X-Proxy-Error: parent-proxy-refused", "407 Proxy Authentication Required", "curl=56"} {
				if !strings.Contains(stdout+stderr, w) {
					t.Errorf("output lacks %q (exit %d)\nstdout:\n%s\nstderr:\n%s", w, code, stdout, stderr)
				}
			}
			if strings.Contains(stderr, "violation") || strings.Contains(stdout, "Proxy-Authenticate") {
				t.Errorf("a parent's refusal was reported as a violation or passed on:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
			}
		})
		t.Run("bad-input", func(t *testing.T) {
			for _, tc := range []struct {
				name, pp string
				env      []string
				want     string
			}{
				{"scheme", `{"https":"socks5://u:secret@127.0.0.1:1080"}`, nil, `network.parentProxy.https: invalid proxy URL: scheme "socks5" is not supported`},
				{"unparseable", `{"http":"http://u:secret@[::1"}`, nil, "network.parentProxy.http: invalid proxy URL: does not parse as a URL"},
				{"noProxy", `{"noProxy":3}`, nil, "network.parentProxy.noProxy: expected a string or an array of strings"},
				{"path", `{"https":"http://127.0.0.30:3129/path"}`, nil, `network.parentProxy.https: invalid proxy URL "http://127.0.0.30:3129/path": a proxy URL has no path`},
				{"path-credentials", `{"http":"http://u:secret@127.0.0.30:3129/x"}`, nil, `network.parentProxy.http: invalid proxy URL "http://***@127.0.0.30:3129/x": a proxy URL has no path`},
				// srt's own environment is not the settings file's fault.
				{"env", "", []string{"HTTPS_PROXY=ftp://u:secret@proxy"}, `srt: HTTPS_PROXY (srt's environment): invalid proxy URL: scheme "ftp" is not supported`},
				{"env-path", "", []string{"http_proxy=http://u:secret@127.0.0.30:3129/path"}, `srt: http_proxy (srt's environment): invalid proxy URL "http://***@127.0.0.30:3129/path": a proxy URL has no path`},
			} {
				d := u.workDir(t)
				stdout, stderr, code := srtRun{u: u, dir: d, settings: settingsWith(tc.pp), env: tc.env, args: []string{"echo", "ran"}}.run(t)
				lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
				if code != 125 || stdout != "" || len(lines) != 1 || !strings.HasPrefix(lines[0], "srt: ") ||
					!strings.Contains(stderr, tc.want) || strings.Contains(stderr, "secret") ||
					(tc.pp != "" && !strings.Contains(stderr, settingsName+":1:")) || (tc.pp == "" && strings.Contains(stderr, settingsName)) {
					t.Errorf("%s: exit %d, stdout %q, stderr %q; want 125 and one srt: line with %q, no password, the file named only when at fault", tc.name, code, stdout, stderr, tc.want)
				}
			}
		})
	})
	if parent.saw(hostDenied) {
		t.Errorf("the parent was asked for %s, which srt's rules deny", hostDenied)
	}
}
