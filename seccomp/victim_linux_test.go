//go:build amd64 || arm64

package seccomp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// probe is one system call the victim makes. deny and allow are the
// results wanted under Build(Options{}) and under Build with every option
// true: an errno name, "OK", or a probe-specific value. Empty means "what
// the kernel returns without the filter", i.e. the baseline run's result;
// that is used where the kernel's answer depends on the machine and the
// point is only that the call reached it.
type probe struct {
	name        string
	run         func(*victimState) string
	deny, allow string
}

// victimState holds what probes share.
type victimState struct {
	pty int // a master pty from /dev/ptmx; -1 if it could not be opened
}

const (
	nsUTS = unix.CLONE_NEWUTS
	hi    = uintptr(1) << 32 // a high-word bit the kernel throws away
	bad   = ^uintptr(0)      // fd -1
	// badPtr is an unmapped user address: a call that gets past the filter
	// fails with EFAULT instead of acting on a real path or buffer.
	badPtr = uintptr(1)
)

func errnoResult(r1 uintptr, e unix.Errno) string {
	if e != 0 {
		return unix.ErrnoName(e)
	}
	return "OK"
}

// sys makes a raw system call and reports its errno name or "OK".
func sys(nr uintptr, a ...uintptr) string {
	var args [6]uintptr
	copy(args[:], a)
	r1, _, e := unix.RawSyscall6(nr, args[0], args[1], args[2], args[3], args[4], args[5])
	return errnoResult(r1, e)
}

// sysClose is sys for calls that return a file descriptor on success.
func sysClose(nr uintptr, a ...uintptr) string {
	var args [6]uintptr
	copy(args[:], a)
	r1, _, e := unix.RawSyscall6(nr, args[0], args[1], args[2], args[3], args[4], args[5])
	if e == 0 {
		unix.Close(int(r1))
	}
	return errnoResult(r1, e)
}

// cloneProbe calls clone(flags) without CLONE_VM: if it gets through,
// the child, a copy of this process with one thread, exits at once, and
// the parent reaps it.
//
//go:norace
//go:nosplit
func cloneProbe(flags uintptr) (uintptr, unix.Errno) {
	r1, _, e := syscall.RawSyscall6(unix.SYS_CLONE, flags, 0, 0, 0, 0, 0)
	if e == 0 && r1 == 0 {
		syscall.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
	}
	return r1, unix.Errno(e)
}

func cloneResult(flags uintptr) string {
	pid, e := cloneProbe(flags)
	if e == 0 {
		var ws unix.WaitStatus
		unix.Wait4(int(pid), &ws, 0, nil)
	}
	return errnoResult(pid, e)
}

var probes = []probe{
	{name: "socket-af-unix", deny: "EPERM", allow: "OK",
		run: func(*victimState) string {
			return sysClose(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		}},
	{name: "socket-af-unix-high-bits", deny: "EPERM", allow: "OK",
		run: func(*victimState) string {
			return sysClose(unix.SYS_SOCKET, hi|unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		}},
	{name: "socket-af-vsock", deny: "EPERM", allow: "EPERM",
		run: func(*victimState) string {
			return sysClose(unix.SYS_SOCKET, unix.AF_VSOCK, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		}},
	{name: "socket-af-inet", deny: "OK", allow: "OK",
		run: func(*victimState) string {
			return sysClose(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		}},
	{name: "socket-af-netlink", deny: "OK", allow: "OK",
		run: func(*victimState) string {
			return sysClose(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
		}},
	{name: "socketpair-af-unix", deny: "OK", allow: "OK",
		run: func(*victimState) string {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return unix.ErrnoName(err.(unix.Errno))
			}
			unix.Close(fds[0])
			unix.Close(fds[1])
			return "OK"
		}},

	{name: "io-uring-setup", deny: "EPERM", allow: "EPERM",
		run: func(*victimState) string { return sysClose(unix.SYS_IO_URING_SETUP, 1, badPtr) }},
	{name: "io-uring-enter", deny: "EPERM", allow: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_IO_URING_ENTER, bad, 0, 0, 0, 0, 0) }},
	{name: "io-uring-register", deny: "EPERM", allow: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_IO_URING_REGISTER, bad, 0, 0, 0) }},

	// The TIOCSTI argument is a bad pointer: if the filter let it through,
	// the kernel would fail with EFAULT (or EIO with legacy_tiocsti=0)
	// rather than inject a byte.
	{name: "ioctl-tiocsti", deny: "EPERM", allow: "EPERM",
		run: func(v *victimState) string { return sys(unix.SYS_IOCTL, uintptr(v.pty), unix.TIOCSTI, badPtr) }},
	{name: "ioctl-tiocsti-high-bits", deny: "EPERM", allow: "EPERM",
		run: func(v *victimState) string { return sys(unix.SYS_IOCTL, uintptr(v.pty), hi|unix.TIOCSTI, badPtr) }},
	{name: "ioctl-tioclinux", deny: "EPERM", allow: "EPERM",
		run: func(v *victimState) string { return sys(unix.SYS_IOCTL, uintptr(v.pty), unix.TIOCLINUX, badPtr) }},
	{name: "ioctl-tcgets", deny: "OK", allow: "OK",
		run: func(v *victimState) string {
			_, err := unix.IoctlGetTermios(v.pty, unix.TCGETS)
			if err != nil {
				return unix.ErrnoName(err.(unix.Errno))
			}
			return "OK"
		}},

	{name: "unshare-newuser", deny: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_UNSHARE, unix.CLONE_NEWUSER) }},
	{name: "unshare-newuts", deny: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_UNSHARE, nsUTS) }},
	{name: "unshare-newuts-high-bits", deny: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_UNSHARE, hi|nsUTS) }},
	{name: "unshare-nothing", deny: "OK", allow: "OK",
		run: func(*victimState) string { return sys(unix.SYS_UNSHARE, 0) }},
	{name: "clone-newuts", deny: "EPERM",
		run: func(*victimState) string { return cloneResult(nsUTS | uintptr(unix.SIGCHLD)) }},
	{name: "clone-newnet-high-bits", deny: "EPERM",
		run: func(*victimState) string { return cloneResult(hi | unix.CLONE_NEWNET | uintptr(unix.SIGCHLD)) }},
	{name: "clone3", deny: "ENOSYS",
		run: func(*victimState) string { return sys(unix.SYS_CLONE3, 0, 0) }},
	{name: "fork-exec", deny: "OK", allow: "OK", // clone without namespace flags, then execve
		run: func(*victimState) string {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), victimEnv+"="+modeTrue)
			if err := cmd.Run(); err != nil {
				return err.Error()
			}
			return "OK"
		}},
	{name: "setns", deny: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_SETNS, bad, 0) }},
	{name: "mount", deny: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_MOUNT, badPtr, badPtr, badPtr, 0, 0) }},
	{name: "umount2", deny: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_UMOUNT2, badPtr, 0) }},
	{name: "pivot-root", deny: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_PIVOT_ROOT, badPtr, badPtr) }},
	{name: "chroot", deny: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_CHROOT, badPtr) }},
	{name: "open-tree", deny: "EPERM",
		run: func(*victimState) string { return sysClose(unix.SYS_OPEN_TREE, bad, badPtr, 0) }},
	{name: "open-tree-attr", deny: "EPERM",
		run: func(*victimState) string { return sysClose(unix.SYS_OPEN_TREE_ATTR, bad, badPtr, 0, 0, 0) }},
	{name: "move-mount", deny: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_MOVE_MOUNT, bad, badPtr, bad, badPtr, 0) }},
	{name: "fsopen", deny: "EPERM",
		run: func(*victimState) string { return sysClose(unix.SYS_FSOPEN, badPtr, 0) }},
	{name: "fsconfig", deny: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_FSCONFIG, bad, 0, 0, 0, 0) }},
	{name: "fsmount", deny: "EPERM",
		run: func(*victimState) string { return sysClose(unix.SYS_FSMOUNT, bad, 0, 0) }},
	{name: "fspick", deny: "EPERM",
		run: func(*victimState) string { return sysClose(unix.SYS_FSPICK, bad, badPtr, 0) }},
	{name: "mount-setattr", deny: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_MOUNT_SETATTR, bad, badPtr, 0, badPtr, 32) }},

	// Always refused. Arguments are invalid so that, should a call get
	// past the filter in a broken build, the kernel refuses it harmlessly.
	{name: "keyctl", deny: "EPERM", allow: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_KEYCTL, 0xffff, 0, 0) }},
	{name: "add-key", deny: "EPERM", allow: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_ADD_KEY, badPtr, badPtr, badPtr, 0, 0) }},
	{name: "request-key", deny: "EPERM", allow: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_REQUEST_KEY, badPtr, badPtr, badPtr, 0) }},
	{name: "userfaultfd", deny: "EPERM", allow: "EPERM",
		run: func(*victimState) string { return sysClose(unix.SYS_USERFAULTFD, 0xffffffff) }},
	{name: "bpf", deny: "EPERM", allow: "EPERM",
		run: func(*victimState) string { return sysClose(unix.SYS_BPF, 0xffff, badPtr, 0) }},
	{name: "perf-event-open", deny: "EPERM", allow: "EPERM",
		run: func(*victimState) string { return sysClose(unix.SYS_PERF_EVENT_OPEN, badPtr, 0, bad, bad, 0) }},
	{name: "kexec-load", deny: "EPERM", allow: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_KEXEC_LOAD, 0, 1<<20, badPtr, 0xdead0000) }},
	{name: "kexec-file-load", deny: "EPERM", allow: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_KEXEC_FILE_LOAD, bad, bad, 0, badPtr, 0xffffffff) }},
	{name: "init-module", deny: "EPERM", allow: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_INIT_MODULE, badPtr, 0, badPtr) }},
	{name: "finit-module", deny: "EPERM", allow: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_FINIT_MODULE, bad, badPtr, 0) }},
	{name: "delete-module", deny: "EPERM", allow: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_DELETE_MODULE, badPtr, 0) }},
	{name: "open-by-handle-at", deny: "EPERM", allow: "EPERM",
		run: func(*victimState) string { return sysClose(unix.SYS_OPEN_BY_HANDLE_AT, bad, badPtr, 0) }},
	{name: "acct", deny: "EPERM", allow: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_ACCT, badPtr) }},
	{name: "swapon", deny: "EPERM", allow: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_SWAPON, badPtr, 0) }},
	{name: "swapoff", deny: "EPERM", allow: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_SWAPOFF, badPtr) }},
	{name: "reboot", deny: "EPERM", allow: "EPERM", // bad magic: EINVAL if it got through
		run: func(*victimState) string { return sys(unix.SYS_REBOOT, 0, 0, 0, 0) }},
	{name: "syslog", deny: "EPERM", allow: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_SYSLOG, 0xffff, 0, 0) }},
	{name: "quotactl", deny: "EPERM", allow: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_QUOTACTL, 0xffffffff, badPtr, 0, badPtr) }},
	{name: "quotactl-fd", deny: "EPERM", allow: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_QUOTACTL_FD, bad, 0xffffffff, 0, badPtr) }},
	{name: "lookup-dcookie", deny: "EPERM", allow: "EPERM",
		run: func(*victimState) string { return sys(unix.SYS_LOOKUP_DCOOKIE, 0, badPtr, 0) }},

	// Allowed on purpose: these must reach the kernel.
	{name: "ptrace-attach-no-such-pid",
		run: func(*victimState) string { return sys(unix.SYS_PTRACE, unix.PTRACE_ATTACH, 0x3fffffff) }},
	{name: "vmsplice",
		run: func(*victimState) string { return sys(unix.SYS_VMSPLICE, bad, badPtr, 0, 0) }},
	{name: "name-to-handle-at",
		run: func(*victimState) string { return sys(unix.SYS_NAME_TO_HANDLE_AT, bad, badPtr, badPtr, badPtr, 0) }},
	{name: "nr-minus-one", deny: "ENOSYS", allow: "ENOSYS",
		run: func(*victimState) string { return sys(^uintptr(0)) }},
	{name: "write-dev-null", deny: "OK", allow: "OK",
		run: func(*victimState) string {
			f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				return err.Error()
			}
			defer f.Close()
			if _, err := f.Write([]byte("x")); err != nil {
				return err.Error()
			}
			return "OK"
		}},

	// State after Install.
	{name: "no-new-privs", deny: "1", allow: "1",
		run: func(*victimState) string {
			v, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
			if err != nil {
				return err.Error()
			}
			return fmt.Sprint(v)
		}},
	{name: "all-threads-filtered", deny: "Seccomp=2 on every thread", allow: "Seccomp=2 on every thread",
		run: func(*victimState) string { return threadsSeccomp() }},
}

// threadsSeccomp reports the seccomp mode of every thread of the process
// from /proc/self/task/*/status: "Seccomp=2 on every thread" when TSYNC
// reached them all.
func threadsSeccomp() string {
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	if err != nil || len(tasks) == 0 {
		return fmt.Sprintf("no tasks: %v", err)
	}
	modes := map[string]int{}
	for _, p := range tasks {
		f, err := os.Open(p)
		if err != nil {
			return err.Error()
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "Seccomp:"); ok {
				modes[strings.TrimSpace(v)]++
			}
		}
		f.Close()
	}
	if len(modes) == 1 && modes["2"] > 0 {
		return "Seccomp=2 on every thread"
	}
	return fmt.Sprintf("Seccomp modes over %d threads: %v", len(tasks), modes)
}

// victim runs in the re-executed child and returns its exit code.
func victim(mode string) int {
	if mode == modeTrue {
		fmt.Println("{}")
		return 0
	}
	// A KILL_PROCESS may dump core; keep it out of the package directory.
	unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})

	filtered := strings.HasSuffix(mode, "+filter")
	base := strings.TrimSuffix(mode, "+filter")
	switch base {
	case modeDeny:
		filtered = true
	case modeAllow:
		filtered = true
	}
	if filtered {
		opts := Options{}
		if base == modeAllow {
			opts = Options{AllowUnixSockets: true, AllowNestedUserNamespaces: true}
		}
		prog, err := Build(opts)
		if err == nil {
			err = Install(prog)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "victim:", err)
			return 3
		}
	}

	out := map[string]string{}
	switch base {
	case modeInt80:
		if int80Syscall == nil {
			fmt.Fprintln(os.Stderr, "victim: int $0x80 needs amd64")
			return 4
		}
		const i386Getpid = 20
		out["int80-getpid"] = fmt.Sprint(int32(int80Syscall(i386Getpid, 0, 0, 0)))
		out["getpid"] = fmt.Sprint(os.Getpid())
	case modeX32:
		r1, _, e := unix.RawSyscall(x32SyscallBit|unix.SYS_GETPID, 0, 0, 0)
		out["x32-getpid"] = errnoResult(r1, e)
	case modeBaseline, modeDeny, modeAllow, modeProbe:
		v := &victimState{pty: -1}
		if fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0); err == nil {
			v.pty = fd
		} else {
			out["open-ptmx"] = err.Error()
		}
		for _, p := range probes {
			out[p.name] = p.run(v)
		}
	default:
		fmt.Fprintln(os.Stderr, "victim: unknown mode", mode)
		return 2
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		return 5
	}
	return 0
}
