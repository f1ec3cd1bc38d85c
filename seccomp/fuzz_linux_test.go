//go:build amd64 || arm64

package seccomp

import (
	"runtime"
	"sync"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

var (
	fuzzVMsOnce sync.Once
	fuzzVMs     [8]*bpf.VM // indexed by optionBits
)

func optionBits(o Options) int {
	b := 0
	if o.AllowUnixSockets {
		b |= 1
	}
	if o.CheckBinds {
		b |= 4
	}
	if o.AllowNestedUserNamespaces {
		b |= 2
	}
	return b
}

// FuzzFilter runs random seccomp_data through the filter in bpf.VM and
// checks the invariants the sandbox relies on:
//   - socket with AF_UNIX in the low word of args[0] is refused (unless
//     AllowUnixSockets), and AF_VSOCK always, whatever the high word;
//   - io_uring_* is always refused;
//   - a foreign arch (and, on amd64, the x32 range) is never allowed;
//   - with the native arch, the result is exactly expect's: in particular
//     everything outside the deny set is ALLOW.
func FuzzFilter(f *testing.F) {
	native := nativeAudit()
	seed := func(nr uint32, arch uint32, a0, a1 uint64, opts uint8) {
		f.Add(nr, arch, uint64(0), a0, a1, uint64(0), opts)
	}
	seed(unix.SYS_SOCKET, native, unix.AF_UNIX, unix.SOCK_STREAM, 0)
	seed(unix.SYS_SOCKET, native, 1<<32|unix.AF_UNIX, unix.SOCK_STREAM, 0)
	seed(unix.SYS_SOCKET, native, unix.AF_VSOCK, 0, 1)
	seed(unix.SYS_SOCKET, native, unix.AF_INET, 0, 0)
	seed(unix.SYS_SOCKETPAIR, native, unix.AF_UNIX, 0, 0)
	seed(unix.SYS_IOCTL, native, 0, 1<<32|unix.TIOCSTI, 0)
	seed(unix.SYS_IOCTL, native, 0, unix.TIOCLINUX, 3)
	seed(unix.SYS_IO_URING_SETUP, native, 8, 0, 3)
	seed(unix.SYS_IO_URING_ENTER, native, 3, 0, 0)
	seed(unix.SYS_IO_URING_REGISTER, native, 3, 0, 2)
	seed(unix.SYS_CLONE, native, unix.CLONE_NEWUSER, 0, 0)
	seed(unix.SYS_CLONE, native, unix.CLONE_VM|unix.CLONE_THREAD, 0, 0)
	seed(unix.SYS_UNSHARE, native, 1<<32|unix.CLONE_NEWNET, 0, 1)
	seed(unix.SYS_CLONE3, native, 0, 0, 0)
	seed(unix.SYS_MOUNT, native, 0, 0, 2)
	seed(unix.SYS_KEYCTL, native, 0, 0, 3)
	seed(unix.SYS_READ, native, 0, 0, 0)
	seed(0xffffffff, native, 0, 0, 0)
	seed(0x40000000|unix.SYS_SOCKET, native, unix.AF_UNIX, 0, 0)
	seed(102, unix.AUDIT_ARCH_I386, 1, 0, 0)
	seed(unix.SYS_READ, unix.AUDIT_ARCH_ARM, 0, 0, 3)

	fuzzVMsOnce.Do(func() {
		for _, o := range allOptions {
			fuzzVMs[optionBits(o)] = newVM(f, o)
		}
	})

	f.Fuzz(func(t *testing.T, nr, arch uint32, ip, a0, a1, a2 uint64, optBits uint8) {
		opts := Options{AllowUnixSockets: optBits&1 != 0, AllowNestedUserNamespaces: optBits&2 != 0, CheckBinds: optBits&4 != 0}
		if fuzzVMs[optionBits(opts)] == nil {
			opts.CheckBinds = false
		}
		d := seccompData{nr: nr, arch: arch, ip: ip, args: [6]uint64{a0, a1, a2, a2 ^ a0, a2 ^ a1, ^a2}}
		got := runVM(t, fuzzVMs[optionBits(opts)], d)

		if arch != native && got == retAllow {
			t.Fatalf("foreign arch %#x nr %d allowed", arch, nr)
		}
		if arch != native {
			return
		}
		if runtime.GOARCH == "amd64" && nr&0xc0000000 == 0x40000000 && got != retKill {
			t.Fatalf("x32 nr %#x: %s, want KILL_PROCESS", nr, actionName(got))
		}
		switch nr {
		case unix.SYS_SOCKET:
			fam := uint32(a0)
			if (fam == unix.AF_UNIX && !opts.AllowUnixSockets || fam == unix.AF_VSOCK) && got != retEPERM {
				t.Fatalf("socket(%#x) with %+v: %s, want ERRNO(EPERM)", a0, opts, actionName(got))
			}
		case unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER:
			if got != retEPERM {
				t.Fatalf("io_uring nr %d: %s, want ERRNO(EPERM)", nr, actionName(got))
			}
		}
		if want := expect(opts, d); got != want {
			t.Fatalf("nr %d args %#x opts %+v: %s, want %s", nr, d.args[:3], opts, actionName(got), actionName(want))
		}
	})
}
