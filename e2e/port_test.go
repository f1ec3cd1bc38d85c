//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/srt-go/srt/port"
)

// The port tests (issue 6) drive package port through portdriver, run as
// root and as the unprivileged user: launch a native sandbox from a
// SandboxSpec, run commands in it, and check from inside what the seed's
// launch rules promise.

var (
	driverOnce sync.Once
	driverBin  string
	driverErr  error
)

func portDriver(t *testing.T) string {
	t.Helper()
	driverOnce.Do(func() {
		driverBin = filepath.Join(filepath.Dir(srtBin), "portdriver")
		build := exec.Command("go", "build", "-o", driverBin, "./e2e/internal/portdriver")
		build.Dir = moduleRoot()
		if out, err := build.CombinedOutput(); err != nil {
			driverErr = fmt.Errorf("%v: %s", err, out)
		}
		os.Chmod(driverBin, 0o755)
	})
	if driverErr != nil {
		t.Fatalf("building portdriver: %v", driverErr)
	}
	return driverBin
}

type driverRequest struct {
	Spec        port.Spec         `json:"spec"`
	Backend     port.Backend      `json:"backend"`
	Execs       [][]string        `json:"execs"`
	Env         map[string]string `json:"env,omitempty"`
	NoNameGlobs bool              `json:"noNameGlobs"`
}

type driverResult struct {
	Handle      port.Handle `json:"handle"`
	LaunchError string      `json:"launchError"`
	Results     []struct {
		Types  []port.EventType `json:"types"`
		Stdout string           `json:"stdout"`
		Stderr string           `json:"stderr"`
		Code   int              `json:"code"`
		Error  string           `json:"error"`
	} `json:"results"`
}

func runDriver(t *testing.T, u *account, req driverRequest) driverResult {
	t.Helper()
	bin := portDriver(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	in, _ := json.Marshal(req)
	cmd := u.command(ctx, "/", nil, bin)
	cmd.Stdin = bytes.NewReader(in)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("portdriver: %v\nstderr: %s", err, e.String())
	}
	var res driverResult
	if err := json.Unmarshal(o.Bytes(), &res); err != nil {
		t.Fatalf("portdriver output %q: %v", o.String(), err)
	}
	return res
}

func sh1(script string) []string { return []string{"sh", "-c", script} }

// TestPortModes tries every mode's write rules from inside a native
// sandbox, plus visibility and guestPath mapping.
func TestPortModes(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		ws := u.workDir(t)
		u.write(t, filepath.Join(ws, "hello"), "hello from the workspace\n")
		u.mkdir(t, filepath.Join(ws, "orig"))
		u.mkdir(t, filepath.Join(ws, ".git/hooks"))
		state := u.workDir(t)
		outside := u.workDir(t)
		u.write(t, filepath.Join(outside, "secret"), "not for the sandbox\n")
		spec := func(mode port.Mode) port.Spec {
			return port.Spec{
				SessionID: "modes-" + string(mode), Mode: mode, NetworkEnabled: true,
				BindMounts:      []port.BindMount{{HostPath: ws, GuestPath: "/workspace"}},
				GuestWorkdir:    "/workspace",
				ProtectedPaths:  []string{filepath.Join(ws, "orig")},
				RunnerStateDirs: []string{state},
			}
		}
		write := func(p string) []string { return sh1("echo x > " + p + " && echo WROTE") }
		probes := [][]string{
			sh1("cat /workspace/hello"),                                        // 0 guestPath mapping
			write("/workspace/new-file"),                                       // 1 bind write
			write("/workspace/orig/x"),                                         // 2 protected path
			write("/workspace/.git/hooks/pre-commit"),                          // 3 mandatory deny
			write(state + "/runner-state"),                                     // 4 runner state dir
			sh1("cat " + filepath.Join(outside, "secret") + " || echo HIDDEN"), // 5 outside the binds
			sh1("test -e " + ws + " && echo VISIBLE || echo HIDDEN"),           // 6 the host spelling of a mapped bind
			sh1("ls -A " + u.home + " 2>/dev/null | wc -l"),                    // 7 $HOME
			sh1("touch /etc/x /usr/x 2>&1; echo done"),                         // 8 system dirs read-only
		}
		t.Run("chat", func(t *testing.T) {
			res := runDriver(t, u, driverRequest{Spec: spec(port.ModeChat), Execs: probes, NoNameGlobs: true})
			if res.LaunchError != "" {
				t.Fatal(res.LaunchError)
			}
			if res.Handle.Backend != port.BackendNative {
				t.Fatalf("backend %s", res.Handle.Backend)
			}
			r := res.Results
			if r[0].Stdout != "hello from the workspace\n" {
				t.Errorf("guestPath mapping: %+v", r[0])
			}
			if !strings.Contains(r[1].Stdout, "WROTE") {
				t.Errorf("chat cannot write its writable bind: %+v", r[1])
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "new-file")); string(b) != "x\n" {
				t.Errorf("write did not reach the host: %q", b)
			}
			for i, what := range map[int]string{2: "protected path", 3: "mandatory deny .git/hooks"} {
				if strings.Contains(r[i].Stdout, "WROTE") || !hasAny(r[i].Stderr, refused...) {
					t.Errorf("%s writable in chat: %+v", what, r[i])
				}
			}
			if !strings.Contains(r[4].Stdout, "WROTE") {
				t.Errorf("runner state dir not writable: %+v", r[4])
			}
			if !strings.Contains(r[5].Stdout, "HIDDEN") || strings.Contains(r[5].Stdout, "not for the sandbox") {
				t.Errorf("a path outside the binds is visible: %+v", r[5])
			}
			if !strings.Contains(r[6].Stdout, "HIDDEN") {
				t.Errorf("the host spelling of a mapped bind is visible: %+v", r[6])
			}
			if strings.TrimSpace(r[7].Stdout) != "0" {
				t.Errorf("$HOME is visible: %+v", r[7])
			}
			if !strings.Contains(r[8].Stdout, "Read-only") || strings.Count(r[8].Stdout, "Read-only") != 2 {
				t.Errorf("system dirs writable: %+v", r[8])
			}
		})
		for _, mode := range []port.Mode{port.ModeReview, port.ModePlan, port.ModeOrchestrate} {
			t.Run(string(mode), func(t *testing.T) {
				res := runDriver(t, u, driverRequest{Spec: spec(mode), Execs: probes, NoNameGlobs: true})
				if res.LaunchError != "" {
					t.Fatal(res.LaunchError)
				}
				r := res.Results
				for _, i := range []int{1, 2, 3} {
					if strings.Contains(r[i].Stdout, "WROTE") || !hasAny(r[i].Stderr, refused...) {
						t.Errorf("%s: probe %d wrote: %+v", mode, i, r[i])
					}
				}
				if !strings.Contains(r[4].Stdout, "WROTE") {
					t.Errorf("%s: runner state dir not writable: %+v", mode, r[4])
				}
				if r[0].Stdout != "hello from the workspace\n" {
					t.Errorf("%s: cannot read: %+v", mode, r[0])
				}
			})
		}
		// The standard launch policy's glob write-denies (.env, *.key,
		// *.pem) are enforced when a file is created, at any depth and
		// under the guest's paths: a chat session with a writable bind
		// launches, and no such name lands on the host.
		t.Run("name-globs-enforced", func(t *testing.T) {
			res := runDriver(t, u, driverRequest{Spec: spec(port.ModeChat), Execs: [][]string{
				write("/workspace/.env"),
				write("/workspace/server.key"),
				sh1("mkdir -p /workspace/a/b/c && echo x > /workspace/a/b/c/cert.pem && echo WROTE"),
				sh1("echo x > /workspace/t && mv /workspace/t /workspace/a/.env && echo WROTE"),
				write("/workspace/ok.txt"),
			}})
			if res.LaunchError != "" {
				t.Fatalf("chat with a writable bind under the standard policy: %s", res.LaunchError)
			}
			r := res.Results
			for i := range 4 {
				if strings.Contains(r[i].Stdout, "WROTE") || !hasAny(r[i].Stderr, refused...) {
					t.Errorf("probe %d: a name the launch policy denies was made: %+v", i, r[i])
				}
			}
			if !strings.Contains(r[4].Stdout, "WROTE") {
				t.Errorf("an ordinary file cannot be written: %+v", r[4])
			}
			for _, p := range []string{".env", "server.key", "a/b/c/cert.pem", "a/.env"} {
				if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
					t.Errorf("%s landed on the host", p)
				}
			}
		})
	})
}

// TestPortEgress checks each session's proxy pair from inside: the
// allow-list with both wildcard forms, the metadata deny that beats an
// allow, and networkEnabled false.
func TestPortEgress(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s\n", r.Host)
	}))
	defer srv.Close()
	_, portStr, _ := strings.Cut(srv.Listener.Addr().String(), ":")
	names := []string{"a.b.wild.srt-test", "api.x.mid.srt-test", "plain.srt-test", "api.x.y.mid.srt-test", "wild.srt-test"}
	if !addHosts(t, names) {
		t.Skip("cannot map test names to 127.0.0.1 in /etc/hosts")
	}
	curl := func(host string) []string {
		return sh1("curl -s -o /dev/null -w '%{http_code}' --max-time 10 http://" + host + ":" + portStr + "/")
	}
	forEachUser(t, func(t *testing.T, u *account) {
		ws := u.workDir(t)
		spec := port.Spec{SessionID: "egress", Mode: port.ModeReview, NetworkEnabled: true,
			BindMounts: []port.BindMount{{HostPath: ws}},
			// 127.0.0.1 is needed because the names resolve to it (the
			// proxy refuses loopback otherwise); the metadata address and
			// name are allowed on purpose: the deny list must beat them.
			EgressAllowlist: []string{"*.wild.srt-test", "api.*.mid.srt-test", "plain.srt-test", "127.0.0.1", "169.254.169.254", "metadata.google.internal"},
		}
		cases := []struct {
			host string
			want string
		}{
			{"plain.srt-test", "200"},
			{"a.b.wild.srt-test", "200"},    // leading wildcard: any depth
			{"wild.srt-test", "403"},        // never the apex
			{"api.x.mid.srt-test", "200"},   // mid-label wildcard: one label
			{"api.x.y.mid.srt-test", "403"}, // not two
			{"other.srt-test", "403"},       // not on the list
			{"169.254.169.254", "403"},      // metadata beats the allow
			{"metadata.google.internal", "403"},
		}
		var execs [][]string
		for _, c := range cases {
			execs = append(execs, curl(c.host))
		}
		res := runDriver(t, u, driverRequest{Spec: spec, Execs: execs})
		if res.LaunchError != "" {
			t.Fatal(res.LaunchError)
		}
		for i, c := range cases {
			if got := res.Results[i].Stdout; got != c.want {
				t.Errorf("%s: status %q, want %s (stderr %q)", c.host, got, c.want, res.Results[i].Stderr)
			}
		}
		spec.NetworkEnabled = false
		res = runDriver(t, u, driverRequest{Spec: spec, Execs: [][]string{curl("plain.srt-test")}})
		if res.LaunchError != "" || res.Results[0].Stdout != "403" {
			t.Errorf("networkEnabled false: %+v", res)
		}
	})
}

// addHosts maps names to 127.0.0.1 in /etc/hosts for the test (root only),
// marked like addTestHosts' lines.
func addHosts(t *testing.T, names []string) bool {
	t.Helper()
	const path = "/etc/hosts"
	old, err := os.ReadFile(path)
	if err != nil || os.Geteuid() != 0 {
		return false
	}
	add := string(old)
	if add != "" && !strings.HasSuffix(add, "\n") {
		add += "\n"
	}
	for _, h := range names {
		add += "127.0.0.1 " + h + " " + hostsMark + "\n"
	}
	if err := os.WriteFile(path, []byte(add), 0o644); err != nil {
		return false
	}
	t.Cleanup(func() { os.WriteFile(path, old, 0o644) })
	return true
}
