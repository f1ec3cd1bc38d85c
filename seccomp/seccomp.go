// Package seccomp builds and installs the seccomp-BPF filter that the
// in-sandbox helper applies to the user's command right before execve.
//
// The filter is a deny list: every system call is allowed except the
// ones listed in the package's rule table (see filter_linux.go), which
// return an errno or kill the process. It is hand-assembled with
// golang.org/x/net/bpf rather than built with libseccomp or
// elastic/go-seccomp-bpf, because both compare system-call arguments on
// all 64 bits by default, and the kernel truncates the arguments we care
// about (socket's family, ioctl's request) to 32 bits: a 64-bit compare
// is bypassed with 0x1_00000001 (docs: shared/reference/go-deps.md §1,
// libseccomp issue #383, CVE-2019-10063).
//
// Order: the helper installs the filter last, after everything that needs
// a refused call (the unix→TCP proxy bridge needs socket(AF_UNIX)), so
// the filter never has to allow setup work. The filter survives execve and
// is inherited by every child of the command.
//
// Build and Install work on linux/amd64 and linux/arm64 only; elsewhere
// they return an error wrapping errors.ErrUnsupported. Encode works
// everywhere.
package seccomp

import (
	"encoding/binary"

	"golang.org/x/net/bpf"
)

// Options selects the optional parts of the filter. The zero value is the
// strictest filter.
type Options struct {
	// AllowUnixSockets drops the socket(AF_UNIX) rule and the rules on
	// socketpair and bind (settings network.allowAllUnixSockets). False
	// means socket(AF_UNIX) fails with EPERM, and so does a datagram
	// socketpair (SOCK_DGRAM): an unconnected end could sendto() any host
	// datagram socket whose path is visible (/dev/log, journald, a log
	// agent that forwards off the host). A stream or seqpacket pair is
	// connected for good (connect: EISCONN; an address in sendmsg is
	// refused or ignored), so it reaches nothing outside the process
	// tree, but bind(2) of one end to a path creates a name: see
	// CheckBinds.
	AllowUnixSockets bool

	// CheckBinds, with Notify, notifies every bind(2), so that the
	// listener refuses binding an AF_UNIX socket (Call.Bind): a socket
	// inode under any name in a writable directory (.env, a git
	// directory's refs) would come into being where no creation rule
	// looks. Without Notify (no listener on this kernel) a filter that
	// cannot look at bind refuses socketpair(AF_UNIX) altogether (fail
	// closed). Ignored with AllowUnixSockets.
	CheckBinds bool

	// RefuseGroupWrite makes BuildSetID refuse chmod calls that give
	// group write permission too, not only others' (set when the user's
	// group is shared with other users: a group-writable directory lets
	// them replace what is in it).
	RefuseGroupWrite bool

	// AllowNestedUserNamespaces drops the rules that keep the command from
	// building its own sandbox: namespace flags in unshare and clone,
	// clone3, setns, mount, umount2, pivot_root, chroot and the new mount
	// API. False means all of those fail (clone3 with ENOSYS, the rest with
	// EPERM). Tools that nest a sandbox (bwrap, podman, Chromium) need true.
	AllowNestedUserNamespaces bool

	// Notify makes every refused call a SECCOMP_RET_USER_NOTIF instead of
	// an errno: the call waits for the listener that InstallListener
	// returns, which must answer with the errno the deny-only filter
	// gives (Table) and may record the refusal. False is the deny-only
	// filter of Build, with no listener. If the listener goes away (srt
	// dies, the descriptor is closed) the kernel fails every notified
	// call with ENOSYS: refused calls stay refused (fail closed).
	// Notify also moves BuildSetID's mode refusals into this filter, as
	// notifications of just the calls whose mode has a refused bit
	// (Call.Mode), so that they are reported too; BuildSetID must then be
	// given the same options.
	Notify bool

	// ObserveWrites adds notifications, answered CONTINUE, for the
	// write-intent filesystem calls (opens with a write, create or
	// truncate flag, mkdir, unlink, rename, link, symlink, mknod,
	// truncate, chmod, chown, utimes, xattr changes; FSCalls), so that
	// the listener can record the ones the mounts refuse. The mounts
	// still decide: an observed call runs exactly as without the filter.
	// Requires Notify.
	ObserveWrites bool

	// ObserveReads also notifies every open, read-only ones included (the
	// hot path of most programs; see BENCHMARKS.md). Requires Notify.
	ObserveReads bool

	// EmulateCreates notifies the calls that can bring a name into being
	// or write a file by name — opens with a write, create or truncate
	// flag, creat, mkdir, mknod, symlink, link, rename and truncate — and
	// umask, so that the listener can perform them itself under the
	// creation-time name rules (filesystem.enforceNamesAtCreation) and
	// keep track of each caller's umask. unlink, chmod, chown, utimes and
	// xattr calls are not notified unless ObserveWrites asks for them.
	// Requires Notify.
	EmulateCreates bool

	// KernelNames, with EmulateCreates, says that the kernel checks the
	// names (sandbox/linux/namelsm, a BPF LSM program): of the creating
	// calls only renames are notified (the listener performs them: a
	// directory renamed into place must bring no protected name, git's
	// config.lock needs a look at its content), with umask; opens,
	// creat, mkdir, mknod, symlink, link and truncate run in the
	// sandbox, under the program (with ObserveWrites they are still
	// notified, for the record, and the listener lets them run).
	KernelNames bool
}

// Encode returns prog as the kernel's struct sock_filter array: per
// instruction, u16 code, u8 jt, u8 jf, u32 k, in the byte order of the
// machine running this code (8 bytes each). That is the format
// bwrap --seccomp FD reads and SECCOMP_SET_MODE_FILTER takes.
func Encode(prog []bpf.RawInstruction) []byte {
	b := make([]byte, 0, sockFilterSize*len(prog))
	for _, ins := range prog {
		b = binary.NativeEndian.AppendUint16(b, ins.Op)
		b = append(b, ins.Jt, ins.Jf)
		b = binary.NativeEndian.AppendUint32(b, ins.K)
	}
	return b
}

// sockFilterSize is sizeof(struct sock_filter).
const sockFilterSize = 8

// maxInstructions is the kernel's BPF_MAXINSNS: a longer classic BPF
// program is refused with EINVAL.
const maxInstructions = 4096
