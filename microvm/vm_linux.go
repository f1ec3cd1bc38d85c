package microvm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/yamux"
	"github.com/srt-go/srt/internal/syspath"
	"github.com/srt-go/srt/microvm/internal/wire"
	"github.com/srt-go/srt/netrule"
	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/proxy"
	"github.com/srt-go/srt/violation"
)

// VM is one running microvm. Its methods are safe for concurrent use.
type VM struct {
	cfg           Config
	log           *slog.Logger
	assets        *Assets
	initrd        string
	accel         accelVerdict
	bwrap         string       // "" when QEMU runs unconfined
	protectedHost []string     // host spellings of Config.ProtectedPaths inside shares
	sysShares     []sysShare   // Config.System directories exported (system_linux.go)
	sysLinks      []wire.Link  // Config.System links made in the guest
	sysSkipped    []string     // Config.System entries neither shown nor linked
	hidden        []hiddenPath // covered in QEMU's view (SystemHidden, DenyRead)
	pins          []string     // directories of writable shares made mount points in QEMU's view
	pinned        []string     // guest paths bound on themselves under Config.Names (namesPinned)
	pinnedHost    []string     // their host spellings that exist as directories
	events        *eventQueue
	proxy         *proxy.Server
	httpLn        *streamListener
	socksLn       *streamListener

	mu       sync.Mutex // guards the fields below
	state    State
	err      error
	qemu     *qemuProc
	q        *qmp
	ctl      *swapConn
	sess     *yamux.Session
	console  *ring
	active   int
	nextID   int
	snapshot *os.File // unlinked snapshot file while suspended to disk
	hello    wire.Hello
	bootTime time.Duration
	closing  bool
}

// qemuProc is one QEMU process (through bwrap when confined).
type qemuProc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when it exited
	err  error         // its exit status, after done
}

// State returns the VM's state.
func (v *VM) State() State { v.mu.Lock(); defer v.mu.Unlock(); return v.state }

// Err returns why the VM is in StateError, else nil.
func (v *VM) Err() error { v.mu.Lock(); defer v.mu.Unlock(); return v.err }

// Events returns the event channel, in order and without loss; nil
// unless Config.Events. It is closed after Close.
func (v *VM) Events() <-chan Event {
	if v.events == nil {
		return nil
	}
	return v.events.ch
}

// Details describes the VM for a SandboxHandle's details map.
func (v *VM) Details() map[string]any {
	v.mu.Lock()
	defer v.mu.Unlock()
	d := map[string]any{
		"accel": v.accel.Accel, "kernel": v.hello.Kernel, "memoryMiB": v.cfg.MemoryMiB,
		"cpus": v.cfg.CPUs, "bootMs": v.bootTime.Milliseconds(), "confined": v.bwrap != "",
	}
	if v.accel.Reason != "" {
		d["accelReason"] = v.accel.Reason
	}
	if v.qemu != nil && v.qemu.cmd.Process != nil {
		d["pid"] = v.qemu.cmd.Process.Pid
	}
	if len(v.sysSkipped) > 0 {
		d["systemSkipped"] = v.sysSkipped
	}
	if len(v.hidden) > 0 {
		var h []string
		for _, p := range v.hidden {
			h = append(h, p.view)
		}
		d["hidden"] = h
	}
	if len(v.hello.Unprotected) > 0 {
		d["unprotected"] = v.hello.Unprotected
	}
	d["guestLandlock"] = v.hello.Landlock
	d["names"] = v.cfg.Names != nil
	return d
}

// PID returns the pid of the QEMU process (bwrap's when confined), or 0.
func (v *VM) PID() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.qemu == nil || v.qemu.cmd.Process == nil {
		return 0
	}
	return v.qemu.cmd.Process.Pid
}

func (v *VM) setState(s State) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.setStateLocked(s)
}

func (v *VM) setStateLocked(s State) {
	if v.state == StateDestroyed || v.state == StateError {
		return
	}
	v.state = s
}

// Launch boots a VM and returns once its agent is ready (StateWarm).
// ctx bounds the boot only; the VM lives until Close. On a failed boot
// Launch returns the error and also a non-nil *VM in StateError, already
// torn down, so that a caller keeping handles can show why; its Close
// is a no-op. An unavailable runtime (QEMU missing, kernel not
// obtainable) is an *UnavailableError: there is never a fallback.
func Launch(ctx context.Context, cfg Config) (*VM, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	// The policy's write-denies inside writable shares, read-only on the
	// host side too (names_linux.go).
	cfg.ProtectedPaths = append(slices.Clone(cfg.ProtectedPaths), namesProtected(cfg)...)
	cfg.ProtectedPaths = append(cfg.ProtectedPaths, cacheProtected(cfg)...)
	v := &VM{cfg: cfg, log: cfg.Logger, state: StateCreated, console: &ring{max: 8 << 10}, pinned: namesPinned(cfg)}
	if v.log == nil {
		v.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Events {
		v.events = newEventQueue()
	}
	v.events.emit(Event{Type: EventStarting})
	ctx, cancel := context.WithTimeout(ctx, cfg.BootTimeout)
	defer cancel()
	if err := v.boot(ctx); err != nil {
		v.fail(err)
		return v, err
	}
	return v, nil
}

// fail tears everything down and records err as the reason of
// StateError.
func (v *VM) fail(err error) {
	v.mu.Lock()
	if v.state != StateDestroyed && v.state != StateError {
		v.state, v.err = StateError, err
	}
	v.mu.Unlock()
	v.teardown()
}

func (v *VM) boot(ctx context.Context) error {
	qemu, err := findQEMU(v.cfg.QEMUPath)
	if err != nil {
		return err
	}
	v.cfg.QEMUPath = qemu
	if v.assets, err = Prepare(ctx, v.cfg.CacheDir); err != nil {
		return &UnavailableError{Reason: "guest kernel", Err: err}
	}
	init := v.cfg.InitPath
	if init == "" {
		init = os.Getenv("SRT_MICROVM_INIT")
	}
	if init == "" {
		if init, err = os.Executable(); err != nil {
			return err
		}
	}
	if v.initrd, err = initramfsFor(ctx, v.assets, init); err != nil {
		return &UnavailableError{Reason: "guest init", Err: err}
	}
	for _, p := range v.cfg.ProtectedPaths {
		if hp, ok := v.hostPathOf(p); ok {
			if _, err := os.Lstat(hp); err == nil {
				v.protectedHost = append(v.protectedHost, hp)
			}
		}
	}
	for _, p := range v.pinned {
		if hp, ok := v.hostPathOf(p); ok {
			if st, err := os.Lstat(hp); err == nil && st.IsDir() {
				v.pinnedHost = append(v.pinnedHost, hp)
			}
		}
	}
	v.accel = chooseAccel(ctx, v.cfg.Accel, qemu, v.assets.CacheDir, func(ctx context.Context) error {
		// Hardware KVM looks usable: prove it with a test boot, bounded,
		// since a KVM that cannot run the guest may hang rather than fail
		// (recipe pitfall 2).
		test, err := Launch(ctx, Config{QEMUPath: qemu, InitPath: init, CacheDir: v.cfg.CacheDir,
			Accel: "kvm", Confine: v.cfg.Confine, MemoryMiB: 128, BootTimeout: 20 * time.Second})
		if err == nil {
			test.Close()
		}
		return err
	})
	if v.cfg.Confine != "none" {
		if b, err := syspath.LookPath("bwrap"); err == nil {
			v.bwrap = b
		} else if v.cfg.Confine == "bwrap" {
			return &UnavailableError{Reason: "bubblewrap", Err: err}
		}
	}
	if err := v.planSystem(); err != nil {
		return err
	}
	{
		srv, err := proxy.New(proxy.Config{Policy: v.cfg.Policy, Logger: v.log, MaxConns: v.cfg.MaxConns, Parent: v.cfg.Parent, Filtering: v.cfg.Filter, Forbidden: v.cfg.Forbidden,
			OnViolation: func(vi violation.Violation) {
				v.events.emit(Event{Type: EventViolation, Violation: &vi})
				if v.cfg.OnViolation != nil {
					v.cfg.OnViolation(vi)
				}
			}})
		if err != nil {
			return err
		}
		v.proxy = srv
		v.httpLn, v.socksLn = newStreamListener("http"), newStreamListener("socks5")
		go srv.HTTP().Serve(context.Background(), v.httpLn)
		go srv.SOCKS5().Serve(context.Background(), v.socksLn)
	}
	start := time.Now()
	if err := v.startQEMU(ctx, false); err != nil {
		return err
	}
	cfg := yamux.DefaultConfig()
	cfg.EnableKeepAlive = false // a suspended guest cannot answer pings
	cfg.ConnectionWriteTimeout = 24 * time.Hour
	cfg.LogOutput = io.Discard
	v.mu.Lock()
	ctl := v.ctl
	v.mu.Unlock()
	sess, err := yamux.Client(ctl, cfg)
	if err != nil {
		return err
	}
	v.mu.Lock()
	v.sess = sess
	v.mu.Unlock()
	go v.acceptGuestStreams(sess)
	if err := v.configureGuest(ctx); err != nil {
		return err
	}
	v.mu.Lock()
	v.bootTime = time.Since(start)
	v.setStateLocked(StateWarm)
	v.mu.Unlock()
	v.events.emit(Event{Type: EventReady, Reason: v.accel.Accel})
	return nil
}

// hostPathOf maps a guest path to the host path inside a share.
func (v *VM) hostPathOf(guest string) (string, bool) {
	best := -1
	var out string
	for _, s := range v.cfg.Shares {
		if rel, err := filepath.Rel(s.GuestPath, guest); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			if len(s.GuestPath) > best {
				best, out = len(s.GuestPath), filepath.Join(s.HostPath, rel)
			}
		}
	}
	return out, best >= 0
}

// configureGuest sends the mounts and relays to the agent and waits for
// its Hello.
func (v *VM) configureGuest(ctx context.Context) error {
	v.mu.Lock()
	sess := v.sess
	v.mu.Unlock()
	st, err := sess.OpenStream()
	if err != nil {
		return fmt.Errorf("open init stream: %w", err)
	}
	defer st.Close()
	if dl, ok := ctx.Deadline(); ok {
		st.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { st.Close() })
	defer stop()
	gc := wire.GuestConfig{Hostname: v.cfg.Hostname, HTTPPort: HTTPProxyPort, SOCKSPort: SOCKSProxyPort,
		UnixTime: time.Now().UnixNano(), Protected: v.cfg.ProtectedPaths, Rules: wire.RulesOf(v.cfg.Names), Pinned: v.pinned}
	gc.System, gc.Links = v.systemGuestConfig()
	for i, s := range v.cfg.Shares {
		gc.Shares = append(gc.Shares, wire.Share{Tag: fmt.Sprintf("s%d", i), Path: s.GuestPath, ReadOnly: s.ReadOnly, Host: shareHost(s)})
	}
	st.Write([]byte{byte(wire.KindInit)})
	if err := wire.WriteJSON(st, gc); err != nil {
		return fmt.Errorf("send guest config: %w", err)
	}
	var h wire.Hello
	if err := wire.ReadJSON(st, &h); err != nil {
		return fmt.Errorf("wait for the guest agent: %w%s", err, v.consoleTail())
	}
	if h.Version != wire.Version {
		return fmt.Errorf("guest agent speaks protocol %d, host %d", h.Version, wire.Version)
	}
	if h.Error != "" {
		return fmt.Errorf("guest set-up: %s", h.Error)
	}
	v.mu.Lock()
	v.hello = h
	v.mu.Unlock()
	return nil
}

func (v *VM) consoleTail() string {
	t := strings.TrimSpace(v.console.String())
	if t == "" {
		return ""
	}
	return "; console: " + t
}

// startQEMU creates a run directory, listens on the three sockets, starts
// QEMU, accepts its connections and removes the run directory (the
// connections outlive the names), so no file is left even if this
// process is then killed.
func (v *VM) startQEMU(ctx context.Context, incoming bool) error {
	run, err := newRunDir()
	if err != nil {
		return fmt.Errorf("run directory: %w", err)
	}
	defer os.RemoveAll(run)
	var lns [3]*net.UnixListener
	for i, n := range []string{"con.sock", "ctl.sock", "qmp.sock"} {
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(run, n), Net: "unix"})
		if err != nil {
			return err
		}
		defer ln.Close()
		lns[i] = ln
	}
	argv := append([]string{v.cfg.QEMUPath}, qemuArgs(v, run, incoming)...)
	var extra []*os.File
	if v.bwrap != "" {
		f, err := qemuModeFilter()
		if err != nil {
			return err
		}
		defer f.Close()
		extra = append(extra, f)
		argv = confine(v.bwrap, v, run, argv, 3) // ExtraFiles[0]
	}
	v.log.Debug("microvm: start QEMU", "argv", argv)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.ExtraFiles = extra
	var stderr ring
	stderr.max = 4 << 10
	cmd.Stderr = &stderr
	wait, err := startLocked(cmd)
	if err != nil {
		return &UnavailableError{Reason: "start QEMU", Err: err}
	}
	p := &qemuProc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = <-wait
		close(p.done)
		v.qemuExited(p)
	}()
	v.mu.Lock()
	v.qemu = p
	v.mu.Unlock()
	var conns [3]*net.UnixConn
	for i, ln := range lns {
		c, err := acceptCtx(ctx, ln, p.done)
		if err != nil {
			if e := strings.TrimSpace(stderr.String()); e != "" {
				err = fmt.Errorf("%w: QEMU: %s", err, e)
			}
			return err
		}
		conns[i] = c
	}
	go io.Copy(v.console, conns[0])
	q, err := newQMP(conns[2], 10*time.Second)
	if err != nil {
		return err
	}
	v.mu.Lock()
	if v.q != nil {
		v.q.close()
	}
	v.q = q
	if v.ctl == nil {
		v.ctl = newSwapConn(conns[1])
	} else {
		v.ctl.attach(conns[1])
	}
	v.mu.Unlock()
	return nil
}

func acceptCtx(ctx context.Context, ln *net.UnixListener, died <-chan struct{}) (*net.UnixConn, error) {
	type res struct {
		c   *net.UnixConn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.AcceptUnix()
		ch <- res{c, err}
	}()
	select {
	case r := <-ch:
		return r.c, r.err
	case <-died:
		ln.Close()
		return nil, errors.New("QEMU exited during start-up")
	case <-ctx.Done():
		ln.Close()
		return nil, fmt.Errorf("QEMU start-up: %w", ctx.Err())
	}
}

// qemuExited runs when a QEMU process ends. Unless we stopped it (Close,
// snapshot), the VM is dead: StateError.
func (v *VM) qemuExited(p *qemuProc) {
	v.mu.Lock()
	expected := v.closing || v.qemu != p || v.state == StateSuspended
	v.mu.Unlock()
	if !expected {
		v.fail(fmt.Errorf("QEMU exited: %v%s", p.err, v.consoleTail()))
	}
}

// Close destroys the VM: it kills QEMU (and bwrap), stops the proxies and
// closes the event channel. No QEMU process or run directory is left. It
// is idempotent and returns nil.
func (v *VM) Close() error {
	v.mu.Lock()
	if v.state != StateError {
		v.state = StateDestroyed
	}
	v.mu.Unlock()
	v.teardown()
	return nil
}

func (v *VM) teardown() {
	v.mu.Lock()
	if v.closing {
		v.mu.Unlock()
		return
	}
	v.closing = true
	p, q, sess, ctl, snap := v.qemu, v.q, v.sess, v.ctl, v.snapshot
	v.snapshot = nil
	v.mu.Unlock()
	if p != nil && p.cmd.Process != nil {
		// The whole group: bwrap, and QEMU through --die-with-parent. QEMU
		// may run in a session of its own under bwrap and die a moment
		// after it: wait for every descendant too, so that Close returns
		// with no process of the VM left.
		desc := descendants(p.cmd.Process.Pid)
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		p.cmd.Process.Kill()
		<-p.done
		// (No second kill: a pid that is gone may already be reused.)
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			alive := false
			for _, d := range desc {
				if syscall.Kill(d, 0) == nil {
					alive = true
				}
			}
			if !alive {
				break
			}
		}
	}
	if q != nil {
		q.close()
	}
	if ctl != nil {
		ctl.Close()
	}
	if sess != nil {
		sess.Close()
	}
	if snap != nil {
		snap.Close()
	}
	if v.proxy != nil {
		v.proxy.Close()
	}
	v.events.close()
}

// acceptGuestStreams serves the streams the guest opens: one per client
// of its loopback proxy relays, handed to the session's proxies.
func (v *VM) acceptGuestStreams(sess *yamux.Session) {
	for {
		st, err := sess.AcceptStream()
		if err != nil {
			return
		}
		go func() {
			var k [1]byte
			st.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.ReadFull(st, k[:]); err != nil {
				st.Close()
				return
			}
			st.SetReadDeadline(time.Time{})
			switch wire.Kind(k[0]) {
			case wire.KindHTTP:
				v.httpLn.push(st)
			case wire.KindSOCKS:
				v.socksLn.push(st)
			default:
				st.Close() // the guest may open nothing else
			}
		}()
	}
}

// SetPolicy replaces the egress rules; see proxy.Server.SetPolicy.
func (v *VM) SetPolicy(p *netrule.Policy) { v.proxy.SetPolicy(p) }

// ring keeps the last max bytes written to it.
type ring struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.b = append(r.b, p...)
	if len(r.b) > r.max {
		r.b = append([]byte(nil), r.b[len(r.b)-r.max:]...)
	}
	return len(p), nil
}

func (r *ring) String() string { r.mu.Lock(); defer r.mu.Unlock(); return string(r.b) }

// streamListener is a net.Listener whose connections are the guest's
// relay streams, so proxy.Server serves them like any client.
type streamListener struct {
	name string
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newStreamListener(name string) *streamListener {
	return &streamListener{name: name, ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *streamListener) push(c net.Conn) {
	select {
	case l.ch <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *streamListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *streamListener) Close() error { l.once.Do(func() { close(l.done) }); return nil }

func (l *streamListener) Addr() net.Addr { return streamAddr(l.name) }

type streamAddr string

func (a streamAddr) Network() string { return "microvm" }
func (a streamAddr) String() string  { return "guest-" + string(a) }

// descendants lists the processes below pid, read from /proc's children
// files (Linux 3.5+), deepest last.
func descendants(pid int) []int {
	var out []int
	queue := []int{pid}
	for len(queue) > 0 && len(out) < 4096 {
		p := queue[0]
		queue = queue[1:]
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", p))
		for _, t := range tasks {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", p, t.Name()))
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					out = append(out, c)
					queue = append(queue, c)
				}
			}
		}
	}
	return out
}

// cacheProtected returns the guest path of the VMs' cache directory
// (Config.CacheDir, else DefaultCacheDir) when a writable share shows it,
// for Config.ProtectedPaths: the cache holds the guest kernel and the
// initramfs whose /init enforces every later VM's rules, so a VM that could
// write there would choose what the next VM runs. A user's own cache is
// under $HOME (~/.cache/srt-microvm), which `srt --backend microvm` run
// from the home directory and srtd's VM terminal share writable.
func cacheProtected(cfg Config) []string {
	cache := cfg.CacheDir
	if cache == "" {
		cache = DefaultCacheDir()
	}
	g, ok := guestPathOf(cfg.Shares, policy.Resolve(cache))
	if !ok || slices.Contains(cfg.ProtectedPaths, g) {
		return nil
	}
	return []string{g}
}
