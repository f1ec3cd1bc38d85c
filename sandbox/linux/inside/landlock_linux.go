package inside

// This file runs in the Landlock stage, the weaker sandbox's first
// process (srt's binary started with wire.LandlockStageArg): it restricts
// itself with Landlock, seccomp and no capabilities, then execs the
// command. srt's side is sandbox/linux's landlock_linux.go.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	"github.com/srt-go/srt/sandbox/linux/wire"
	"github.com/srt-go/srt/seccomp"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// RunLandlockStage applies the restrictions to this process and execs the
// command; args are the arguments after wire.LandlockStageArg. It never returns.
func RunLandlockStage(args []string) {
	fail := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "srt: "+format+"\n", a...)
		os.Exit(wire.ExitSetup)
	}
	if len(args) != 1 {
		fail("%s is internal to srt", wire.LandlockStageArg)
	}
	fd, err := strconv.Atoi(args[0])
	if err != nil {
		fail("bad spec descriptor")
	}
	f := os.NewFile(uintptr(fd), "spec")
	var spec wire.LandlockSpec
	b, err := io.ReadAll(f)
	f.Close()
	if err == nil {
		err = json.Unmarshal(b, &spec)
	}
	if err != nil || len(spec.Argv) == 0 {
		fail("reading spec: %v", err)
	}
	closeOtherFDs(spec.KeepFDs)
	path, err := exec.LookPath(spec.Argv[0])
	if err != nil {
		code := wire.ExitNotFound
		if errors.Is(err, os.ErrPermission) {
			code = wire.ExitNotExec
		}
		fmt.Fprintf(os.Stderr, "srt: %s: %v\n", spec.Argv[0], err)
		os.Exit(code)
	}
	if spec.Ctty >= 0 {
		unix.Setsid()
		unix.IoctlSetInt(spec.Ctty, unix.TIOCSCTTY, 0)
	}
	if err := dropCapabilities(); err != nil {
		fail("dropping capabilities: %v", err)
	}
	rules := []landlock.Rule{
		landlock.RODirs(spec.ReadDirs...).IgnoreIfMissing(),
		landlock.ROFiles(spec.ReadFiles...).IgnoreIfMissing(),
		landlock.PathAccess(llReadDir, spec.ListDirs...).IgnoreIfMissing(),
		landlock.RWDirs(spec.WriteDirs...).WithRefer().IgnoreIfMissing(),
		landlock.RWFiles(spec.WriteFiles...).IgnoreIfMissing(),
		landlock.RWFiles(spec.Devices...).WithIoctlDev().IgnoreIfMissing(),
	}
	for _, port := range spec.TCPPorts {
		rules = append(rules, landlock.ConnectTCP(port))
	}
	// BestEffort only drops the rights this kernel's ABI lacks; srt
	// checked ABI ≥ 1 and told the user what is missing before starting.
	if err := landlock.V11.BestEffort().Restrict(rules...); err != nil {
		fail("Landlock: %v", err)
	}
	// The main filter, installed as PID 1 installs it: with its listener
	// when srt records the refusals, the deny-only filter where the kernel
	// cannot give one.
	installed, err := installFSFilter(spec.Seccomp, spec.NotifyFD, false)
	if err == nil {
		err = installMPTCPFilter(installed)
	}
	if err == nil {
		// A second domain on top of the first: with the creation-time
		// rules, no right to make a name anywhere (backstop_linux.go).
		err = applyBackstop(installed)
	}
	if err != nil {
		fail("seccomp filter: %v; refusing to run without it", err)
	}
	err = syscall.Exec(path, spec.Argv, os.Environ())
	fmt.Fprintf(os.Stderr, "srt: %s: %v\n", spec.Argv[0], err)
	os.Exit(wire.ExitNotExec)
}

// llReadDir is the right to list a directory, without reading its files.
const llReadDir = landlock.AccessFSSet(unix.LANDLOCK_ACCESS_FS_READ_DIR)

// installMPTCPFilter adds the weaker sandbox's own seccomp rules, stacked
// on the main filter (which has already checked the architecture), beside
// the set-id filter every sandbox gets (seccomp.BuildSetID, for opts, the
// options of the main filter installed):
//
//   - socket(…, IPPROTO_MPTCP) → EPROTONOSUPPORT: Landlock's TCP rules do
//     not cover Multipath TCP sockets (go-landlock's documentation; kernel
//     issue landlock-lsm/linux#54).
//   - chown/fchown/lchown/fchownat → EPERM: Landlock does not confine file
//     metadata to the write roots (adversarial review).
func installMPTCPFilter(opts seccomp.Options) error {
	eperm := unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 0, Size: 4}, // nr
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(unix.SYS_SOCKET), SkipTrue: 3},
		bpf.LoadAbsolute{Off: 16 + 8*2, Size: 4}, // low word of args[2], the protocol
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.IPPROTO_MPTCP, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPROTONOSUPPORT)},
		bpf.LoadAbsolute{Off: 0, Size: 4}, // nr again (after the socket test)
	}
	for _, nr := range chownCalls {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: nr, SkipTrue: 1}, bpf.RetConstant{Val: eperm})
	}
	prog = append(prog, bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW})
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return err
	}
	if err := seccomp.Install(raw); err != nil {
		return err
	}
	if raw, err = seccomp.BuildSetID(opts); err != nil {
		return err
	}
	return seccomp.Install(raw)
}

// dropCapabilities empties every capability set, the bounding set and the
// ambient set, so that even a root caller's command holds none.
func dropCapabilities() error {
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EPERM) {
			return err
		}
	}
	unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	return unix.Capset(&hdr, &data[0])
}
