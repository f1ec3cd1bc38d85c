package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
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

// TestSrtdUnreachableFromMicroVM: srt --backend microvm allowed
// 127.0.0.1 and localhost cannot reach a running srtd's API through the
// VM's proxies either (an adversarial review got srtd's 401 on GET and an
// established CONNECT): refused with native's reason, by native's rule
// (the srtd registry, linux.ServerAddresses). Native runs first, as the
// reference. Root only: the guest kernel cache is root's.
func TestSrtdUnreachableFromMicroVM(t *testing.T) {
	requireSandbox(t)
	if os.Geteuid() != 0 {
		t.Skip("the microvm kernel cache is root's")
	}
	requireMicroVM(t)
	u := &account{name: "root", home: "/root", direct: true}
	d := startSrtd(t, u)
	su, _ := url.Parse(d.url)
	const why = "srtd's API listens there"
	settings := `{"network":{"allowedDomains":["127.0.0.1","localhost"]}}`
	script := fmt.Sprintf(`curl -s --noproxy '' -w '\nget=%%{http_code}\n' http://%s/healthz
curl -s --noproxy '' -w '\nget-localhost=%%{http_code}\n' http://localhost:%s/healthz
curl -s -p --noproxy '' -o /dev/null -w 'connect=%%{http_connect}\n' http://%s/healthz; echo connect-exit=$?`, su.Host, su.Port(), su.Host)
	for _, backend := range []string{"native", "microvm"} {
		t.Run(backend, func(t *testing.T) {
			vfile := filepath.Join(t.TempDir(), "violations.jsonl")
			stdout, stderr, _ := srtRun{u: u, dir: u.workDir(t), settings: settings, timeout: 180e9,
				pre: []string{"--backend", backend, "--violations", vfile}, args: []string{"sh", "-c", script}}.run(t)
			for _, want := range []string{"get=403", "get-localhost=403", "connect=403", why} {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout lacks %q:\n%s\nstderr:\n%s", want, stdout, stderr)
				}
			}
			for _, bad := range []string{"connect=200", "=401", "=200"} {
				if strings.Contains(stdout, bad) {
					t.Errorf("srtd answered (%q):\n%s", bad, stdout)
				}
			}
			if b, _ := os.ReadFile(vfile); strings.Count(string(b), why) < 3 {
				t.Errorf("violations file lacks three %q records:\n%s\nstderr:\n%s", why, b, stderr)
			}
		})
	}
}
