package guest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/yamux"
	"github.com/srt-go/srt/microvm/internal/wire"
	"github.com/srt-go/srt/sandbox/linux/inside"
	"golang.org/x/sys/unix"
)

// Paths inside the initramfs, written by the host (microvm.buildInitramfs).
const (
	modulesList = "/lib/srt/modules.list" // one .ko path per line, load order
	toolsDir    = "/.srt/bin"             // busybox applets and srt-guest
)

// droppedCaps are removed from the bounding set of every thread of PID 1
// before the first workload starts, so no workload process, even as
// root, can unmount a read-only or protected mount (CAP_SYS_ADMIN), load
// a kernel module, trace the agent and speak on its channel
// (CAP_SYS_PTRACE), create device nodes (CAP_MKNOD) or poke hardware.
// The agent keeps its own effective set: the bounding set limits only
// what an execve grants. The host enforces the same read-only rules on
// its side (QEMU's export and bubblewrap), so this is the inner layer.
var droppedCaps = []uintptr{
	unix.CAP_SYS_ADMIN, unix.CAP_SYS_MODULE, unix.CAP_SYS_PTRACE,
	unix.CAP_MKNOD, unix.CAP_SYS_RAWIO, unix.CAP_SYS_TIME,
	unix.CAP_NET_ADMIN, unix.CAP_BPF, unix.CAP_PERFMON, unix.CAP_SYS_BOOT,
	unix.CAP_SETPCAP, unix.CAP_LINUX_IMMUTABLE, unix.CAP_SYSLOG,
	unix.CAP_MAC_ADMIN, unix.CAP_MAC_OVERRIDE, unix.CAP_AUDIT_CONTROL,
}

// Main is the guest's PID 1. It never returns: on a fatal error it prints
// the reason on the console (the host keeps its tail as the boot error)
// and powers the VM off.
func Main() {
	// run returns only on a fatal error.
	fmt.Fprintf(os.Stderr, "srt-guest: %v\n", run())
	poweroff()
}

func poweroff() {
	unix.Sync()
	unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	for {
		time.Sleep(time.Hour)
	}
}

func run() error {
	os.Setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:"+toolsDir)
	if err := mountBase(); err != nil {
		return err
	}
	if err := loadModules(); err != nil {
		return err
	}
	if err := loopbackUp(); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	for _, c := range droppedCaps {
		if _, _, e := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, c, 0); e != 0 {
			return fmt.Errorf("prctl(PR_CAPBSET_DROP, %d): %w", c, e)
		}
	}
	// No set-id bit on any file: the set-id filter is put on the thread
	// each workload is started from (observe_linux.go, setIDFilter), not
	// on PID 1, whose supervisor threads need what it refuses (openat2).
	port, err := openPort(wire.PortName, 10*time.Second)
	if err != nil {
		return err
	}
	// A workload's stray kill(1, SIGTERM) must not end the VM: the Go
	// runtime would exit on it. Notify, not Ignore: an ignored signal
	// stays ignored across execve in every workload.
	stray := make(chan os.Signal, 8)
	signal.Notify(stray, unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT,
		unix.SIGUSR1, unix.SIGUSR2, unix.SIGALRM)
	go func() {
		for range stray {
		}
	}()
	a := &agent{procs: newReaper()}
	go a.procs.loop()
	cfg := yamux.DefaultConfig()
	// The host may pause the VM for any length of time (suspend), so
	// neither end may time a quiet peer out.
	cfg.EnableKeepAlive = false
	cfg.ConnectionWriteTimeout = 24 * time.Hour
	cfg.StreamOpenTimeout = 0
	cfg.LogOutput = io.Discard
	sess, err := yamux.Server(port, cfg)
	if err != nil {
		return fmt.Errorf("yamux: %w", err)
	}
	a.sess = sess
	for {
		st, err := sess.AcceptStream()
		if err != nil {
			return fmt.Errorf("control channel closed: %w", err)
		}
		go a.handle(st)
	}
}

func mountBase() error {
	for _, m := range []struct {
		src, dst, fstype, data string
		flags                  uintptr
	}{
		{"proc", "/proc", "proc", "", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC},
		{"sysfs", "/sys", "sysfs", "", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC},
		{"devtmpfs", "/dev", "devtmpfs", "mode=0755", unix.MS_NOSUID},
		{"devpts", "/dev/pts", "devpts", "mode=0620,ptmxmode=0666", unix.MS_NOSUID | unix.MS_NOEXEC},
		{"tmpfs", "/dev/shm", "tmpfs", "mode=1777", unix.MS_NOSUID | unix.MS_NODEV},
		{"tmpfs", "/tmp", "tmpfs", "mode=1777", unix.MS_NOSUID | unix.MS_NODEV},
		{"tmpfs", "/run", "tmpfs", "mode=0755", unix.MS_NOSUID | unix.MS_NODEV},
	} {
		if err := os.MkdirAll(m.dst, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(m.src, m.dst, m.fstype, m.flags, m.data); err != nil {
			return fmt.Errorf("mount %s on %s: %w", m.fstype, m.dst, err)
		}
	}
	// /dev/ptmx from devtmpfs belongs to the initial devpts instance,
	// which is the one mounted above; make it point at pts/ptmx anyway,
	// as util-linux does, so a later devpts remount keeps working.
	os.Remove("/dev/ptmx")
	os.Symlink("pts/ptmx", "/dev/ptmx")
	for _, l := range [][2]string{{"/proc/self/fd", "/dev/fd"}, {"/proc/self/fd/0", "/dev/stdin"},
		{"/proc/self/fd/1", "/dev/stdout"}, {"/proc/self/fd/2", "/dev/stderr"}} {
		os.Symlink(l[0], l[1])
	}
	return nil
}

// loadModules loads the kernel modules listed by the host, in order. A
// kernel with everything built in has no list.
func loadModules() error {
	b, err := os.ReadFile(modulesList)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	for _, p := range strings.Fields(string(b)) {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		err = unix.FinitModule(int(f.Fd()), "", 0)
		f.Close()
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("finit_module %s: %w", p, err)
		}
	}
	return nil
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// openPort finds the virtio-serial port by name. There is no udev, so no
// /dev/virtio-ports symlink: the name is in sysfs.
func openPort(name string, wait time.Duration) (*os.File, error) {
	deadline := time.Now().Add(wait)
	for {
		ents, _ := filepath.Glob("/sys/class/virtio-ports/*/name")
		for _, e := range ents {
			b, err := os.ReadFile(e)
			if err != nil || strings.TrimSpace(string(b)) != name {
				continue
			}
			dev := "/dev/" + filepath.Base(filepath.Dir(e))
			return os.OpenFile(dev, os.O_RDWR|syscall.O_CLOEXEC, 0)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("virtio-serial port %q not found", name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type agent struct {
	sess  *yamux.Session
	procs *reaper

	mu      sync.Mutex // guards the fields below
	cfg     wire.GuestConfig
	mounted []string // mount points in mount order
	relays  bool
}

func (a *agent) handle(st *yamux.Stream) {
	defer st.Close()
	var k [1]byte
	if _, err := io.ReadFull(st, k[:]); err != nil {
		return
	}
	switch wire.Kind(k[0]) {
	case wire.KindInit:
		var cfg wire.GuestConfig
		if err := wire.ReadJSON(st, &cfg); err != nil {
			return
		}
		wire.WriteJSON(st, a.configure(cfg))
	case wire.KindExec:
		a.exec(st)
	case wire.KindControl:
		var c wire.Control
		if err := wire.ReadJSON(st, &c); err != nil {
			return
		}
		var r wire.ControlReply
		switch c.Op {
		case "ping":
		case "quiesce":
			if err := a.unmountAll(); err != nil {
				r.Error = err.Error()
			}
		case "poweroff":
			wire.WriteJSON(st, r)
			st.Close()
			a.procs.killAll()
			a.unmountAll()
			poweroff()
		default:
			r.Error = "unknown op " + strconv.Quote(c.Op)
		}
		wire.WriteJSON(st, r)
	}
}

// configure mounts the shares and the protected paths and starts the
// proxy relays. It is called after boot and again after a snapshot
// restore (the shares were unmounted by quiesce).
func (a *agent) configure(cfg wire.GuestConfig) wire.Hello {
	a.mu.Lock()
	defer a.mu.Unlock()
	h := wire.Hello{Version: wire.Version}
	var uts unix.Utsname
	unix.Uname(&uts)
	h.Kernel = unix.ByteSliceToString(uts.Release[:])
	var si unix.Sysinfo_t
	unix.Sysinfo(&si)
	h.UptimeMS = si.Uptime * 1000
	h.Landlock = inside.LandlockABI()
	if cfg.UnixTime > 0 {
		ts := unix.NsecToTimespec(cfg.UnixTime)
		unix.ClockSettime(unix.CLOCK_REALTIME, &ts)
	}
	if cfg.Hostname != "" {
		unix.Sethostname([]byte(cfg.Hostname))
	}
	a.cfg = cfg
	if len(a.mounted) == 0 {
		un, err := a.mountAllLocked()
		if err != nil {
			h.Error = err.Error()
			return h
		}
		h.Unprotected = un
	}
	if !a.relays {
		if err := a.startRelays(); err != nil {
			h.Error = err.Error()
			return h
		}
		a.relays = true
	}
	return h
}

// mountAllLocked mounts the shares, parents first, then bind-mounts each
// protected path read-only on itself. Order matters: a protected path
// inside a share must be mounted after that share, or the share would
// cover it.
func (a *agent) mountAllLocked() (unprotected []string, err error) {
	shares := append([]wire.Share(nil), a.cfg.Shares...)
	sort.SliceStable(shares, func(i, j int) bool { return len(shares[i].Path) < len(shares[j].Path) })
	for _, s := range shares {
		if err := os.MkdirAll(s.Path, 0o755); err != nil {
			return nil, fmt.Errorf("share %s: %w", s.Path, err)
		}
		flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
		if s.ReadOnly {
			flags |= unix.MS_RDONLY
		}
		opts := "trans=virtio,version=9p2000.L,msize=262144,cache=none,access=any"
		if err := unix.Mount(s.Tag, s.Path, "9p", flags, opts); err != nil {
			return nil, fmt.Errorf("mount 9p %s on %s: %w", s.Tag, s.Path, err)
		}
		a.mounted = append(a.mounted, s.Path)
	}
	for _, p := range a.cfg.Pinned {
		// A mount point of its own: not renamed, not removed (EBUSY).
		if st, err := os.Lstat(p); err != nil || !st.IsDir() {
			continue
		}
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return nil, fmt.Errorf("pin %s: %w", p, err)
		}
		a.mounted = append(a.mounted, p)
	}
	for _, p := range a.cfg.Protected {
		if _, err := os.Lstat(p); err != nil {
			unprotected = append(unprotected, p)
			continue
		}
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return nil, fmt.Errorf("bind %s: %w", p, err)
		}
		a.mounted = append(a.mounted, p)
		if err := unix.Mount("", p, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
			return nil, fmt.Errorf("remount %s read-only: %w", p, err)
		}
	}
	return unprotected, nil
}

// unmountAll undoes mountAllLocked, children first. QEMU refuses to
// migrate while a 9p export is mounted, so a snapshot needs this; it
// fails with EBUSY while a process has a file or its working directory
// in a share, and then remounts what it had unmounted.
func (a *agent) unmountAll() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := len(a.mounted) - 1; i >= 0; i-- {
		if err := unix.Unmount(a.mounted[i], 0); err != nil {
			busy := a.mounted[i]
			// Put back what was unmounted, for a consistent state.
			for j := i; j >= 0; j-- {
				unix.Unmount(a.mounted[j], unix.MNT_DETACH)
			}
			a.mounted = nil
			a.mountAllLocked()
			return fmt.Errorf("unmount %s: %w (a process still uses the share)", busy, err)
		}
	}
	a.mounted = nil
	return nil
}

// startRelays listens on the guest's loopback proxy ports; each client
// becomes a yamux stream to the host, which serves the session's
// filtering proxy on it. There is no network card: these streams are the
// guest's only way out.
func (a *agent) startRelays() error {
	for _, r := range []struct {
		port int
		kind wire.Kind
	}{{a.cfg.HTTPPort, wire.KindHTTP}, {a.cfg.SOCKSPort, wire.KindSOCKS}} {
		if r.port == 0 {
			continue
		}
		ln, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)))
		if err != nil {
			return fmt.Errorf("relay listen: %w", err)
		}
		go a.relay(ln, r.kind)
		if ln6, err := net.Listen("tcp6", net.JoinHostPort("::1", strconv.Itoa(r.port))); err == nil {
			go a.relay(ln6, r.kind)
		}
	}
	return nil
}

func (a *agent) relay(ln net.Listener, kind wire.Kind) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			st, err := a.sess.OpenStream()
			if err != nil {
				return
			}
			defer st.Close()
			if _, err := st.Write([]byte{byte(kind)}); err != nil {
				return
			}
			done := make(chan struct{})
			go func() {
				io.Copy(st, c)
				st.Close() // yamux Close is a half-close (FIN)
				close(done)
			}()
			io.Copy(c, st)
			if tc, ok := c.(*net.TCPConn); ok {
				tc.CloseWrite()
			}
			<-done
		}()
	}
}

// reaper is PID 1's wait loop: it reaps every child, ours and orphans,
// and hands the status of a process it was asked about to its waiter.
type reaper struct {
	mu    sync.Mutex // guards the maps; held across start+register
	wait  map[int]chan unix.WaitStatus
	early map[int]unix.WaitStatus // reaped before registration
	sigs  chan os.Signal
}

func newReaper() *reaper {
	r := &reaper{wait: map[int]chan unix.WaitStatus{}, early: map[int]unix.WaitStatus{},
		sigs: make(chan os.Signal, 8)}
	signal.Notify(r.sigs, unix.SIGCHLD)
	return r
}

func (r *reaper) loop() {
	for range r.sigs {
		r.mu.Lock()
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
			if c, ok := r.wait[pid]; ok {
				c <- ws
				delete(r.wait, pid)
			} else {
				r.early[pid] = ws // an orphan, or not yet registered
			}
		}
		// Orphans never registered would pile up in early; they are
		// bounded by the number of processes ever run, and cleared here
		// when the map grows large.
		if len(r.early) > 4096 {
			clear(r.early)
		}
		r.mu.Unlock()
	}
}

// start starts a process and returns a channel that receives its status.
func (r *reaper) start(path string, argv []string, attr *os.ProcAttr) (int, <-chan unix.WaitStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, err := os.StartProcess(path, argv, attr)
	if err != nil {
		return 0, nil, err
	}
	pid := p.Pid
	p.Release() // the reaper waits for it, not os.Process
	c := make(chan unix.WaitStatus, 1)
	if ws, ok := r.early[pid]; ok {
		delete(r.early, pid)
		c <- ws
	} else {
		r.wait[pid] = c
	}
	return pid, c, nil
}

func (r *reaper) killAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for pid := range r.wait {
		unix.Kill(-pid, unix.SIGKILL)
		unix.Kill(pid, unix.SIGKILL)
	}
}
