package e2e

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/srt-go/srt/client"
	"github.com/srt-go/srt/port"
	"github.com/srt-go/srt/settings"
)

// authRecorder is an HTTPS upstream that keeps every Authorization header
// it receives, by path. It answers only whether the header held want, so
// that the answer itself carries no value back.
type authRecorder struct {
	port int
	mu   sync.Mutex
	seen map[string][]string
}

func (a *authRecorder) got(path string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.seen[path]...)
}

func startAuthRecorder(t *testing.T, pki *tlsPKI, ip string) *authRecorder {
	t.Helper()
	a := &authRecorder{seen: map[string][]string{}}
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatalf("listening on %s: %v", ip, err)
	}
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.seen[r.URL.Path] = append(a.seen[r.URL.Path], r.Header.Get("Authorization"))
		a.mu.Unlock()
		fmt.Fprintf(w, "upstream %s saw %s\n", ip, r.URL.Path)
	}))
	s.Listener.Close()
	s.Listener = ln
	s.TLS = &tls.Config{Certificates: []tls.Certificate{pki.server}}
	s.StartTLS()
	t.Cleanup(s.Close)
	a.port = portOf(t, ln.Addr())
	return a
}

// fakeGitHubToken is a value of a GitHub token's shape, fresh per test.
func fakeGitHubToken() string {
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 36)
	rand.Read(b)
	for i := range b {
		b[i] = alnum[int(b[i])%len(alnum)]
	}
	return "ghp_" + string(b)
}

// TestSrtdCredentials: a session launched with a masked GH_TOKEN (its
// value in the spec) shows every exec a sentinel only, in `env` and in
// /proc/self/environ, also when the exec passes the real value itself;
// curl with "Authorization: Bearer $GH_TOKEN" delivers the real value to
// the inject host (over TLS srtd's session proxy terminated, trusted
// through the bundle in the session's TMPDIR) and the sentinel to
// another allowed host; the handle, srtd's log and the event stream hold
// no real value; an injectHosts entry the egress rules do not reach is a
// 422 naming it; microvm refuses credentials; after destroy a new session
// neither sees nor injects the old value.
func TestSrtdCredentials(t *testing.T) {
	requireSandbox(t)
	forEachUser(t, func(t *testing.T, u *account) {
		pki := newTLSPKI(t, tlsUpstreamCN)
		inject := startAuthRecorder(t, pki, tlsTermIP)
		other := startAuthRecorder(t, pki, tlsExcludeIP)
		// srtd verifies upstreams with its own system pool: the test CA.
		dir := u.workDir(t)
		caFile := filepath.Join(dir, "upstream-ca.pem")
		if err := os.WriteFile(caFile, pki.caPEM, 0o644); err != nil {
			t.Fatal(err)
		}
		var prefix []string
		if !u.direct {
			prefix = []string{"setpriv", "--reuid", fmt.Sprint(u.uid), "--regid", fmt.Sprint(u.gid), "--init-groups", "--"}
		}
		env := []string{"PATH=" + cleanPATH, "HOME=" + u.home, "USER=" + u.name, "SHELL=/bin/bash", "SSL_CERT_FILE=" + caFile}
		d := launchSrtd(t, buildSrtd(t), dir, prefix, env, 20*time.Second)
		ctx := context.Background()

		real := fakeGitHubToken()
		injectHost := tlsTermIP + ":" + strconv.Itoa(inject.port)
		otherHost := tlsExcludeIP + ":" + strconv.Itoa(other.port)
		creds := func(hosts ...string) *port.Credentials {
			return &port.Credentials{EnvVars: []port.CredentialEnvVar{
				{CredentialEnvVar: settings.CredentialEnvVar{Name: "GH_TOKEN", CredentialMasking: settings.CredentialMasking{Mode: settings.CredentialMask, InjectHosts: hosts}}, Value: real},
				{CredentialEnvVar: settings.CredentialEnvVar{Name: "NPM_TOKEN", CredentialMasking: settings.CredentialMasking{Mode: settings.CredentialDeny}}},
			}}
		}
		spec := port.Spec{SessionID: "cred", WorkspaceID: "w", NetworkEnabled: true,
			EgressAllowlist: []string{injectHost, otherHost}, Credentials: creds(injectHost)}
		if _, err := d.c.Launch(ctx, spec, port.BackendNative); err != nil {
			t.Fatalf("launch: %v\n%s", err, d.stderr())
		}
		events := d.sandboxEvents(t, "cred")

		// The environment: a sentinel of the token's shape, never the value.
		out, code := d.sh(t, "cred", `printf 'tok=%s\n' "$GH_TOKEN"; printf 'npm=%s\n' "${NPM_TOKEN-unset}"; cat /proc/self/environ | tr '\0' '\n' | grep -c "^GH_TOKEN=" | sed 's/^/n=/'`)
		if strings.Contains(out, real) || code != 0 {
			t.Fatalf("the session's environment holds the real value or failed (exit %d):\n%s", code, out)
		}
		m := regexp.MustCompile(`tok=(ghp_[A-Za-z0-9]{36})\n`).FindStringSubmatch(out)
		if m == nil || !strings.Contains(out, "npm=unset") || !strings.Contains(out, "n=1") {
			t.Fatalf("want GH_TOKEN a sentinel of ghp_ shape, NPM_TOKEN unset: %s", out)
		}
		sentinel := m[1]
		// An exec that passes the real value (or sets the denied name)
		// itself gets the sentinel and nothing.
		o, e, code, err := d.c.Run(ctx, "cred", client.ExecRequest{Argv: []string{"sh", "-c", `env; cat /proc/self/environ`},
			Env: map[string]string{"GH_TOKEN": "x", "COPY": real, "NPM_TOKEN": "y"}})
		if err != nil || code != 0 || strings.Contains(string(o)+string(e), real) || strings.Contains(string(o), "NPM_TOKEN") ||
			!strings.Contains(string(o), "GH_TOKEN="+sentinel) || !strings.Contains(string(o), "COPY="+sentinel) {
			t.Fatalf("exec with its own env (exit %d, %v):\n%s%s", code, err, o, e)
		}

		// The proxy: the real value to the inject host only.
		curl := func(host, path string) string {
			return `curl -sS --max-time 10 -H "Authorization: Bearer $GH_TOKEN" https://` + host + path + `; echo`
		}
		out, code = d.sh(t, "cred", curl(injectHost, "/inject")+"; "+curl(otherHost, "/other"))
		if code != 0 || !strings.Contains(out, "saw /inject") || !strings.Contains(out, "saw /other") {
			t.Fatalf("curl through the session's proxy (exit %d):\n%s\n%s", code, out, d.stderr())
		}
		if got := inject.got("/inject"); len(got) != 1 || got[0] != "Bearer "+real {
			t.Errorf("the inject host got %q, want the real value", got)
		}
		if got := other.got("/other"); len(got) != 1 || got[0] != "Bearer "+sentinel {
			t.Errorf("the other allowed host got %q, want the sentinel", got)
		}

		// The handle: names, modes and hosts, never the value.
		code2, body := d.call(t, "GET", "/v1/sandboxes/cred", "")
		if code2 != 200 || strings.Contains(string(body), real) || !strings.Contains(string(body), `"GH_TOKEN"`) || !strings.Contains(string(body), `"value":"\u003credacted\u003e"`) {
			t.Errorf("GET: %d %s", code2, body)
		}
		_, list := d.call(t, "GET", "/v1/sandboxes", "")
		if strings.Contains(string(list), real) {
			t.Errorf("GET /v1/sandboxes holds the real value: %s", list)
		}

		// An inject host the egress rules do not reach: 422, named.
		bad := spec
		bad.SessionID, bad.Credentials = "bad", creds("unreachable.srt-test")
		req, _ := json.Marshal(struct {
			port.Spec
			Backend port.Backend `json:"backend"`
		}{bad, port.BackendNative})
		code2, body = d.call(t, "POST", "/v1/sandboxes", string(req))
		if code2 != 422 || !strings.Contains(string(body), `"field":"credentials.envVars[0].injectHosts[0]"`) || strings.Contains(string(body), real) {
			t.Errorf("unreachable injectHosts: %d %s, want 422 naming the field", code2, body)
		}
		// microvm cannot terminate TLS: credentials are refused there,
		// whether or not this host can run a VM.
		code2, body = d.call(t, "POST", "/v1/sandboxes", strings.Replace(string(req), `"backend":"native"`, `"backend":"microvm"`, 1))
		if code2 != 422 && code2 != 503 || strings.Contains(string(body), real) {
			t.Errorf("microvm with credentials: %d %s", code2, body)
		}

		if _, err := d.c.Destroy(ctx, "cred"); err != nil {
			t.Fatal(err)
		}
		for ev := range events {
			if b, _ := json.Marshal(ev); strings.Contains(string(b), real) {
				t.Errorf("an event holds the real value: %s", b)
			}
		}

		// A later session has no credentials: it neither sees the value
		// nor gets the old sentinel replaced.
		if _, err := d.c.Launch(ctx, port.Spec{SessionID: "after", WorkspaceID: "w", NetworkEnabled: true, EgressAllowlist: []string{injectHost}}, port.BackendNative); err != nil {
			t.Fatal(err)
		}
		out, _ = d.sh(t, "after", `env; curl -sS --max-time 10 -k -H "Authorization: Bearer `+sentinel+`" https://`+injectHost+`/after; echo`)
		if strings.Contains(out, real) || strings.Contains(out, "GH_TOKEN") || !strings.Contains(out, "saw /after") {
			t.Errorf("the later session:\n%s", out)
		}
		if got := inject.got("/after"); len(got) != 1 || got[0] != "Bearer "+sentinel {
			t.Errorf("the later session's request carried %q, want the old sentinel as sent", got)
		}
		if strings.Contains(d.stderr(), real) {
			t.Errorf("srtd's log holds the real value:\n%s", d.stderr())
		}
	})
}
