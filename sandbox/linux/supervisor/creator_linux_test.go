package supervisor

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestDecode: each creation call's arguments land where perform reads
// them; the calls that are not creations are not decoded.
func TestDecode(t *testing.T) {
	a := [6]uint64{10, 11, 12, 13, 14, 15}
	at := int32(unix.AT_FDCWD)
	for _, tc := range []struct {
		name string
		want callArgs
		ok   bool
	}{
		{"open", callArgs{op: "open", dirfd: at, dirfd2: at, p1: 10, flags: 11, mode: 12}, true},
		{"openat", callArgs{op: "open", dirfd: 10, dirfd2: at, p1: 11, flags: 12, mode: 13}, true},
		{"creat", callArgs{op: "open", dirfd: at, dirfd2: at, p1: 10, flags: unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC, mode: 11}, true},
		{"mkdir", callArgs{op: "mkdir", dirfd: at, dirfd2: at, p1: 10, mode: 11}, true},
		{"mkdirat", callArgs{op: "mkdir", dirfd: 10, dirfd2: at, p1: 11, mode: 12}, true},
		{"mknod", callArgs{op: "mknod", dirfd: at, dirfd2: at, p1: 10, mode: 11, flags: 12}, true},
		{"mknodat", callArgs{op: "mknod", dirfd: 10, dirfd2: at, p1: 11, mode: 12, flags: 13}, true},
		{"symlink", callArgs{op: "symlink", dirfd: at, dirfd2: at, p2: 10, p1: 11}, true},
		{"symlinkat", callArgs{op: "symlink", dirfd: 11, dirfd2: at, p2: 10, p1: 12}, true},
		{"link", callArgs{op: "link", dirfd: at, dirfd2: at, p2: 10, p1: 11}, true},
		{"linkat", callArgs{op: "link", dirfd2: 10, p2: 11, dirfd: 12, p1: 13, flags: 14}, true},
		{"rename", callArgs{op: "rename", dirfd: at, dirfd2: at, p2: 10, p1: 11}, true},
		{"renameat", callArgs{op: "rename", dirfd2: 10, p2: 11, dirfd: 12, p1: 13}, true},
		{"renameat2", callArgs{op: "rename", dirfd2: 10, p2: 11, dirfd: 12, p1: 13, flags: 14}, true},
		{"truncate", callArgs{op: "truncate", dirfd: at, dirfd2: at, p1: 10, mode: 11}, true},
		{"umask", callArgs{}, false},
		{"openat2", callArgs{}, false},
		{"unlink", callArgs{}, false},
	} {
		got, ok := decode(tc.name, a)
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("decode(%s) = %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	// A negative dirfd and 32-bit flags, as the kernel passes them.
	got, _ := decode("openat", [6]uint64{uint64(0xffffffff_ffffff9c), 1, 0xdead_0000_0241, 0o644})
	if got.dirfd != unix.AT_FDCWD || got.flags != 0x0241 {
		t.Errorf("openat: dirfd %d, flags %#x", got.dirfd, got.flags)
	}
}
