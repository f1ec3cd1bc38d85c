//go:build unix

package port

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// blockingVM is a MicroVMLauncher whose Probe blocks until release (its
// verdict then ok) or its ctx ends (cancelled is then closed).
type blockingVM struct {
	started, release, cancelled chan struct{}
	ok                          bool
}

func newBlockingVM(ok bool) *blockingVM {
	return &blockingVM{started: make(chan struct{}), release: make(chan struct{}), cancelled: make(chan struct{}), ok: ok}
}

func (b *blockingVM) Probe(ctx context.Context) (bool, string) {
	close(b.started)
	select {
	case <-b.release:
		if b.ok {
			return true, "fake VM"
		}
		return false, "no hypervisor"
	case <-ctx.Done():
		close(b.cancelled)
		return false, "cancelled"
	}
}

func (b *blockingVM) Launch(ctx context.Context, spec Spec, e EgressLists) (Sandbox, error) {
	return &vmStub{id: spec.SessionID}, nil
}

// vmStub is the Sandbox blockingVM launches.
type vmStub struct{ id string }

func (v *vmStub) Handle() Handle {
	return Handle{SessionID: v.id, Backend: BackendMicroVM, State: StateWarm}
}
func (v *vmStub) Exec(context.Context, ExecRequest) (<-chan Event, error) {
	return nil, errors.New("stub")
}
func (v *vmStub) Suspend(context.Context) error { return nil }
func (v *vmStub) Resume(context.Context) error  { return nil }
func (v *vmStub) Destroy(context.Context) error { return nil }

// probingRuntime is a Runtime without a native sandbox whose microvm
// probe is vm's, started in the background as on a host.
func probingRuntime(t *testing.T, vm MicroVMLauncher, opts Options) (*Runtime, *syncBuffer) {
	t.Helper()
	var buf syncBuffer
	opts.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	opts.MicroVM = vm
	rt, err := newRuntime(context.Background(), opts, &Probe{Platform: "test", Note: "no sandbox", MicroVMState: MicroVMProbing})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rt.Close(ctx)
	})
	return rt, &buf
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// launchAsync runs Launch in the background.
func launchAsync(ctx context.Context, rt *Runtime, id string, b Backend) <-chan error {
	errc := make(chan error, 1)
	go func() {
		sb, err := rt.Launch(ctx, Spec{SessionID: id}, b)
		if err == nil && sb.Handle().SessionID != id {
			err = errors.New("wrong handle")
		}
		errc <- err
	}()
	return errc
}

// waitsFor fails unless errc stays empty a while: the launch is waiting.
func waitsFor(t *testing.T, errc <-chan error, what string) {
	t.Helper()
	select {
	case err := <-errc:
		t.Fatalf("%s returned (%v) while the microvm probe was running; want it to wait", what, err)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestProbeInBackground: Probe answers at once with microvmState probing
// while the microvm probe runs; an explicit microvm launch waits for the
// verdict and then starts; Probe then says available.
func TestProbeInBackground(t *testing.T) {
	vm := newBlockingVM(true)
	rt, _ := probingRuntime(t, vm, Options{})
	<-vm.started
	p := rt.Probe()
	if p.MicroVMState != MicroVMProbing || p.MicroVMAvailable || p.MicroVMNote != "probing" || p.Note != "no sandbox" {
		t.Fatalf("probe while probing: %+v; want microvmState probing, note probing, the native part", p)
	}
	select {
	case <-rt.MicroVMProbed():
		t.Fatal("MicroVMProbed closed while the probe runs")
	default:
	}
	errc := launchAsync(context.Background(), rt, "vm", BackendMicroVM)
	waitsFor(t, errc, "an explicit microvm launch")
	close(vm.release)
	if err := <-errc; err != nil {
		t.Fatalf("microvm launch once the probe said available: %v", err)
	}
	<-rt.MicroVMProbed()
	if p := rt.Probe(); p.MicroVMState != MicroVMAvailable || !p.MicroVMAvailable || p.MicroVMNote != "fake VM" {
		t.Errorf("probe after the verdict: %+v; want available", p)
	}
	if sb, ok := rt.Lookup("vm"); !ok || sb.Handle().Backend != BackendMicroVM {
		t.Errorf("the microvm session is not registered")
	}
}

// TestProbeInBackgroundUnavailable: a waiting explicit microvm launch
// fails loudly once the verdict is unavailable; a default of microvm
// waits too, then falls back with the log line.
func TestProbeInBackgroundUnavailable(t *testing.T) {
	vm := newBlockingVM(false)
	rt, log := probingRuntime(t, vm, Options{DefaultBackend: BackendMicroVM})
	<-vm.started
	explicit := launchAsync(context.Background(), rt, "vm", BackendMicroVM)
	dflt := launchAsync(context.Background(), rt, "dflt", "")
	waitsFor(t, explicit, "an explicit microvm launch")
	waitsFor(t, dflt, "a launch defaulting to microvm")
	close(vm.release)
	if err := <-explicit; !errors.Is(err, ErrBackendUnavailable) || errors.Is(err, ErrMicroVMProbing) || !strings.Contains(err.Error(), "no hypervisor") {
		t.Errorf("explicit microvm, verdict unavailable: %v; want ErrBackendUnavailable naming the note", err)
	}
	if err := <-dflt; err != nil {
		t.Fatalf("default microvm, verdict unavailable: %v; want the fallback", err)
	}
	if sb, ok := rt.Lookup("dflt"); !ok || sb.Handle().Backend != BackendNone {
		t.Errorf("the default launch did not fall back (no native here: none)")
	}
	if !strings.Contains(log.String(), "falling back to native") {
		t.Errorf("no fallback line in %q", log.String())
	}
	if p := rt.Probe(); p.MicroVMState != MicroVMUnavailable || p.MicroVMNote != "no hypervisor" {
		t.Errorf("probe after the verdict: %+v; want unavailable", p)
	}
}

// TestProbeInBackgroundLaunchTimeout: a launch whose ctx ends while the
// probe still runs gets a 503 that says why.
func TestProbeInBackgroundLaunchTimeout(t *testing.T) {
	vm := newBlockingVM(true)
	rt, _ := probingRuntime(t, vm, Options{})
	<-vm.started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := rt.Launch(ctx, Spec{SessionID: "vm"}, BackendMicroVM)
	if !errors.Is(err, ErrMicroVMProbing) || !errors.Is(err, ErrBackendUnavailable) {
		t.Fatalf("launch whose ctx ended while probing: %v; want ErrMicroVMProbing", err)
	}
	if st, field := HTTPStatus(err); st != http.StatusServiceUnavailable || field != "backend" {
		t.Errorf("HTTPStatus = %d %q; want 503 backend", st, field)
	}
	if _, ok := rt.Lookup("vm"); ok {
		t.Error("a launch that failed is registered")
	}
	// A launch that does not need the verdict does not wait.
	if _, err := rt.Launch(ctx, Spec{SessionID: "n"}, BackendNone); err != nil {
		t.Errorf("none while probing: %v", err)
	}
}

// TestProbeInBackgroundClose: Close cancels a probe still running, waits
// for it, and a launch waiting for the verdict gets ErrClosed.
func TestProbeInBackgroundClose(t *testing.T) {
	vm := newBlockingVM(true)
	rt, _ := probingRuntime(t, vm, Options{})
	<-vm.started
	errc := launchAsync(context.Background(), rt, "vm", BackendMicroVM)
	waitsFor(t, errc, "an explicit microvm launch")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rt.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case <-vm.cancelled:
	default:
		t.Fatal("Close returned before the probe's ctx was cancelled")
	}
	select {
	case <-rt.MicroVMProbed():
	default:
		t.Fatal("MicroVMProbed not closed after Close")
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Errorf("launch waiting for the probe across Close: %v; want ErrClosed", err)
	}
	if p := rt.Probe(); p.MicroVMState != MicroVMUnavailable || !strings.Contains(p.MicroVMNote, "closed") {
		t.Errorf("probe after Close: %+v; want unavailable, saying the port closed", p)
	}
}

// TestProbeAtOnce: a launcher that needs no test boot (none, disabled)
// gives its verdict before New returns.
func TestProbeAtOnce(t *testing.T) {
	for _, vm := range []MicroVMLauncher{nil, MicroVMDisabled("off by test")} {
		rt, err := newRuntime(context.Background(), Options{MicroVM: vm}, &Probe{Platform: "test", MicroVMState: MicroVMProbing})
		if err != nil {
			t.Fatal(err)
		}
		if p := rt.Probe(); p.MicroVMState != MicroVMUnavailable || p.MicroVMNote == "" {
			t.Errorf("%T: probe %+v; want unavailable at once", vm, p)
		}
	}
}
