//go:build unix

package port

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// noneRuntime is a Runtime on a host without a native sandbox: every
// launch runs on none, which starts nothing until an exec.
func noneRuntime(t *testing.T, opts Options) *Runtime {
	t.Helper()
	opts.MicroVM = fakeVM{}
	rt, err := newRuntime(context.Background(), opts, &Probe{Platform: "test", Note: "no sandbox"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

// TestRegistry: the port is the one registry of sessions: duplicate ids,
// the session limit, Lookup and List, and a destroy that frees the id.
func TestRegistry(t *testing.T) {
	ctx := context.Background()
	rt := noneRuntime(t, Options{MaxSessions: 2})
	a, err := rt.Launch(ctx, Spec{SessionID: "a"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Launch(ctx, Spec{SessionID: "a"}, ""); !errors.Is(err, ErrSessionExists) {
		t.Errorf("same id twice: %v; want ErrSessionExists", err)
	}
	if _, err := rt.Launch(ctx, Spec{SessionID: "b"}, BackendNone); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Launch(ctx, Spec{SessionID: "c"}, ""); !errors.Is(err, ErrTooManySessions) {
		t.Errorf("3rd session of 2: %v; want ErrTooManySessions", err)
	}
	if sb, ok := rt.Lookup("a"); !ok || sb != a {
		t.Errorf("Lookup(a) = %v, %v", sb, ok)
	}
	if n := len(rt.List()); n != 2 {
		t.Errorf("List: %d sandboxes; want 2", n)
	}
	if err := a.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := rt.Lookup("a"); ok {
		t.Error("Lookup finds a destroyed sandbox")
	}
	if _, err := rt.Launch(ctx, Spec{SessionID: "a"}, ""); err != nil {
		t.Errorf("id again after its destroy: %v", err)
	}
	// A bad spec is refused before the limit is looked at.
	if _, err := rt.Launch(ctx, Spec{SessionID: "-x"}, ""); !errors.As(err, new(*SpecError)) {
		t.Errorf("bad id at the limit: %v; want a SpecError", err)
	}
}

// TestClose: Close destroys every sandbox and refuses later launches.
func TestClose(t *testing.T) {
	ctx := context.Background()
	rt := noneRuntime(t, Options{})
	var all []Sandbox
	for i := range 3 {
		sb, err := rt.Launch(ctx, Spec{SessionID: fmt.Sprint("s", i)}, "")
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, sb)
	}
	if err := rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, sb := range all {
		if st := sb.Handle().State; st != StateDestroyed {
			t.Errorf("%s after Close: %s", sb.Handle().SessionID, st)
		}
	}
	if n := len(rt.List()); n != 0 {
		t.Errorf("%d sandboxes listed after Close", n)
	}
	if _, err := rt.Launch(ctx, Spec{SessionID: "late"}, ""); !errors.Is(err, ErrClosed) {
		t.Errorf("launch after Close: %v; want ErrClosed", err)
	}
}

func TestParseRequestedBackend(t *testing.T) {
	for in, want := range map[string]Backend{"": "", "none": BackendNone, "native": BackendNative,
		"docker": BackendNative, "microvm": BackendMicroVM} {
		if got, err := ParseRequestedBackend(in); err != nil || got != want {
			t.Errorf("ParseRequestedBackend(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"vmware", "MicroVM", "podman"} {
		var se *SpecError
		if _, err := ParseRequestedBackend(in); !errors.As(err, &se) || se.Field != "backend" {
			t.Errorf("ParseRequestedBackend(%q) = %v; want a SpecError for backend", in, err)
		}
	}
}

// TestHTTPStatus is the one mapping of the port's errors to srtd's
// statuses, as the errors come wrapped.
func TestHTTPStatus(t *testing.T) {
	rt := noneRuntime(t, Options{Sandbox: SandboxOff})
	_, offErr := rt.Choose(context.Background(), BackendNative)
	for _, c := range []struct {
		err    error
		status int
		field  string
	}{
		{&SpecError{"mode", "x"}, http.StatusBadRequest, "mode"},
		{fmt.Errorf("x: %w", &SpecError{"argv", "x"}), http.StatusBadRequest, "argv"},
		{&TransitionError{StateWarm, StateWarm}, http.StatusConflict, ""},
		{fmt.Errorf("%w: %q", ErrSessionExists, "a"), http.StatusConflict, "sessionId"},
		{offErr, http.StatusConflict, "backend"},
		{fmt.Errorf("x: %w", ErrUnenforceable), http.StatusUnprocessableEntity, ""},
		{fmt.Errorf("%w (3)", ErrTooManySessions), http.StatusTooManyRequests, ""},
		{fmt.Errorf("%w: microvm", ErrBackendUnavailable), http.StatusServiceUnavailable, "backend"},
		{ErrClosed, http.StatusServiceUnavailable, ""},
		{errors.New("boom"), http.StatusInternalServerError, ""},
	} {
		if st, f := HTTPStatus(c.err); st != c.status || f != c.field {
			t.Errorf("HTTPStatus(%v) = %d %q; want %d %q", c.err, st, f, c.status, c.field)
		}
	}
	if !errors.Is(offErr, ErrBackendUnavailable) {
		t.Errorf("--sandbox off refusal %v does not wrap ErrBackendUnavailable", offErr)
	}
}

func TestCheckExec(t *testing.T) {
	for _, c := range []struct {
		req   ExecRequest
		field string
	}{
		{ExecRequest{}, "argv"},
		{ExecRequest{Argv: []string{""}}, "argv"},
		{ExecRequest{Argv: []string{"a", "b\x00"}}, "argv[1]"},
		{ExecRequest{Argv: []string{"a"}, Env: map[string]string{"A=B": "c"}}, "env.A=B"},
		{ExecRequest{Argv: []string{"a"}, Cwd: "rel"}, "cwd"},
		{ExecRequest{Argv: []string{"a"}, Timeout: -1}, "timeoutMs"},
	} {
		var se *SpecError
		if err := CheckExec(c.req); !errors.As(err, &se) || se.Field != c.field {
			t.Errorf("CheckExec(%+v) = %v; want a SpecError for %s", c.req, err, c.field)
		}
	}
}

// TestSandboxEvents: the sandbox's stream on the none backend: starting,
// ready, an exec's exit with its execId, a violation reported while it
// ran, suspended, resumed, agent, destroyed and the end; the handle
// reports the spec (review mode makes the binds read-only).
func TestSandboxEvents(t *testing.T) {
	ctx := context.Background()
	rt := noneRuntime(t, Options{})
	dir := t.TempDir()
	sb, err := rt.Launch(ctx, Spec{SessionID: "ev", WorkspaceID: "w", AgentID: "a", Mode: ModeReview, NetworkEnabled: true,
		BindMounts: []BindMount{{HostPath: dir, GuestPath: "/work"}}}, BackendNone)
	if err != nil {
		t.Fatal(err)
	}
	h := sb.Handle()
	if h.WorkspaceID != "w" || h.AgentID != "a" || h.Mode != ModeReview || !h.NetworkEnabled ||
		len(h.BindMounts) != 1 || !h.BindMounts[0].ReadOnly || h.BindMounts[0].GuestPath != "/work" || h.Details["mode"] != "review" {
		t.Fatalf("handle %+v", h)
	}
	evs, err := sb.(EventSubscriber).Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	expect := func(want EventType) Event {
		t.Helper()
		ev := next(t, evs)
		if ev.Type != want {
			t.Fatalf("event %+v, want %s", ev, want)
		}
		return ev
	}
	expect(EventStarting)
	expect(EventReady)
	ch, err := sb.Exec(ctx, ExecRequest{Argv: []string{"sh", "-c", "read x; exit 3"}, Stdin: strings.NewReader("go\n")})
	if err != nil {
		t.Fatal(err)
	}
	var execID string
	for ev := range ch {
		if ev.Type == EventReady {
			execID = ev.ExecID
			sb.(ViolationReporter).ReportViolation(Violation{Action: "network-outbound", Target: "x.example:443"})
		}
	}
	if v := expect(EventViolation); v.ExecID != execID || v.Violation == nil || v.Violation.Target != "x.example:443" {
		t.Errorf("violation %+v, want execId %s", v, execID)
	}
	if ev := expect(EventExit); ev.ExecID != execID || ev.ExitCode == nil || *ev.ExitCode != 3 {
		t.Errorf("exit %+v, want execId %s code 3", ev, execID)
	}
	if err := sb.Suspend(ctx); err != nil {
		t.Fatal(err)
	}
	expect(EventSuspended)
	if err := sb.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	expect(EventResumed)
	sb.(AgentBinder).SetAgent("b")
	expect(EventAgent)
	sb.Destroy(ctx)
	if ev := expect(EventDestroyed); ev.Seq != 8 {
		t.Errorf("destroyed has seq %d, want 8", ev.Seq)
	}
	if _, ok := <-evs; ok {
		t.Error("stream goes on after destroyed")
	}
}
