package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/srt-go/srt/client"
	"github.com/srt-go/srt/port"
)

// TestSrtdBindLinks: a session controls its writable binds between runs,
// so a symbolic link it leaves in one must not lead a later session's
// bind to another host directory (issue 16, security review F3): session
// A plants ws/sub -> secretdir; session B's launch with ws/sub (or a path
// below it) as hostPath is a 400 naming the field, also after srtd
// restarts (the written trees are persisted), and neither reads nor
// writes secretdir. A link the user made outside every bind still works;
// one another user left in /tmp is refused.
func TestSrtdBindLinks(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		ctx := context.Background()
		root := u.workDir(t)
		ws, secret, other := filepath.Join(root, "ws"), filepath.Join(root, "secretdir"), filepath.Join(root, "other")
		u.mkdir(t, ws)
		u.write(t, filepath.Join(secret, "s.txt"), "TOPSECRET\n")
		u.mkdir(t, filepath.Join(secret, "inner"))
		u.write(t, filepath.Join(other, "f.txt"), "mine\n")
		os.Chmod(secret, 0o700)
		u.write(t, filepath.Join(root, "mylink"), "->"+other)

		d := startSrtd(t, u, "--name-glob-write-denies", "none")
		if _, err := d.c.Launch(ctx, port.Spec{SessionID: "a", WorkspaceID: "w", Mode: port.ModeChat,
			BindMounts: []port.BindMount{{HostPath: ws, GuestPath: "/ws"}}}, port.BackendNative); err != nil {
			t.Fatal(err)
		}
		if out, code := d.sh(t, "a", "ln -s "+secret+" /ws/sub && echo planted"); code != 0 || !strings.Contains(out, "planted") {
			t.Fatalf("session A could not plant the link: %d %s", code, out)
		}
		if _, err := d.c.Destroy(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(filepath.Join(ws, "sub")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("the planted link is not on the host: %v", err)
		}

		refused := func(t *testing.T, d *srtd, id, field string, spec port.Spec) {
			t.Helper()
			spec.SessionID, spec.WorkspaceID = id, "w"
			_, err := d.c.Launch(ctx, spec, port.BackendNative)
			var ce *client.Error
			if !errors.As(err, &ce) || ce.Status != 400 || ce.Field != field || !strings.Contains(ce.Message, filepath.Join(ws, "sub")+" is a symbolic link") && !strings.Contains(ce.Message, "another user") {
				if err == nil {
					out, _ := d.sh(t, id, "cat /b/s.txt; echo PWNED > /b/planted")
					t.Fatalf("launch accepted; inside: %s", out)
				}
				t.Fatalf("launch: %v; want 400 on %s naming the link", err, field)
			}
		}
		unharmed := func(t *testing.T) {
			t.Helper()
			var names []string
			filepath.WalkDir(secret, func(p string, _ os.DirEntry, _ error) error {
				names = append(names, strings.TrimPrefix(p, secret))
				return nil
			})
			if strings.Join(names, " ") != " /inner /s.txt" {
				t.Fatalf("secretdir holds %q, want s.txt and an empty inner only", names)
			}
		}
		chatBind := func(host string) port.Spec {
			return port.Spec{Mode: port.ModeChat, BindMounts: []port.BindMount{{HostPath: host, GuestPath: "/b"}}}
		}

		t.Run("the-planted-link", func(t *testing.T) {
			refused(t, d, "b", "bindMounts[0].hostPath", chatBind(filepath.Join(ws, "sub")))
			unharmed(t)
		})
		t.Run("read-only-too", func(t *testing.T) {
			refused(t, d, "b-ro", "bindMounts[0].hostPath", port.Spec{Mode: port.ModeReview, BindMounts: []port.BindMount{{HostPath: filepath.Join(ws, "sub"), GuestPath: "/b"}}})
		})
		t.Run("a-link-in-a-parent", func(t *testing.T) {
			spec := chatBind(filepath.Join(ws, "sub", "inner"))
			spec.BindMounts = append([]port.BindMount{{HostPath: other, GuestPath: "/o", ReadOnly: true}}, spec.BindMounts...)
			refused(t, d, "b-parent", "bindMounts[1].hostPath", spec)
			unharmed(t)
		})
		t.Run("runner-state-dir", func(t *testing.T) {
			refused(t, d, "b-state", "runnerStateDirs[0]", port.Spec{Mode: port.ModeChat, RunnerStateDirs: []string{filepath.Join(ws, "sub")}})
			unharmed(t)
		})
		t.Run("the-users-own-link-works", func(t *testing.T) {
			if _, err := d.c.Launch(ctx, port.Spec{SessionID: "mine", WorkspaceID: "w", Mode: port.ModeChat,
				BindMounts: []port.BindMount{{HostPath: filepath.Join(root, "mylink"), GuestPath: "/b"}}}, port.BackendNative); err != nil {
				t.Fatalf("a bind through the user's own link outside every bind: %v", err)
			}
			if out, _ := d.sh(t, "mine", "cat /b/f.txt"); !strings.Contains(out, "mine") {
				t.Fatalf("inside: %q", out)
			}
			d.c.Destroy(ctx, "mine")
		})
		t.Run("another-users-link-in-tmp", func(t *testing.T) {
			link := filepath.Join(os.TempDir(), "srt-e2e-bindlink-"+u.name)
			os.Remove(link)
			if err := os.Symlink(other, link); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(link) })
			if err := os.Lchown(link, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			refused(t, d, "b-tmp", "bindMounts[0].hostPath", chatBind(link))
		})
		t.Run("after-a-restart", func(t *testing.T) {
			d.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-d.exited:
			case <-time.After(20 * time.Second):
				t.Fatal("srtd did not stop")
			}
			d2 := startSrtd(t, u, "--name-glob-write-denies", "none")
			refused(t, d2, "b", "bindMounts[0].hostPath", chatBind(filepath.Join(ws, "sub")))
			unharmed(t)
		})
	})
}
