package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestSrtdUnreachableFromSandboxes: a CLI sandbox whose settings allow
// loopback (as people do for dev servers) cannot reach srtd's API through
// its proxy, whose backend none would run commands on the host; another
// loopback server the same settings allow stays reachable.
func TestSrtdUnreachableFromSandboxes(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		d := startSrtd(t, u)
		su, _ := url.Parse(d.url)
		dev := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "dev-server") }))
		defer dev.Close()
		du, _ := url.Parse(dev.URL)
		settings := `{"network":{"allowedDomains":["127.0.0.1","localhost"]}}`
		script := fmt.Sprintf(`curl -s --noproxy '' -o /dev/null -w 'srtd=%%{http_code}\n' http://%s/healthz
curl -s --noproxy '' -o /dev/null -w 'srtd-localhost=%%{http_code}\n' http://localhost:%s/healthz
curl -s --noproxy '' -w '\n' http://%s/`, su.Host, su.Port(), du.Host)
		stdout, stderr, _ := srtRun{u: u, dir: u.workDir(t), settings: settings, args: []string{"sh", "-c", script}}.run(t)
		for _, want := range []string{"srtd=403", "srtd-localhost=403", "dev-server"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("stdout lacks %q:\n%s\nstderr:\n%s", want, stdout, stderr)
			}
		}
	})
}
