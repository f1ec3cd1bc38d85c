package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/srt-go/srt/port"
)

// TestSrtdParentProxy: srtd started behind a corporate proxy (HTTP_PROXY
// in its own environment, with credentials) gives its native sessions
// the parent too: a session's curl reaches an upstream only the parent
// can reach, srt's allow-list still comes first, and the credentials are
// not in the session's environment.
func TestSrtdParentProxy(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		hs := httptest.NewServer(onlyViaParent(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "via parent %s\n", r.Host)
		})))
		t.Cleanup(hs.Close)
		parent := startParentFixture(t)
		var prefix []string
		if !u.direct {
			prefix = []string{"setpriv", "--reuid", fmt.Sprint(u.uid), "--regid", fmt.Sprint(u.gid), "--init-groups", "--"}
		}
		home := u.workDir(t)
		env := []string{"PATH=" + cleanPATH, "HOME=" + home, "USER=" + u.name, "SHELL=/bin/bash",
			"HTTP_PROXY=http://user:pw@127.0.0.1:" + strconv.Itoa(parent.port)}
		d := launchSrtd(t, buildSrtd(t), u.workDir(t), prefix, env, 20*time.Second)
		hp := strconv.Itoa(portOf(t, hs.Listener.Addr()))
		ctx := context.Background()
		allow := []string{hostAllowed + ":" + hp}
		if _, err := d.c.Launch(ctx, port.Spec{SessionID: "p", WorkspaceID: "w", NetworkEnabled: true, EgressAllowlist: allow}, port.BackendNative); err != nil {
			t.Fatal(err)
		}
		out, code := d.sh(t, "p", "curl -sS --max-time 10 http://"+hostAllowed+":"+hp+"/; "+
			"curl -sS -o /dev/null -w 'other=%{http_code}\\n' --max-time 10 http://"+hostOther+":"+hp+"/; env | grep -c 'user:pw' | sed 's/^/creds=/'")
		for _, w := range []string{"via parent " + hostAllowed + ":" + hp, "other=403", "creds=0"} {
			if !strings.Contains(out, w) {
				t.Errorf("session output lacks %q (exit %d):\n%s", w, code, out)
			}
		}
		if !parent.saw(hostAllowed+":"+hp) || parent.saw(hostOther) {
			t.Errorf("the parent saw %v: want the allowed host only", parent.targets)
		}
	})
}
