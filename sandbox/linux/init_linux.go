package linux

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

	"github.com/srt-go/srt/seccomp"
	"golang.org/x/sys/unix"
)

// InitArg is the argument that makes srt's binary run as the sandbox's
// PID 1. bubblewrap starts it with --as-pid-1, so no process of
// bubblewrap's, with its full command line, is visible inside.
const InitArg = "--srt-init"

// initSpec is what srt tells its in-sandbox PID 1, through an inherited
// pipe (never the command line, which every process inside can read).
type initSpec struct {
	// Argv is the command; Argv[0] is looked up in PATH inside the sandbox.
	Argv []string `json:"argv"`
	// KeepFDs are descriptors above 2 the user passed to srt; they stay open
	// in the command. Every other descriptor is closed.
	KeepFDs []int `json:"keepFds,omitempty"`
	// CloseFDs are srt's own descriptors (the binary, this spec's pipe).
	CloseFDs []int `json:"closeFds,omitempty"`
	// Ctty is the descriptor (0-2) of the sandbox's own terminal, which
	// becomes the command's controlling terminal; -1 for none.
	Ctty int `json:"ctty"`
	// StartedFD is a pipe to srt: one byte is written once PID 1 runs, so
	// srt can tell bubblewrap's own set-up failures from the command's
	// exit status.
	StartedFD int `json:"startedFd"`
	// LifelineFD is the read end of a pipe whose write end only srt holds:
	// EOF means srt is gone, and PID 1 then ends the sandbox.
	LifelineFD int `json:"lifelineFd"`
	// ListenFD is a socket to srt over which PID 1 sends the proxy
	// listeners it binds on the sandbox's loopback; -1 for none.
	ListenFD  int          `json:"listenFd"`
	Listeners []listenSpec `json:"listeners,omitempty"`
	// Seccomp configures the seccomp filter installed before the command
	// starts; it is never optional.
	Seccomp seccomp.Options `json:"seccomp"`
	// NotifyFD is a socket to srt over which PID 1 sends the filter's
	// notification listener; used only when Seccomp.Notify is set
	// (init_seccomp_linux.go, sandbox/linux/wire).
	NotifyFD int `json:"notifyFd"`
	// RequireListener makes a kernel without a TSYNC listener a setup
	// error instead of the deny-only filter: creation-time name rules
	// (filesystem.enforceNamesAtCreation) cannot hold without it. It
	// also turns core dumps off (RLIMIT_CORE 0, hard): the kernel writes
	// a core file without a system call srt sees, under a name
	// core_pattern may take from the program ("%e"), in the working
	// directory, which may be a .git/hooks.
	RequireListener bool `json:"requireListener,omitempty"`
	// AgentFD, when above 2, is a socket to srt over which PID 1 serves
	// exec requests instead of running Argv (agent_linux.go).
	AgentFD int `json:"agentFd,omitempty"`
}

// Exit statuses of PID 1 itself, as env(1) and timeout(1) use them.
const (
	exitSetup       = 125 // srt's own failure
	exitNotExec     = 126 // found but cannot run
	exitNotFound    = 127 // not found
	exitSignalShift = 128 // killed by signal N gives 128+N
)

// RunInit is PID 1's main function; args are the arguments after InitArg.
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
		fail(exitSetup, "%s is internal to srt", InitArg)
	}
	// Catch the signals srt relays before anything else: the Go runtime
	// would otherwise exit on a SIGTERM that arrives during set-up. They
	// are delivered to the command once it runs.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT,
		unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH, unix.SIGCONT, unix.SIGALRM)
	specFD, err := strconv.Atoi(args[0])
	if err != nil {
		fail(exitSetup, "init: bad spec descriptor %q", args[0])
	}
	f := os.NewFile(uintptr(specFD), "spec")
	var spec initSpec
	b, err := io.ReadAll(f)
	f.Close()
	if err == nil {
		err = json.Unmarshal(b, &spec)
	}
	if err != nil || len(spec.Argv) == 0 && spec.AgentFD <= 2 {
		fail(exitSetup, "init: reading spec: %v", err)
	}
	if spec.StartedFD > 2 {
		unix.Write(spec.StartedFD, []byte{1})
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
			os.Exit(exitSignalShift + int(unix.SIGKILL))
		}(spec.LifelineFD)
	}
	for _, fd := range spec.CloseFDs {
		unix.Close(fd)
	}
	// Nothing in PID 1 may be read or traced through /proc by the command.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	if spec.ListenFD >= 0 {
		if err := sendListeners(spec.ListenFD, spec.Listeners); err != nil {
			fail(exitSetup, "network: %v", err)
		}
		unix.Close(spec.ListenFD)
	}
	closeOtherFDs(spec.KeepFDs)
	// The seccomp filter goes on last, once nothing else needs a refused
	// call; with TSYNC it covers PID 1's every thread and, inherited, the
	// command and all its children. no_new_privs comes with it.
	// With Seccomp.Notify the refusals go to srt instead of returning an
	// errno directly; see init_seccomp_linux.go for why PID 1 may carry that
	// filter itself.
	if spec.RequireListener {
		if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
			fail(exitSetup, "turning core dumps off: %v", err)
		}
	}
	if err := installFilter(&spec); err != nil {
		fail(exitSetup, "seccomp filter: %v; refusing to run without it", err)
	}
	if spec.AgentFD > 2 {
		runAgent(spec.AgentFD) // a warm sandbox; never returns
	}

	path, err := exec.LookPath(spec.Argv[0])
	if err != nil {
		code := exitNotFound
		if errors.Is(err, exec.ErrNotFound) {
			fail(code, "%s: command not found", spec.Argv[0])
		}
		if errors.Is(err, os.ErrPermission) {
			code = exitNotExec
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
		code := exitNotExec
		if errors.Is(err, unix.ENOENT) {
			code = exitNotFound
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
				status <- exitSetup
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
				status <- exitSignalShift + int(ws.Signal())
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

// closeOtherFDs marks every descriptor above 2 close-on-exec except keep,
// so nothing srt or bubblewrap held leaks into the command.
func closeOtherFDs(keep []int) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
		return
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		kept := false
		for _, k := range keep {
			kept = kept || k == fd
		}
		if !kept {
			unix.CloseOnExec(fd)
		}
	}
}
