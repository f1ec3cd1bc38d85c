package e2e

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/srt-go/srt/port"
)

// TestSrtdSelfProtection: a session cannot drive the server that made it
// (escape class 21), and a spec means what a schema-checking reader of it
// would think (found by an adversarial review).
func TestSrtdSelfProtection(t *testing.T) {
	requireSandbox(t)
	me := &account{name: "me", uid: os.Getuid(), gid: os.Getgid(), home: os.Getenv("HOME"), direct: true}
	ctx := context.Background()
	d := startSrtd(t, me, "--name-glob-write-denies", "none")
	addr := strings.TrimPrefix(d.url, "http://")

	t.Run("api-denied-even-when-loopback-allowed", func(t *testing.T) {
		if _, err := d.c.Launch(ctx, port.Spec{SessionID: "self", WorkspaceID: "w", NetworkEnabled: true,
			EgressAllowlist: []string{"127.0.0.1", "localhost"}}, port.BackendNative); err != nil {
			t.Fatal(err)
		}
		for _, u := range []string{"http://" + addr + "/v1/probe", "http://localhost:" + addr[strings.LastIndex(addr, ":")+1:] + "/v1/probe"} {
			out, _ := d.sh(t, "self", "curl -s -o /dev/null -w '%{http_code}' --noproxy '' --max-time 10 "+u)
			if out != "403" {
				t.Errorf("%s from inside: HTTP %s, want 403 from the proxy", u, out)
			}
		}
	})
	t.Run("bind-showing-the-token-refused", func(t *testing.T) {
		_, err := d.c.Launch(ctx, port.Spec{SessionID: "tok", WorkspaceID: "w", Mode: port.ModeReview,
			BindMounts: []port.BindMount{{HostPath: filepath.Dir(d.tokenF), GuestPath: "/x", ReadOnly: true}}}, port.BackendNative)
		if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "token") {
			t.Fatalf("launch with the token's directory bound: %v; want 400 naming the token", err)
		}
	})
	t.Run("read-only-bind-overlapping-writable-refused", func(t *testing.T) {
		w := me.workDir(t)
		_, err := d.c.Launch(ctx, port.Spec{SessionID: "ovl", WorkspaceID: "w", Mode: port.ModeChat,
			BindMounts: []port.BindMount{{HostPath: w, GuestPath: "/rw"}, {HostPath: w, GuestPath: "/ro", ReadOnly: true}}}, port.BackendNative)
		if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "readOnly") {
			t.Fatalf("overlapping read-only and writable binds: %v; want 400 on readOnly", err)
		}
	})
	t.Run("case-variant-and-duplicate-keys-refused", func(t *testing.T) {
		for _, body := range []string{
			`{"sessionId":"cv","workspaceId":"w","mode":"review","MODE":"chat"}`,
			`{"sessionId":"dup","workspaceId":"w","mode":"review","mode":"chat"}`,
		} {
			req, _ := http.NewRequest("POST", d.url+"/v1/sandboxes", bytes.NewReader([]byte(body)))
			req.Header.Set("Authorization", "Bearer "+d.token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 400 {
				t.Errorf("%s: HTTP %d, want 400", body, resp.StatusCode)
			}
		}
	})
}
