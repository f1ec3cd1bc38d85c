package e2e

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// loopParentName is a name TestParentProxyGuards maps to 127.0.0.1 on the
// host, and allows.
const loopParentName = "loop.parent.srt-test"

// TestParentProxyGuards: with a parent proxy that carries credentials,
// from inside the sandbox (1) the settings file holding them cannot be
// read, (2) a TRACE that the parent would echo, credentials included, is
// refused with 405, (3) an allowed name that resolves here to loopback is
// refused as without a parent, and (4) the parent itself cannot be
// reached, neither through srt's proxy nor through the loopback relay,
// though the rules allow its address. The parent sees none of it.
func TestParentProxyGuards(t *testing.T) {
	requireSandbox(t)
	if !addHosts(t, []string{loopParentName}) {
		t.Fatalf("cannot map %s in /etc/hosts (the e2e suite runs as root)", loopParentName)
	}
	hs := httptest.NewServer(onlyViaParent(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("via parent " + r.Host + "\n"))
	})))
	t.Cleanup(hs.Close)
	parent := startParentFixture(t)
	hp, pp := strconv.Itoa(portOf(t, hs.Listener.Addr())), strconv.Itoa(parent.port)
	settings := `{"filesystem":{"allowWrite":["."]},"network":{"allowedDomains":["` + hostAllowed + `","` + loopParentName +
		`","127.0.0.1:` + pp + `","localhost:` + pp + `"],"parentProxy":{"http":"http://user:pw@127.0.0.1:` + pp + `"}}}`
	curl := "curl -sS -i --max-time 10 "
	script := "cat " + settingsName + "; echo cat=$?" +
		"; " + curl + "http://" + hostAllowed + ":" + hp + "/ok" +
		"; " + curl + "-X TRACE -H 'Max-Forwards: 0' http://" + hostAllowed + ":" + hp + "/trace" +
		"; " + curl + "http://" + loopParentName + ":" + hp + "/loop" +
		"; " + curl + "--noproxy '' http://127.0.0.1:" + pp + "/viaproxy" +
		"; " + curl + "--noproxy '' -p http://localhost:" + pp + "/viatunnel" +
		"; " + curl + "--noproxy '*' http://127.0.0.1:" + pp + "/relay; echo relay=$?"
	forEachUser(t, func(t *testing.T, u *account) {
		stdout, stderr, code := sh(t, u, u.workDir(t), settings, script)
		out := stdout + stderr
		for _, w := range []string{
			"via parent " + hostAllowed + ":" + hp, // the parent route works
			"405 Method Not Allowed",               // TRACE
			"X-Proxy-Error: blocked-by-sandbox-runtime",
			"resolved to a loopback address",              // loop name
			"the parent proxy listens there",              // via the proxy
			"HTTP/1.1 403 the parent proxy listens there", // CONNECT
		} {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %q (exit %d)\nstdout:\n%s\nstderr:\n%s", w, code, stdout, stderr)
			}
		}
		if strings.Contains(out, "cat=0") || strings.Contains(out, "user:pw") {
			t.Errorf("the settings file was readable inside:\n%s", out)
		}
		if strings.Contains(out, "Basic ") || strings.Contains(out, "Proxy-Authorization") {
			t.Errorf("srt's credentials for the parent reached the sandbox:\n%s", out)
		}
		if strings.Contains(out, "relay=0") || strings.Contains(out, "proxy auth required") {
			t.Errorf("the parent was reached from inside:\n%s", out)
		}
	})
	for _, bad := range []string{"TRACE", loopParentName, "/viaproxy", "/viatunnel", "/relay", "CONNECT"} {
		if parent.saw(bad) {
			t.Errorf("the parent was asked for %s", bad)
		}
	}
}
