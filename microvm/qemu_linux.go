package microvm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/srt-go/srt/internal/pdeathsig"
	"github.com/srt-go/srt/seccomp"
	"golang.org/x/sys/unix"
)

// qemuSandbox is QEMU's own seccomp filter (qemu(1), -sandbox): no
// obsolete syscalls, no setuid/setgid, no fork/exec, no
// sched_setaffinity and friends. It was tested with 9p and virtio-serial
// (recipe §4).
const qemuSandbox = "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny"

// accelVerdict is the cached choice of accelerator.
type accelVerdict struct {
	Accel  string `json:"accel"`  // "kvm" or "tcg"
	Reason string `json:"reason"` // why KVM was not used; "" when it is
	Key    string `json:"key"`    // host kernel release + QEMU binary
}

var (
	accelMu    sync.Mutex
	accelCache = map[string]accelVerdict{}
)

// chooseAccel picks the accelerator for want ("auto", "kvm", "tcg"). For
// "auto" it uses KVM only when /dev/kvm opens read-write, the CPU shows
// vmx or svm, and the host's KVM is not the nested PVM flavour (kvm_pvm),
// which accepts KVM_CREATE_VM but cannot run an unmodified guest kernel
// (recipe §0, pitfall 1); and then a test boot must succeed (tryKVM).
// The verdict is cached in memory and in cacheDir/accel.json, keyed by
// host kernel and QEMU path, so the test boot happens once per host.
func chooseAccel(ctx context.Context, want, qemu, cacheDir string, tryKVM func(context.Context) error) accelVerdict {
	switch want {
	case "kvm":
		return accelVerdict{Accel: "kvm"}
	case "tcg":
		return accelVerdict{Accel: "tcg", Reason: "TCG requested"}
	}
	var uts unix.Utsname
	unix.Uname(&uts)
	key := unix.ByteSliceToString(uts.Release[:]) + " " + qemu
	accelMu.Lock()
	defer accelMu.Unlock()
	if v, ok := accelCache[key]; ok {
		return v
	}
	file := filepath.Join(cacheDir, "accel.json")
	var v accelVerdict
	if b, err := os.ReadFile(file); err == nil && json.Unmarshal(b, &v) == nil && v.Key == key {
		accelCache[key] = v
		return v
	}
	v = accelVerdict{Accel: "tcg", Key: key}
	if f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0); err != nil {
		v.Reason = "KVM unusable: " + err.Error()
	} else {
		f.Close()
		cpu, _ := os.ReadFile("/proc/cpuinfo")
		switch {
		case !bytes.Contains(cpu, []byte(" vmx")) && !bytes.Contains(cpu, []byte(" svm")):
			v.Reason = "KVM unusable: the CPU has no vmx/svm flag (nested KVM without hardware virtualisation)"
		case exists("/sys/module/kvm_pvm"):
			v.Reason = "KVM unusable: the host KVM is nested PVM (kvm_pvm), which cannot run an unmodified guest kernel"
		default:
			if err := tryKVM(ctx); err != nil {
				v.Reason = "KVM test boot failed: " + err.Error()
			} else {
				v.Accel = "kvm"
			}
		}
	}
	accelCache[key] = v
	if b, err := json.Marshal(v); err == nil {
		os.WriteFile(file, b, 0o644)
	}
	return v
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// hostKHz is the host TSC frequency the guest is told
// (tsc_early_khz=): under TCG the guest TSC is the host's, and without
// it 10-20% of boots hang calibrating against the PIT (recipe pitfall 3).
func hostKHz() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "cpu MHz" {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return int(f * 1000)
			}
		}
	}
	return 0
}

// qemuArgs is QEMU's command line for one VM: the microvm machine, no
// default devices, no NIC, QEMU's seccomp sandbox, the kernel and
// initramfs, a serial console, the control port and QMP as sockets QEMU
// connects to (the host listens first, so nothing is lost, recipe §4),
// and one virtio-9p device per share. incoming adds "-incoming defer"
// for a snapshot restore.
func qemuArgs(v *VM, run string, incoming bool) []string {
	c := &v.cfg
	a := []string{
		"-M", "microvm", "-accel", v.accel.Accel,
		"-m", strconv.Itoa(c.MemoryMiB), "-smp", strconv.Itoa(c.CPUs),
		"-nodefaults", "-no-user-config", "-nic", "none", "-display", "none", "-no-reboot",
		"-sandbox", qemuSandbox,
		"-kernel", v.assets.Kernel, "-initrd", v.initrd,
		"-chardev", "socket,id=con,path=" + filepath.Join(run, "con.sock"),
		"-serial", "chardev:con",
		"-device", "virtio-serial-device",
		"-chardev", "socket,id=ctl,path=" + filepath.Join(run, "ctl.sock"),
		"-device", "virtserialport,chardev=ctl,name=srt.ctl",
		"-chardev", "socket,id=qmp,path=" + filepath.Join(run, "qmp.sock"),
		"-mon", "chardev=qmp,mode=control",
	}
	appendArgs := "console=ttyS0 quiet panic=-1 reboot=t " + InitEnvArg
	if v.accel.Accel == "kvm" {
		a = append(a, "-cpu", "host")
	} else {
		a = append(a, "-cpu", "max")
		if khz := hostKHz(); khz > 0 {
			appendArgs += " tsc_early_khz=" + strconv.Itoa(khz) + " tsc=reliable"
		}
	}
	a = append(a, "-append", appendArgs)
	for i, s := range v.sysShares {
		// multidevs=remap: a hidden path is a mount of its own inside the
		// export, and its inode numbers could collide with the export's.
		fs := fmt.Sprintf("local,id=sys%d,path=%s,security_model=none,readonly=on,multidevs=remap", i, s.path)
		a = append(a, "-fsdev", fs, "-device", fmt.Sprintf("virtio-9p-device,fsdev=sys%d,mount_tag=y%d", i, i))
	}
	for i, s := range c.Shares {
		fs := fmt.Sprintf("local,id=fs%d,path=%s,security_model=none", i, s.HostPath)
		if s.ReadOnly {
			fs += ",readonly=on"
		}
		if v.hiddenUnder(s.HostPath) {
			fs += ",multidevs=remap"
		}
		a = append(a, "-fsdev", fs, "-device", fmt.Sprintf("virtio-9p-device,fsdev=fs%d,mount_tag=s%d", i, i))
	}
	if incoming {
		a = append(a, "-incoming", "defer")
	}
	return a
}

// InitEnvArg is on the guest kernel command line; see guest.InitEnv.
const InitEnvArg = "SRT_MICROVM=1"

// confine wraps QEMU's argv in bubblewrap so QEMU sees only the system
// files it needs read-only (/usr and the loader cache), the kernel, the
// initramfs, the run directory and the shares; read-only shares and
// protected paths are read-only binds, so the host enforces them even if
// the guest kernel is subverted. QEMU runs in new user, PID, network,
// IPC and UTS namespaces with every capability dropped: started by root,
// it keeps uid 0 for file ownership in the shares (9p with
// security_model=none creates files as QEMU's uid) but holds no
// capability on the host, so it can touch only files root owns and
// cannot override their modes. As the owner of its files it could still
// give them set-id bits or others' write permission, as a subverted guest
// asks through 9p (a set-user-ID root binary in a share would outlive the
// VM): QEMU runs under the native sandboxes' deny-only mode filter
// (seccomp.BuildSetID, loaded by bwrap from descriptor modeFD;
// qemuModeFilter), which also answers setxattr EOPNOTSUPP (no file
// capability or ACL on a host file). Order follows bwrap(1): later binds
// narrow earlier ones, so protected paths come after the shares.
func confine(bwrap string, v *VM, run string, argv []string, modeFD int) []string {
	b := []string{bwrap, "--die-with-parent", "--new-session", "--unshare-all", "--seccomp", strconv.Itoa(modeFD),
		"--unshare-user", "--uid", strconv.Itoa(os.Geteuid()), "--gid", strconv.Itoa(os.Getegid()),
		"--cap-drop", "ALL", "--clearenv", "--setenv", "PATH", "/usr/bin:/bin",
		"--ro-bind", "/usr", "/usr", "--dev", "/dev", "--tmpfs", "/tmp",
		// QEMU's 9p server needs /proc/self/fd. The kernel's global knobs
		// are read-only, as in the native backend: QEMU keeps uid 0 when
		// started by root, and sysctls such as kernel.core_pattern or
		// /proc/sysrq-trigger check the uid, not a capability.
		"--proc", "/proc",
		"--ro-bind-try", "/proc/sys", "/proc/sys",
		"--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
		"--ro-bind-try", "/proc/fs", "/proc/fs"}
	bound := map[string]bool{"/usr": true}
	for _, l := range []string{"/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"} {
		bound[l] = true
		if t, err := os.Readlink(l); err == nil {
			b = append(b, "--symlink", t, l)
		} else if exists(l) {
			b = append(b, "--ro-bind", l, l)
		}
	}
	for _, f := range []string{"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d"} {
		if exists(f) {
			b = append(b, "--ro-bind", f, f)
		}
	}
	if v.accel.Accel == "kvm" {
		b = append(b, "--dev-bind", "/dev/kvm", "/dev/kvm")
	}
	b = append(b, "--ro-bind", v.assets.Kernel, v.assets.Kernel, "--ro-bind", v.initrd, v.initrd,
		"--bind", run, run)
	// The System directories (read-only, QEMU's own above) before the
	// shares, and the hidden paths after everything that may show them.
	b = append(b, v.systemBindArgs(func(p string) bool { return bound[p] })...)
	for _, s := range v.cfg.Shares {
		if s.ReadOnly {
			b = append(b, "--ro-bind", s.HostPath, s.HostPath)
		} else {
			b = append(b, "--bind", s.HostPath, s.HostPath)
		}
	}
	b = append(b, v.pinArgs()...)
	for _, p := range v.protectedHost {
		b = append(b, "--ro-bind", p, p)
	}
	b = append(b, v.hideArgs()...)
	return append(append(b, "--"), argv...)
}

// qemuModeFilter returns a descriptor holding the program bwrap loads for
// QEMU (confine's modeFD): seccomp.BuildSetID's deny-only mode rules,
// encoded as bwrap --seccomp reads them. The caller closes it once QEMU
// has started.
func qemuModeFilter() (*os.File, error) {
	prog, err := seccomp.BuildSetID(seccomp.Options{})
	if err != nil {
		return nil, fmt.Errorf("QEMU's mode filter: %w", err)
	}
	fd, err := unix.MemfdCreate("srt-qemu-modes", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("QEMU's mode filter: %w", err)
	}
	f := os.NewFile(uintptr(fd), "srt-qemu-modes")
	if _, err := f.Write(seccomp.Encode(prog)); err != nil {
		f.Close()
		return nil, fmt.Errorf("QEMU's mode filter: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("QEMU's mode filter: %w", err)
	}
	return f, nil
}

// startLocked starts cmd with Pdeathsig through pdeathsig.Start, from an
// OS thread that outlives it: with it QEMU (through bwrap's
// --die-with-parent) is killed when this process dies, even by SIGKILL,
// and only then.
func startLocked(cmd *exec.Cmd) (wait <-chan error, err error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := pdeathsig.StartCmd(cmd); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return done, nil
}

// runBase is the parent of every run directory.
func runBase() string {
	if d := os.Getenv("SRT_MICROVM_RUNDIR"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "srt-microvm-"+strconv.Itoa(os.Getuid()))
}

// newRunDir makes a 0700 run directory named after this process, so that
// sweepRunDirs can remove those of a process that died by SIGKILL in
// the second between creating one and removing it (the directory is
// removed as soon as QEMU has connected its sockets).
func newRunDir() (string, error) {
	// One base per user, 0700 and owned by the caller: a base another user
	// made first (in /tmp anyone can) would hold our QEMU control sockets.
	base := runBase()
	if err := os.Mkdir(base, 0o700); err != nil && !os.IsExist(err) {
		return "", err
	}
	var st unix.Stat_t
	if err := unix.Lstat(base, &st); err != nil {
		return "", err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Getuid() || st.Mode&0o022 != 0 {
		return "", fmt.Errorf("run directory base %s is not a directory owned by uid %d that only it can write; remove it", base, os.Getuid())
	}
	sweepRunDirs(base)
	return os.MkdirTemp(base, "run-"+strconv.Itoa(os.Getpid())+"-")
}

func sweepRunDirs(base string) {
	ents, _ := os.ReadDir(base)
	for _, e := range ents {
		parts := strings.Split(e.Name(), "-")
		if len(parts) != 3 || parts[0] != "run" {
			continue
		}
		pid, err := strconv.Atoi(parts[1])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
			os.RemoveAll(filepath.Join(base, e.Name()))
		}
	}
}
