package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/srt-go/srt/client"
	"github.com/srt-go/srt/port"
)

// The set-id refusals are violations (issue 16): where srt's supervisor
// answers the sandbox's notifying filter, `chmod u+s`, `chmod o+w` and a
// set-id creation mode fail with EPERM as before, nothing set-id lands on
// the host, and each is one violation event with action, target (the
// path) and raw; an ordinary chmod or open is not one.

// setIDCase is one call and the violation it must give ("" action: none).
type setIDCase struct {
	name, script, file string
	action, reason     string
}

func setIDCases() []setIDCase {
	return []setIDCase{
		{"chmod-u+s", "chmod u+s f", "f", "file-write-mode", "set-id bit"},
		{"chmod-o+w", "chmod o+w f", "f", "file-write-mode", "world-writable mode"},
		{"open-4755", `python3 -c 'import os; os.open("x", os.O_CREAT|os.O_WRONLY, 0o4755)'`, "x", "file-write-create", "set-id bit"},
		{"chmod-644", "chmod 644 f", "f", "", ""},
		{"open-plain", `python3 -c 'import os; os.close(os.open("y", os.O_CREAT|os.O_WRONLY, 0o644))'`, "y", "", ""},
	}
}

// checkSetIDHost fails if file in dir carries a set-id or o+w bit.
func checkSetIDHost(t *testing.T, dir string, tc setIDCase) {
	t.Helper()
	fi, err := os.Lstat(filepath.Join(dir, tc.file))
	if err != nil {
		if tc.action == "" {
			t.Errorf("%s: %v; the ordinary call should have made it", tc.file, err)
		}
		return
	}
	if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 || fi.Mode().Perm()&0o002 != 0 {
		t.Errorf("%s on the host has mode %v", tc.file, fi.Mode())
	}
}

// TestSetIDViolationsCLI: through srt --violations, with the
// creation-time rules on and off.
func TestSetIDViolationsCLI(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		for _, mode := range []string{"rules-on", "rules-off"} {
			t.Run(mode, func(t *testing.T) {
				dir := u.workDir(t)
				settings := modeSettings(mode, `"allowWrite":["."]`)
				for _, tc := range setIDCases() {
					t.Run(tc.name, func(t *testing.T) {
						u.write(t, filepath.Join(dir, "f"), "data")
						os.Chmod(filepath.Join(dir, "f"), 0o644)
						os.Remove(filepath.Join(dir, "x"))
						vfile := filepath.Join(dir, tc.name+".jsonl")
						_, stderr, code := srtRun{u: u, dir: dir, settings: settings,
							pre: []string{"--violations", vfile}, args: []string{"sh", "-c", tc.script}}.run(t)
						target := filepath.Join(dir, tc.file)
						vs := readViolations(t, vfile)
						var mine []violationRecord
						for _, v := range vs {
							if v.Target == target {
								mine = append(mine, v)
							}
						}
						checkSetIDHost(t, dir, tc)
						if tc.action == "" {
							if code != 0 || len(mine) != 0 {
								t.Errorf("exit %d, violations %+v; want 0 and none\nstderr: %s", code, mine, stderr)
							}
							return
						}
						if code == 0 || !strings.Contains(stderr, "Operation not permitted") {
							t.Errorf("exit %d, stderr %q; want EPERM", code, stderr)
						}
						want := "deny " + tc.action + " " + target + " (" + tc.reason + ")"
						if len(mine) != 1 || mine[0].Action != tc.action || mine[0].Reason != tc.reason || mine[0].Raw != want || mine[0].PID <= 1 {
							t.Errorf("violations %+v; want one: %s, from a sandbox pid > 1\nstderr: %s", vs, want, stderr)
						}
					})
				}
			})
		}
	})
}

// TestSrtdSetIDViolations: in a native srtd session, on the exec's
// event stream.
func TestSrtdSetIDViolations(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		ctx := context.Background()
		d := startSrtd(t, u, "--name-glob-write-denies", "none")
		bind := u.workDir(t)
		h, err := d.c.Launch(ctx, port.Spec{SessionID: "setid", WorkspaceID: "w", Mode: port.ModeChat,
			BindMounts: []port.BindMount{{HostPath: bind, GuestPath: bind}}, GuestWorkdir: bind}, port.BackendNative)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range setIDCases() {
			t.Run(tc.name, func(t *testing.T) {
				u.write(t, filepath.Join(bind, "f"), "data")
				os.Chmod(filepath.Join(bind, "f"), 0o644)
				os.Remove(filepath.Join(bind, "x"))
				events, err := d.c.Exec(ctx, h.SessionID, client.ExecRequest{Argv: []string{"sh", "-c", tc.script}})
				if err != nil {
					t.Fatal(err)
				}
				target := filepath.Join(bind, tc.file)
				var out string
				var mine []port.Event
				code := -1
				for ev, err := range events {
					if err != nil {
						t.Fatal(err)
					}
					switch ev.Type {
					case port.EventStdout, port.EventStderr:
						out += string(ev.Data)
					case port.EventViolation:
						if ev.Violation != nil && ev.Violation.Target == target {
							mine = append(mine, ev)
						}
					case port.EventExit:
						if ev.ExitCode != nil {
							code = *ev.ExitCode
						}
					}
				}
				checkSetIDHost(t, bind, tc)
				if tc.action == "" {
					if code != 0 || len(mine) != 0 {
						t.Errorf("exit %d, violations %+v; want 0 and none\n%s", code, mine, out)
					}
					return
				}
				if code == 0 || !strings.Contains(out, "Operation not permitted") {
					t.Errorf("exit %d, output %q; want EPERM", code, out)
				}
				want := "deny " + tc.action + " " + target + " (" + tc.reason + ")"
				if len(mine) != 1 {
					t.Fatalf("violations for %s: %+v; want one: %s\n%s", target, mine, want, out)
				}
				if v := mine[0].Violation; v.Action != tc.action || v.Reason != tc.reason || v.Raw != want {
					t.Errorf("violation %+v; want %s", v, want)
				}
			})
		}
	})
}
