//go:build linux

// Command attack is run inside the sandbox by the escape suite: each
// subcommand tries one way out and prints one line, "BLOCKED <detail>" or
// "ESCAPED <detail>", and exits 0 either way (non-zero only when the
// attempt could not be made at all). The test asserts BLOCKED and checks
// the host side.
package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: attack NAME [ARG...]")
		os.Exit(2)
	}
	f, ok := attacks[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "attack: unknown %q\n", os.Args[1])
		os.Exit(2)
	}
	escaped, detail := f(os.Args[2:])
	if escaped {
		fmt.Println("ESCAPED", detail)
	} else {
		fmt.Println("BLOCKED", detail)
	}
}

type attack func(args []string) (escaped bool, detail string)

func errno(err error) string {
	if err == nil {
		return "ok"
	}
	if e, ok := err.(syscall.Errno); ok {
		return unix.ErrnoName(e)
	}
	if pe, ok := err.(*os.PathError); ok {
		return errno(pe.Err)
	}
	if se, ok := err.(*os.SyscallError); ok {
		return errno(se.Err)
	}
	return err.Error()
}

var attacks = map[string]attack{
	// Write a host file through PID 1's root or cwd links.
	"proc-root-write": func(a []string) (bool, string) {
		var results []string
		for _, p := range []string{"/proc/self/root", "/proc/1/root", "/proc/1/cwd", "/proc/self/cwd"} {
			target := filepath.Join(p, a[0])
			err := os.WriteFile(target, []byte("pwned"), 0o644)
			if err == nil {
				return true, target
			}
			results = append(results, p+":"+errno(err))
		}
		return false, strings.Join(results, " ")
	},
	// Read or write another process's memory, or trace it.
	"ptrace-pid1": func([]string) (bool, string) {
		f, err := os.OpenFile("/proc/1/mem", os.O_RDWR, 0)
		if err == nil {
			f.Close()
			return true, "/proc/1/mem opened"
		}
		memErr := errno(err)
		if _, err := os.ReadFile("/proc/1/environ"); err == nil {
			return true, "/proc/1/environ read"
		}
		_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_ATTACH, 1, 0, 0, 0, 0)
		if e == 0 {
			return true, "PTRACE_ATTACH pid 1"
		}
		return false, "mem:" + memErr + " attach:" + unix.ErrnoName(e)
	},
	// Join PID 1's namespaces (bwrap's, or the host's if visible).
	"setns": func([]string) (bool, string) {
		var res []string
		for _, ns := range []string{"mnt", "net", "user", "pid"} {
			fd, err := unix.Open("/proc/1/ns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				res = append(res, ns+":open:"+errno(err))
				continue
			}
			err = unix.Setns(fd, 0)
			unix.Close(fd)
			if err == nil {
				return true, "setns " + ns
			}
			res = append(res, ns+":"+errno(err))
		}
		return false, strings.Join(res, " ")
	},
	// socket(AF_UNIX) with the family's high bits set (a 64-bit compare
	// in the filter would let it through).
	"unix-socket-highbits": func([]string) (bool, string) {
		for _, fam := range []uintptr{unix.AF_UNIX, 0x1_0000_0001, 0xffffffff_00000001} {
			fd, _, e := unix.RawSyscall(unix.SYS_SOCKET, fam, unix.SOCK_STREAM, 0)
			if e == 0 {
				unix.Close(int(fd))
				return true, fmt.Sprintf("socket(%#x) ok", fam)
			}
		}
		return false, "EPERM for all"
	},
	// Connect to a host unix socket that lies in a readable path.
	"host-unix-socket": func(a []string) (bool, string) {
		c, err := net.Dial("unix", a[0])
		if err == nil {
			c.Close()
			return true, "connected"
		}
		return false, errno(err)
	},
	// Connect to an abstract unix socket the host listens on.
	"abstract-unix": func(a []string) (bool, string) {
		c, err := net.Dial("unix", "@"+a[0])
		if err == nil {
			c.Close()
			return true, "connected"
		}
		return false, errno(err)
	},
	"io-uring": func([]string) (bool, string) {
		params := make([]byte, 120)
		_, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 4, uintptr(unsafe.Pointer(&params[0])), 0)
		if e == 0 {
			return true, "io_uring_setup ok"
		}
		return false, unix.ErrnoName(e)
	},
	// Push a keystroke into the terminal on each standard descriptor.
	"tiocsti": func([]string) (bool, string) {
		var res []string
		c := byte('#')
		for fd := 0; fd <= 2; fd++ {
			for _, req := range []uintptr{unix.TIOCSTI, unix.TIOCSTI | 1<<32, unix.TIOCLINUX} {
				_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(unsafe.Pointer(&c)))
				if e == 0 && req != unix.TIOCLINUX {
					return true, fmt.Sprintf("fd %d req %#x", fd, req)
				}
				res = append(res, unix.ErrnoName(e))
			}
		}
		return false, strings.Join(res, ",")
	},
	"raw-socket": func([]string) (bool, string) {
		var res []string
		for _, s := range [][3]int{{unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP}, {unix.AF_PACKET, unix.SOCK_RAW, 0}, {unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP}} {
			fd, err := unix.Socket(s[0], s[1], s[2])
			if err == nil {
				// A ping socket may be allowed; it must still reach nothing.
				sa := &unix.SockaddrInet4{Addr: [4]byte{8, 8, 8, 8}}
				err = unix.Sendto(fd, []byte{8, 0, 0, 0, 0, 0, 0, 0}, 0, sa)
				unix.Close(fd)
				if err == nil {
					return true, fmt.Sprintf("socket %v sent", s)
				}
			}
			res = append(res, errno(err))
		}
		return false, strings.Join(res, " ")
	},
	// UDP to a resolver, TCP to a public and a host-loopback address,
	// IPv6: a client that ignores the proxy reaches nothing.
	"direct-network": func(a []string) (bool, string) {
		var res []string
		for _, addr := range a {
			network, target, _ := strings.Cut(addr, ":")
			c, err := net.DialTimeout(network, target, 1e9)
			if err == nil {
				if network == "udp" {
					c.Write([]byte("x"))
					c.SetReadDeadline(timeNowPlus())
					_, err = c.Read(make([]byte, 1))
				}
				c.Close()
				if err == nil {
					return true, addr
				}
			}
			res = append(res, addr+":"+errno(unwrapNet(err)))
		}
		return false, strings.Join(res, " ")
	},
	"mknod": func(a []string) (bool, string) {
		err := unix.Mknod(a[0], unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3)))
		if err == nil {
			return true, "mknod ok"
		}
		return false, errno(err)
	},
	"chroot": func([]string) (bool, string) {
		if err := unix.Chroot("/tmp"); err == nil {
			return true, "chroot ok"
		} else {
			return false, errno(err)
		}
	},
	"sys-write": func([]string) (bool, string) {
		var res []string
		for _, p := range []string{"/sys/kernel/mm/transparent_hugepage/enabled", "/sys/fs/cgroup/cgroup.procs", "/proc/sys/kernel/core_pattern", "/proc/sysrq-trigger"} {
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err == nil {
				f.Close()
				return true, p
			}
			res = append(res, filepath.Base(p)+":"+errno(err))
		}
		return false, strings.Join(res, " ")
	},
	"keyring": func([]string) (bool, string) {
		_, _, e := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, uintptr(0xfffffffd), 0)
		if e == 0 {
			return true, "keyctl ok"
		}
		return false, unix.ErrnoName(e)
	},
	"unshare-userns": func([]string) (bool, string) {
		var res []string
		for _, fl := range []int{unix.CLONE_NEWUSER, unix.CLONE_NEWNS, unix.CLONE_NEWNET} {
			if err := unix.Unshare(fl); err == nil {
				return true, fmt.Sprintf("unshare %#x", fl)
			} else {
				res = append(res, errno(err))
			}
		}
		return false, strings.Join(res, " ")
	},
	"mount": func([]string) (bool, string) {
		err := unix.Mount("none", "/tmp", "tmpfs", 0, "")
		if err == nil {
			return true, "mount ok"
		}
		err2 := unix.Unmount("/", unix.MNT_DETACH)
		if err2 == nil {
			return true, "umount / ok"
		}
		return false, errno(err) + " " + errno(err2)
	},
	"bpf-perf-userfaultfd": func([]string) (bool, string) {
		var res []string
		for _, nr := range []uintptr{unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD} {
			r, _, e := unix.Syscall6(nr, 0, 0, 0, 0, 0, 0)
			if e == 0 {
				unix.Close(int(r))
				return true, fmt.Sprintf("syscall %d ok", nr)
			}
			res = append(res, unix.ErrnoName(e))
		}
		return false, strings.Join(res, " ")
	},
	// A setuid-root binary must not gain anything (no_new_privs).
	"setuid": func(a []string) (bool, string) {
		return false, "checked by the test through " + strings.Join(a, " ")
	},
	// Signal a process outside the sandbox by its host PID.
	"signal-host": func(a []string) (bool, string) {
		pid, _ := strconv.Atoi(a[0])
		if err := unix.Kill(pid, 0); err == nil {
			return true, "kill(0) ok"
		} else {
			return false, errno(err)
		}
	},
	// Processes visible in the sandbox's /proc.
	"proc-list": func([]string) (bool, string) {
		ents, _ := os.ReadDir("/proc")
		var pids []string
		for _, e := range ents {
			if _, err := strconv.Atoi(e.Name()); err == nil {
				b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
				pids = append(pids, e.Name()+"="+strings.ReplaceAll(string(b), "\x00", " "))
			}
		}
		return false, strings.Join(pids, "|")
	},
	// The 32-bit syscall entry (int 0x80) must kill the process; the test
	// checks the exit status, so reaching the print is an escape.
	"x32-syscall": func([]string) (bool, string) {
		_, _, e := unix.Syscall(unix.SYS_GETPID|0x40000000, 0, 0, 0)
		return true, "x32 getpid returned " + unix.ErrnoName(e)
	},
	"clone3": func([]string) (bool, string) {
		_, _, e := unix.Syscall(unix.SYS_CLONE3, 0, 0, 0)
		if e == unix.ENOSYS {
			return false, "ENOSYS"
		}
		return true, unix.ErrnoName(e)
	},
}

func unwrapNet(err error) error {
	for {
		switch e := err.(type) {
		case *net.OpError:
			err = e.Err
		case *os.SyscallError:
			return e.Err
		default:
			return err
		}
	}
}
