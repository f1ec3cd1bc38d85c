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
	if err := closeKernelHelpers(); err != nil {
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
		// Read-only: nothing of the guest's writes it, and a root
		// workload could name a usermode helper there
		// (/sys/kernel/uevent_helper; closeKernelHelpers).
		{"sysfs", "/sys", "sysfs", "", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_RDONLY},
		{"devtmpfs", "/dev", "devtmpfs", "mode=0755", unix.MS_NOSUID},
		{"devpts", "/dev/pts", "devpts", "mode=0620,ptmxmode=0666", unix.MS_NOSUID | unix.MS_NOEXEC},
		{"tmpfs", "/dev/shm", "tmpfs", "mode=1777", unix.MS_NOSUID | unix.MS_NODEV},
		{"tmpfs", "/tmp", "tmpfs", "mode=1777", unix.MS_NOSUID | unix.MS_NODEV},
		{"tmpfs", "/run", "tmpfs", "mode=0755", unix.MS_NOSUID | unix.MS_NODEV},
		// The guest's root is read-only once configured (configure):
		// root's home and /var/tmp are writable trees of their own.
		{"tmpfs", "/root", "tmpfs", "mode=0700", unix.MS_NOSUID | unix.MS_NODEV},
		{"tmpfs", "/var/tmp", "tmpfs", "mode=1777", unix.MS_NOSUID | unix.MS_NODEV},
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

// closeKernelHelpers stops the kernel from starting a program of the
// guest's as a usermode helper (call_usermodehelper), which runs as root
// with every capability, outside PID 1's bounding set and without the
// workloads' seccomp filters, supervisor or Landlock: a root workload that
// named its own program there could write the host's shares unchecked (an
// adversarial review replaced /sbin/modprobe and made the kernel run it
// with socket(2) of an unloaded address family). So, once the modules are
// loaded:
//   - kernel.modprobe is emptied: request_module fails with ENOENT and runs
//     nothing (kernel/module/kmod.c); read back, a boot that cannot empty
//     it fails;
//   - kernel.hotplug (the uevent helper) is emptied where the kernel has it;
//   - kernel.usermodehelper.bset and .inheritable are emptied: a helper that
//     still starts (core_pattern's pipe, request-key) holds no capability;
//   - /proc/sys is bound read-only on itself and /sys is mounted read-only
//     (mountBase), so a workload, which has no CAP_SYS_ADMIN to remount
//     (droppedCaps), cannot name a helper again; and the guest's root is
//     read-only once configured (configure), so /sbin and the tools cannot
//     be replaced.
func closeKernelHelpers() error {
	// A knob the kernel does not have is a helper it cannot start
	// (kernel.modprobe without CONFIG_MODULES, as in the mini kernel).
	write := func(p, v string) error {
		if err := os.WriteFile(p, []byte(v), 0); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("close kernel helpers: %s: %w", p, err)
		}
		return nil
	}
	for _, p := range []string{"/proc/sys/kernel/modprobe", "/proc/sys/kernel/hotplug"} {
		if err := write(p, "\n"); err != nil {
			return err
		}
		if b, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(b)) != "" || err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("close kernel helpers: %s is %q (%v), want empty", p, b, err)
		}
	}
	for _, p := range []string{"/proc/sys/kernel/usermodehelper/bset", "/proc/sys/kernel/usermodehelper/inheritable"} {
		if err := write(p, "0\t0\n"); err != nil {
			return err
		}
	}
	if err := unix.Mount("/proc/sys", "/proc/sys", "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("close kernel helpers: bind /proc/sys: %w", err)
	}
	if err := unix.Mount("", "/proc/sys", "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("close kernel helpers: /proc/sys read-only: %w", err)
	}
	return nil
}

// setRootReadOnly makes the guest's own root (the initramfs: /init, the
// tools, /sbin, /lib's links, the shares' mount points) read-only or
// writable again, as a mount flag: its writable trees (/tmp, /run, /root,
// /var/tmp, /dev/shm) and the shares are mounts of their own.
func setRootReadOnly(ro bool) error {
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_NOSUID | unix.MS_NODEV)
	if ro {
		flags |= unix.MS_RDONLY
	}
	if err := unix.Mount("", "/", "", flags, ""); err != nil {
		return fmt.Errorf("remount the guest's root (read-only %v): %w", ro, err)
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
		// The mount points and links are made in the guest's root,
		// writable for that time only (closeKernelHelpers).
		if err := setRootReadOnly(false); err != nil {
			h.Error = err.Error()
			return h
		}
		un, err := a.mountAllLocked()
		if err == nil {
			err = setRootReadOnly(true)
		}
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
//
// The host's system directories (cfg.System, cfg.Links) come first: the
// links replace the initramfs's own /bin and /lib (its modules are loaded
// by then), and the read-only system mounts cover its /usr and /etc, so
// the host's tools are found first on PATH and busybox in toolsDir last.
// /proc, /sys, /dev, /tmp and /run stay the guest's own (mountBase): the
// host refuses system directories inside the first three, and none of
// the others is a system directory.
func (a *agent) mountAllLocked() (unprotected []string, err error) {
	for _, l := range a.cfg.Links {
		if err := makeLink(l); err != nil {
			return nil, err
		}
	}
	system := append([]wire.Share(nil), a.cfg.System...)
	sort.SliceStable(system, func(i, j int) bool { return len(system[i].Path) < len(system[j].Path) })
	for _, s := range system {
		// cache=loose: the host tree is read-only for the run, so the
		// guest may keep what it read (issue 20: boot and exec speed).
		if err := a.mount9p(s, "cache=loose"); err != nil {
			return nil, err
		}
	}
	shares := append([]wire.Share(nil), a.cfg.Shares...)
	sort.SliceStable(shares, func(i, j int) bool { return len(shares[i].Path) < len(shares[j].Path) })
	for _, s := range shares {
		if err := a.mount9p(s, "cache=none"); err != nil {
			return nil, err
		}
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

// mount9p mounts one 9p export on s.Path, nosuid and nodev (a device
// node the host shows, such as the /dev/null that hides a secret, cannot
// be opened), read-only when s.ReadOnly.
func (a *agent) mount9p(s wire.Share, cache string) error {
	if err := os.MkdirAll(s.Path, 0o755); err != nil {
		return fmt.Errorf("share %s: %w", s.Path, err)
	}
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	if s.ReadOnly {
		flags |= unix.MS_RDONLY
	}
	opts := "trans=virtio,version=9p2000.L,msize=262144," + cache + ",access=any"
	if err := unix.Mount(s.Tag, s.Path, "9p", flags, opts); err != nil {
		return fmt.Errorf("mount 9p %s on %s: %w", s.Tag, s.Path, err)
	}
	a.mounted = append(a.mounted, s.Path)
	return nil
}

// makeLink makes l in the guest's root, replacing what the initramfs has
// at l.Path (a directory such as /lib with the loaded modules). It is
// idempotent, for a configure after a snapshot restore.
func makeLink(l wire.Link) error {
	if t, err := os.Readlink(l.Path); err == nil && t == l.Target {
		return nil
	}
	if err := os.RemoveAll(l.Path); err != nil {
		return fmt.Errorf("link %s: %w", l.Path, err)
	}
	if err := os.MkdirAll(filepath.Dir(l.Path), 0o755); err != nil {
		return fmt.Errorf("link %s: %w", l.Path, err)
	}
	if err := os.Symlink(l.Target, l.Path); err != nil {
		return fmt.Errorf("link %s: %w", l.Path, err)
	}
	return nil
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
