package port

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/srt-go/srt/sandbox"
	"github.com/srt-go/srt/sandbox/linux"
)

// TestMain: the test binary is the sandbox's PID 1 and guardian, as srt's
// is (sandbox.Main).
func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}

func requireNative(t testing.TB) *Runtime {
	t.Helper()
	rt, err := newRuntime(context.Background(), Options{NameGlobWriteDenies: []string{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rt.probe.Available {
		t.Skipf("no native sandbox: %s", rt.probe.Note)
	}
	return rt
}

// collect reads every event of an exec.
func collect(t testing.TB, ch <-chan Event) (evs []Event, stdout, stderr string) {
	t.Helper()
	var o, e strings.Builder
	timeout := time.After(60 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return evs, o.String(), e.String()
			}
			switch ev.Type {
			case EventStdout:
				o.Write(ev.Data)
			case EventStderr:
				e.Write(ev.Data)
			}
			evs = append(evs, ev)
		case <-timeout:
			t.Fatalf("exec did not end; events so far: %d", len(evs))
		}
	}
}

func TestNativeSmoke(t *testing.T) {
	rt := requireNative(t)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "hello"), []byte("hi\n"), 0o644)
	sb, err := rt.Launch(context.Background(), Spec{SessionID: "smoke", Mode: ModeChat,
		BindMounts: []BindMount{{HostPath: ws, GuestPath: "/workspace"}}, GuestWorkdir: "/workspace"}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Destroy(context.Background())
	if h := sb.Handle(); h.Backend != BackendNative || h.State != StateWarm {
		t.Fatalf("handle %+v", h)
	}
	ch, err := sb.Exec(context.Background(), ExecRequest{Argv: []string{"sh", "-c", "pwd; cat hello; echo new > made; ls /; echo err >&2; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	evs, out, errs := collect(t, ch)
	t.Logf("stdout %q stderr %q", out, errs)
	last := evs[len(evs)-1]
	if last.Type != EventExit || *last.ExitCode != 3 {
		t.Fatalf("last event %+v", last)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "made")); string(b) != "new\n" {
		t.Errorf("made = %q", b)
	}
}

func launchWS(t testing.TB, rt *Runtime, id string, mode Mode, allow ...string) (Sandbox, string) {
	t.Helper()
	ws := t.TempDir()
	sb, err := rt.Launch(context.Background(), Spec{SessionID: id, Mode: mode, NetworkEnabled: true, EgressAllowlist: allow,
		BindMounts: []BindMount{{HostPath: ws, GuestPath: "/workspace"}}, GuestWorkdir: "/workspace"}, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Destroy(context.Background()) })
	return sb, ws
}

// TestNativeEventOrder checks the exact event sequence of an exec: seq
// 1..n without gaps, starting, ready, the output, exit last.
func TestNativeEventOrder(t *testing.T) {
	rt := requireNative(t)
	sb, _ := launchWS(t, rt, "order", ModeReview)
	ch, err := sb.Exec(context.Background(), ExecRequest{Argv: []string{"sh", "-c", "echo one; sleep 0.1; echo two >&2; sleep 0.1; echo three; exit 7"}})
	if err != nil {
		t.Fatal(err)
	}
	evs, _, _ := collect(t, ch)
	var got []string
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) {
			t.Errorf("event %d has seq %d", i, ev.Seq)
		}
		s := string(ev.Type)
		if ev.Data != nil {
			s += ":" + strings.TrimSpace(string(ev.Data))
		}
		if ev.ExitCode != nil {
			s += fmt.Sprintf(":%d", *ev.ExitCode)
		}
		got = append(got, s)
	}
	want := "starting ready stdout:one stderr:two stdout:three exit:7"
	if strings.Join(got, " ") != want {
		t.Errorf("events %q, want %q", strings.Join(got, " "), want)
	}
	if evs[1].Pid <= 1 || evs[0].ExecID == "" {
		t.Errorf("ready lacks pid or starting lacks execId: %+v %+v", evs[0], evs[1])
	}
}

// TestNativeLargeOutput: 50 MB on stdout arrives whole, in order, with a
// slow consumer at first (back-pressure, nothing dropped).
func TestNativeLargeOutput(t *testing.T) {
	rt := requireNative(t)
	sb, _ := launchWS(t, rt, "large", ModeReview)
	ch, err := sb.Exec(context.Background(), ExecRequest{Argv: []string{"sh", "-c", "seq 1 9000000 | head -c 52428800"}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // let the command run into the back-pressure
	var buf bytes.Buffer
	var last Event
	for ev := range ch {
		if ev.Type == EventStdout {
			buf.Write(ev.Data)
		}
		last = ev
	}
	if buf.Len() != 52428800 || last.Type != EventExit || *last.ExitCode != 0 {
		t.Fatalf("got %d bytes, last %+v", buf.Len(), last)
	}
	want, _ := exec.Command("sh", "-c", "seq 1 9000000 | head -c 52428800").Output()
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatal("output differs from the command's")
	}
}

// TestNativeStates walks the state machine on a real sandbox: exec makes
// it active, suspend freezes the process tree, exec while suspended is
// refused, resume thaws, timeout and manual kills, destroy.
func TestNativeStates(t *testing.T) {
	rt := requireNative(t)
	rt.nameGlobs = nil
	sb, ws := launchWS(t, rt, "states", ModeChat)
	ctx := context.Background()
	if err := sb.Resume(ctx); !errors.Is(err, ErrIllegalTransition) {
		t.Errorf("resume while warm: %v", err)
	}
	ch, err := sb.Exec(ctx, ExecRequest{Argv: []string{"sh", "-c", "i=0; while :; do i=$((i+1)); echo $i > /workspace/n; sleep 0.02; done"}})
	if err != nil {
		t.Fatal(err)
	}
	first := <-ch
	ready := <-ch
	if first.Type != EventStarting || ready.Type != EventReady {
		t.Fatalf("%v %v", first.Type, ready.Type)
	}
	if s := sb.Handle().State; s != StateActive {
		t.Fatalf("state %s, want active", s)
	}
	if err := sb.Suspend(ctx); err != nil {
		t.Fatal(err)
	}
	if s := sb.Handle().State; s != StateSuspended {
		t.Fatalf("state %s, want suspended", s)
	}
	time.Sleep(100 * time.Millisecond)
	a, _ := os.ReadFile(filepath.Join(ws, "n"))
	time.Sleep(300 * time.Millisecond)
	b, _ := os.ReadFile(filepath.Join(ws, "n"))
	if !bytes.Equal(a, b) {
		t.Errorf("process ran while suspended: %q then %q", a, b)
	}
	if _, err := sb.Exec(ctx, ExecRequest{Argv: []string{"true"}}); !errors.Is(err, ErrIllegalTransition) {
		t.Errorf("exec while suspended: %v", err)
	}
	if err := sb.Suspend(ctx); !errors.Is(err, ErrIllegalTransition) {
		t.Errorf("suspend while suspended: %v", err)
	}
	if err := sb.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if s := sb.Handle().State; s != StateActive {
		t.Fatalf("state after resume %s, want active", s)
	}
	// The counter moves again once resumed: polled, not timed, so that a
	// loaded machine does not fail it.
	var c []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c, _ = os.ReadFile(filepath.Join(ws, "n")); len(c) > 0 && !bytes.Equal(b, c) {
			break
		}
	}
	if bytes.Equal(b, c) || len(c) == 0 {
		t.Errorf("process did not resume: %q", c)
	}
	if err := sb.(ExecController).Kill(ctx, ready.ExecID); err != nil {
		t.Fatal(err)
	}
	evs, _, _ := collect(t, ch)
	if last := evs[len(evs)-1]; last.Type != EventKilled || last.Reason != "manual" {
		t.Errorf("last event %+v, want killed manual", last)
	}
	waitState(t, sb, StateWarm)
	ch, _ = sb.Exec(ctx, ExecRequest{Argv: []string{"sleep", "30"}, Timeout: 200 * time.Millisecond})
	evs, _, _ = collect(t, ch)
	if last := evs[len(evs)-1]; last.Type != EventKilled || last.Reason != "timeout" || *last.ExitCode != 137 {
		t.Errorf("last event %+v, want killed timeout 137", last)
	}
	ch, _ = sb.Exec(ctx, ExecRequest{Argv: []string{"no-such-command"}})
	evs, _, errs := collect(t, ch)
	if last := evs[len(evs)-1]; last.Type != EventExit || *last.ExitCode != 127 || !strings.Contains(errs, "not found") {
		t.Errorf("missing command: %+v %q", last, errs)
	}
	pid1 := sb.Handle().Details["bwrapPid"].(int)
	if err := sb.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if s := sb.Handle().State; s != StateDestroyed {
		t.Errorf("state %s after destroy", s)
	}
	if _, err := sb.Exec(ctx, ExecRequest{Argv: []string{"true"}}); !errors.Is(err, ErrIllegalTransition) {
		t.Errorf("exec after destroy: %v", err)
	}
	if err := syscall.Kill(pid1, 0); err == nil {
		t.Errorf("bubblewrap %d still runs after destroy", pid1)
	}
	if _, ok := rt.Lookup("states"); ok {
		t.Errorf("destroyed session still registered")
	}
	for _, name := range []string{".bashrc", ".gitconfig"} {
		if _, err := os.Lstat(filepath.Join(ws, name)); err == nil {
			t.Errorf("placeholder %s left in the workspace", name)
		}
	}
}

func waitState(t *testing.T, sb Sandbox, want State) {
	t.Helper()
	for i := 0; i < 100 && sb.Handle().State != want; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if s := sb.Handle().State; s != want {
		t.Fatalf("state %s, want %s", s, want)
	}
}

// TestNativeConcurrentSessions runs 50 sandboxes at once, each with its own
// workspace and allow-list: each sees only its own files, and each one's
// proxies apply its own list (its own host is not refused by policy, the
// others' are).
func TestNativeConcurrentSessions(t *testing.T) {
	rt := requireNative(t)
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("c%02d", i)
			ws := t.TempDir()
			os.WriteFile(filepath.Join(ws, "id"), []byte(id), 0o644)
			sb, err := rt.Launch(context.Background(), Spec{SessionID: id, Mode: ModeReview, NetworkEnabled: true,
				EgressAllowlist: []string{id + ".only.srt-test"},
				BindMounts:      []BindMount{{HostPath: ws, GuestPath: "/workspace"}}, GuestWorkdir: "/workspace"}, "")
			if err != nil {
				errs <- fmt.Errorf("%s: %v", id, err)
				return
			}
			defer sb.Destroy(context.Background())
			other := fmt.Sprintf("c%02d", (i+1)%n)
			script := "cat /workspace/id; echo; " +
				"curl -s -o /dev/null -w '%{http_code} ' --max-time 10 -x http://127.0.0.1:3128 http://" + id + ".only.srt-test/; " +
				"curl -s -o /dev/null -w '%{http_code}' --max-time 10 -x http://127.0.0.1:3128 http://" + other + ".only.srt-test/"
			ch, err := sb.Exec(context.Background(), ExecRequest{Argv: []string{"sh", "-c", script}})
			if err != nil {
				errs <- fmt.Errorf("%s: %v", id, err)
				return
			}
			_, out, _ := collect(t, ch)
			lines := strings.Split(out, "\n")
			if len(lines) != 2 || lines[0] != id || strings.HasPrefix(lines[1], "403") || !strings.HasSuffix(lines[1], " 403") {
				errs <- fmt.Errorf("%s: output %q (want own id, own host not refused by policy, other's 403)", id, out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestNativeViolations: a running session puts nothing on the host, and
// reports its filesystem and system-call refusals as violation events on
// the exec's stream, as it does its network refusals: a write to a protected file (the mounts refuse it), a
// protected name created (the creation-time rules refuse it) and a new
// user namespace (the seccomp filter refuses it).
func TestNativeViolations(t *testing.T) {
	rt := requireNative(t)
	sb, ws := launchWS(t, rt, "violations", ModeChat)
	if err := os.MkdirAll(filepath.Join(ws, ".git/hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The hooks directory exists now, after the launch: a new session
	// pins it.
	sb.Destroy(context.Background())
	sb, err := rt.Launch(context.Background(), Spec{SessionID: "violations2", Mode: ModeChat,
		BindMounts: []BindMount{{HostPath: ws, GuestPath: "/workspace"}}, GuestWorkdir: "/workspace"}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Destroy(context.Background())
	// With the creation-time rules the session puts nothing on the host
	// (no placeholders for the missing protected names).
	ents, _ := os.ReadDir(ws)
	if len(ents) != 1 || ents[0].Name() != ".git" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("the workspace holds %q while the session runs, want only .git", names)
	}
	for _, c := range []struct{ script, target string }{
		{"echo x > /workspace/.git/hooks/pre-commit", "/workspace/.git/hooks/pre-commit"},
		{"echo x > /workspace/.bashrc", "/workspace/.bashrc"},
		{"unshare -U true", "unshare"},
	} {
		ch, err := sb.Exec(context.Background(), ExecRequest{Argv: []string{"sh", "-c", c.script}})
		if err != nil {
			t.Fatal(err)
		}
		evs, _, errs := collect(t, ch)
		var got []string
		for _, ev := range evs {
			if ev.Type == EventViolation && ev.Violation != nil {
				got = append(got, ev.Violation.Target)
				if v := ev.Violation; v.Raw != v.Line() || v.Time.IsZero() {
					t.Errorf("violation event %+v: want its raw line and time", v)
				}
			}
		}
		if !slices.ContainsFunc(got, func(g string) bool { return strings.Contains(g, c.target) }) {
			t.Errorf("%q: violations %q, want one for %s (stderr %q)", c.script, got, c.target, errs)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, ".bashrc")); err == nil {
		t.Error(".bashrc was created on the host")
	}
}

// TestNestedBinds: a writable bind inside another must be the directory
// the outer bind already shows there, reached without a symbolic link; a
// session could otherwise move or re-point the mount point (it is not one
// outside this sandbox) and have the inner tree's names judged at the
// outer tree's host paths.
func TestNestedBinds(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	ws, home := filepath.Join(base, "ws"), filepath.Join(base, "home")
	for _, d := range []string{ws + "/sub", ws + "/elsewhere", home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("elsewhere", ws+"/link")
	for _, tc := range []struct {
		name  string
		inner BindMount
		mode  Mode
		ok    bool
	}{
		{"the same directory, writable", BindMount{HostPath: ws + "/sub", GuestPath: "/w/sub"}, ModeChat, true},
		{"another directory, writable", BindMount{HostPath: home, GuestPath: "/w/sub"}, ModeChat, false},
		{"another directory, read-only", BindMount{HostPath: home, GuestPath: "/w/sub", ReadOnly: true}, ModeChat, true},
		{"another directory, read-only mode", BindMount{HostPath: home, GuestPath: "/w/sub"}, ModeReview, true},
		{"through a symbolic link", BindMount{HostPath: ws + "/elsewhere", GuestPath: "/w/link"}, ModeChat, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := Spec{SessionID: "n", Mode: tc.mode, BindMounts: []BindMount{{HostPath: ws, GuestPath: "/w"}, tc.inner}}
			err := checkGuests(spec, ReadOnlyMode(tc.mode))
			if (err == nil) != tc.ok {
				t.Errorf("checkGuests = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// TestBindOverTmpdir: a bind whose guest path holds srt's private TMPDIR
// (a bind at /tmp, with the state directory in /tmp) is refused: the
// sandbox could rename the state directory away inside it and make a host
// directory at TMPDIR's path, which the name rules exempt.
func TestBindOverTmpdir(t *testing.T) {
	state, err := linux.StateDir()
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	for _, g := range []string{filepath.Dir(state), state, state + "/tmp"} { // "/" is refused by Validate
		spec := Spec{SessionID: "t", BindMounts: []BindMount{{HostPath: ws, GuestPath: g}}}
		if err := checkGuests(spec, false); err == nil || !strings.Contains(err.Error(), "TMPDIR") {
			t.Errorf("bind at %s: %v, want a refusal naming TMPDIR", g, err)
		}
	}
	if err := checkGuests(Spec{SessionID: "t", BindMounts: []BindMount{{HostPath: ws, GuestPath: "/work"}}}, false); err != nil {
		t.Errorf("bind at /work: %v", err)
	}
}

// TestProtectedGlobAtGuestPath: a protectedPaths glob is written in host
// paths; with a bind shown at another guest path, a file created later
// that matches it is refused there (the name rules judge the host path
// the guest path reaches).
func TestProtectedGlobAtGuestPath(t *testing.T) {
	rt := requireNative(t)
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	os.MkdirAll(filepath.Join(ws, "a"), 0o755)
	sb, err := rt.Launch(context.Background(), Spec{SessionID: "glob", Mode: ModeChat,
		BindMounts:     []BindMount{{HostPath: ws, GuestPath: "/work"}},
		ProtectedPaths: []string{ws + "/**/*.secret"}, GuestWorkdir: "/work"}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Destroy(context.Background())
	ch, err := sb.Exec(context.Background(), ExecRequest{Argv: []string{"sh", "-c", "echo x > /work/a/k.secret; echo x > /work/a/k.ok"}})
	if err != nil {
		t.Fatal(err)
	}
	collect(t, ch)
	if _, err := os.Stat(filepath.Join(ws, "a/k.secret")); err == nil {
		t.Error("a file matching the protectedPaths glob was created through its guest path")
	}
	if _, err := os.Stat(filepath.Join(ws, "a/k.ok")); err != nil {
		t.Errorf("an ordinary file was not created: %v", err)
	}
}

// TestNativeSSHHelper: GIT_SSH_COMMAND names srt's binary at a path the
// session sees, wherever srtd is installed (here: the test binary, in a
// directory no bind shows), and the helper runs there.
func TestNativeSSHHelper(t *testing.T) {
	rt := requireNative(t)
	sb, _ := launchWS(t, rt, "ssh-helper", ModeChat)
	ch, err := sb.Exec(context.Background(), ExecRequest{Argv: []string{"sh", "-c", `echo "[$GIT_SSH_COMMAND]"; case "$GIT_SSH_COMMAND" in */.srt/srt*--proxy-connect*) echo named;; esac; test -x /.srt/srt && echo runnable`}})
	if err != nil {
		t.Fatal(err)
	}
	_, out, errs := collect(t, ch)
	if !strings.Contains(out, "named") || !strings.Contains(out, "runnable") {
		t.Errorf("stdout %q stderr %q: want GIT_SSH_COMMAND naming a runnable /.srt/srt", out, errs)
	}
}
