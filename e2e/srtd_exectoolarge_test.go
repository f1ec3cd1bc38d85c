package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/srt-go/srt/port"
)

// TestSrtdExecTooLarge: an argv too large for the sandbox's exec channel
// (one packet of at most wire.MaxAgentMsg) is a 400 naming argv, not a
// "sandbox ended" error, and the sandbox runs the next command. One just
// under that bound runs (the send buffer is sized for it), or, on a host
// whose net.core.wmem_max is too small, is that same 400.
func TestSrtdExecTooLarge(t *testing.T) {
	requireSandbox(t)
	forEachUser(t, func(t *testing.T, u *account) {
		d := startSrtd(t, u)
		h, err := d.c.Launch(context.Background(), port.Spec{SessionID: "big", WorkspaceID: "w", Mode: port.ModeChat}, port.BackendNative)
		if err != nil {
			t.Fatal(err)
		}
		exec := func(n int) (int, string) {
			t.Helper()
			b, _ := json.Marshal(map[string]any{"argv": append([]string{"true"}, make([]string, n)...)})
			r, _ := http.NewRequest("POST", d.url+"/v1/sandboxes/"+h.SessionID+"/exec", strings.NewReader(string(b)))
			r.Header.Set("Authorization", "Bearer "+d.token)
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			out, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(out)
		}
		tooLarge := func(code int, out string) bool {
			return code == 400 && strings.Contains(out, `"field":"argv"`) && strings.Contains(out, "too large") && !strings.Contains(out, "sandbox ended")
		}
		// 80,000 empty strings: some 240 KB of JSON, under 256 KiB.
		if code, out := exec(80000); !(code == 200 && strings.Contains(out, `"exitCode":0`)) && !tooLarge(code, out) {
			t.Errorf("80,000 arguments: %d %.300s; want exit 0 (or the too-large 400)", code, out)
		}
		if code, out := exec(100000); !tooLarge(code, out) {
			t.Errorf("100,000 arguments: %d %.300s; want 400 naming argv, too large", code, out)
		}
		if out, code := d.sh(t, h.SessionID, "echo still-here"); code != 0 || !strings.Contains(out, "still-here") {
			t.Errorf("after the refused exec: %d %q; want the sandbox alive", code, out)
		}
	})
}
