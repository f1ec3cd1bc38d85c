package inside

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/srt-go/srt/internal/nofollow"
	"github.com/srt-go/srt/sandbox/linux/wire"
	"golang.org/x/sys/unix"
)

// This file runs in the sandbox's PID 1 (srt's binary started by
// bubblewrap --as-pid-1 with wire.InitArg): it reads srt's spec, ties the
// sandbox's life to srt's, installs the seccomp filter, and runs the
// command or, in a warm sandbox, the exec agent (agent_linux.go). srt's
// side is sandbox/linux's run_linux.go.

// RunInit is PID 1's main function; args are the arguments after wire.InitArg.
// It starts the command in a session of its own (with the sandbox's
// terminal as its controlling terminal when there is one), forwards the
// signals srt relays to it, reaps every orphan, and exits with the
// command's status, 128+N for a command killed by signal N. It never
// returns.
func RunInit(args []string) {
	fail := func(code int, format string, a ...any) {
		fmt.Fprintf(os.Stderr, "srt: "+format+"\n", a...)
		os.Exit(code)
	}
	if os.Getpid() != 1 || len(args) != 1 {
		fail(wire.ExitSetup, "%s is internal to srt", wire.InitArg)
	}
	// Catch the signals srt relays before anything else: the Go runtime
	// would otherwise exit on a SIGTERM that arrives during set-up. They
	// are delivered to the command once it runs.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT,
		unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH, unix.SIGCONT, unix.SIGALRM)
	specFD, err := strconv.Atoi(args[0])
	if err != nil {
		fail(wire.ExitSetup, "init: bad spec descriptor %q", args[0])
	}
	f := os.NewFile(uintptr(specFD), "spec")
	var spec wire.InitSpec
	b, err := io.ReadAll(f)
	f.Close()
	if err == nil {
		err = json.Unmarshal(b, &spec)
	}
	if err != nil || len(spec.Argv) == 0 && spec.AgentFD <= 2 {
		fail(wire.ExitSetup, "init: reading spec: %v", err)
	}
	if err := checkMounts(spec.Mounts); err != nil {
		fail(wire.ExitSetup, "%v", err)
	}
	if spec.StartedFD > 2 {
		unix.Write(spec.StartedFD, []byte{wire.StartedByte})
		unix.Close(spec.StartedFD)
	}
	if spec.LifelineFD > 2 {
		unix.CloseOnExec(spec.LifelineFD)
		go func(fd int) {
			var b [1]byte
			for {
				if _, err := unix.Read(fd, b[:]); err != unix.EINTR {
					break
				}
			}
			// srt is gone: end everything in the PID namespace, then
			// ourselves, which ends the namespace.
			unix.Kill(-1, unix.SIGKILL)
			os.Exit(wire.ExitSignalShift + int(unix.SIGKILL))
		}(spec.LifelineFD)
	}
	for _, fd := range spec.CloseFDs {
		unix.Close(fd)
	}
	// Nothing in PID 1 may be read or traced through /proc by the command.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	if spec.ListenFD >= 0 {
		if err := sendListeners(spec.ListenFD, spec.Listeners); err != nil {
			fail(wire.ExitSetup, "network: %v", err)
		}
		unix.Close(spec.ListenFD)
	}
	closeOtherFDs(spec.KeepFDs)
	// The seccomp filter goes on last, once nothing else needs a refused
	// call; with TSYNC it covers PID 1's every thread and, inherited, the
	// command and all its children. no_new_privs comes with it.
	// With Seccomp.Notify the refusals go to srt instead of returning an
	// errno directly; see seccomp_linux.go for why PID 1 may carry that
	// filter itself.
	if spec.RequireListener {
		if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
			fail(wire.ExitSetup, "turning core dumps off: %v", err)
		}
	}
	if err := installFilter(&spec); err != nil {
		fail(wire.ExitSetup, "seccomp filter: %v; refusing to run without it", err)
	}
	if spec.AgentFD > 2 {
		runAgent(spec.AgentFD) // a warm sandbox; never returns
	}

	path, err := exec.LookPath(spec.Argv[0])
	if err != nil {
		code := wire.ExitNotFound
		if errors.Is(err, exec.ErrNotFound) {
			fail(code, "%s: command not found", spec.Argv[0])
		}
		if errors.Is(err, os.ErrPermission) {
			code = wire.ExitNotExec
		}
		fail(code, "%s: %v", spec.Argv[0], errors.Unwrap(err))
	}

	files := make([]uintptr, 3)
	for i := range files {
		files[i] = uintptr(i)
	}
	for _, fd := range spec.KeepFDs {
		for len(files) <= fd {
			files = append(files, ^uintptr(0))
		}
		files[fd] = uintptr(fd)
	}
	attr := &syscall.SysProcAttr{Setsid: true}
	if spec.Ctty >= 0 {
		attr.Setctty, attr.Ctty = true, spec.Ctty
	}
	pid, err := syscall.ForkExec(path, spec.Argv, &syscall.ProcAttr{Env: os.Environ(), Files: files, Sys: attr})
	if err != nil {
		code := wire.ExitNotExec
		if errors.Is(err, unix.ENOENT) {
			code = wire.ExitNotFound
		}
		fail(code, "%s: %v", spec.Argv[0], err)
	}

	// Reap everything; the command's own status decides ours.
	status := make(chan int, 1)
	go func() {
		for {
			var ws unix.WaitStatus
			wpid, err := unix.Wait4(-1, &ws, 0, nil)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				status <- wire.ExitSetup
				return
			}
			if wpid != pid {
				continue
			}
			switch {
			case ws.Exited():
				status <- ws.ExitStatus()
				return
			case ws.Signaled():
				status <- wire.ExitSignalShift + int(ws.Signal())
				return
			}
		}
	}()
	for {
		select {
		case code := <-status:
			// Returning from PID 1 kills everything left in the PID
			// namespace: background jobs do not outlive the command.
			os.Exit(code)
		case s := <-sigs:
			sig := s.(syscall.Signal)
			target := pid
			if sig == unix.SIGINT || sig == unix.SIGQUIT {
				target = -pid // the command's process group, as a terminal would
			}
			unix.Kill(target, sig)
		}
	}
}

// checkMounts makes sure each of the plan's binds is where the plan put
// it (wire.MountCheck): its destination is reached one component at a
// time without following a symbolic link, is a mount point (its mount is
// not its parent's), shows the host object srt found at the source, and
// is read-only where the plan says so. It runs before PID 1 reports
// running, so a failure is a set-up failure and nothing of the command's
// runs.
func checkMounts(checks []wire.MountCheck) error {
	for _, c := range checks {
		if err := checkMount(c); err != nil {
			return fmt.Errorf("mount %s: %w; refusing to run with a mount elsewhere than planned", c.Guest, err)
		}
	}
	return nil
}

func checkMount(c wire.MountCheck) error {
	fd, parent, err := nofollow.Open(c.Guest)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if parent >= 0 {
		defer unix.Close(parent)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if uint64(st.Dev) != c.Dev || st.Ino != c.Ino {
		return errors.New("another object is there than the one planned")
	}
	if parent >= 0 {
		var a, b unix.Statx_t
		if unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &a) != nil || unix.Statx(parent, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &b) != nil {
			return errors.New("cannot tell its mount")
		}
		if a.Mask&unix.STATX_MNT_ID != 0 && a.Mnt_id == b.Mnt_id {
			return errors.New("no mount is there (it went elsewhere)")
		}
	}
	if c.ReadOnly {
		var fs unix.Statfs_t
		if err := unix.Fstatfs(fd, &fs); err != nil {
			return err
		}
		if fs.Flags&unix.ST_RDONLY == 0 {
			return errors.New("it is writable")
		}
	}
	return nil
}
