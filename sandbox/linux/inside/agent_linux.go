package inside

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/srt-go/srt/internal/envlist"
	"github.com/srt-go/srt/internal/execpath"
	"github.com/srt-go/srt/sandbox/linux/wire"
	"golang.org/x/sys/unix"
)

// This file runs in the sandbox's PID 1, in agent mode (a warm sandbox:
// wire.InitSpec.AgentFD); srt's side is sandbox/linux's warm_linux.go.
//
// Agent mode: the sandbox's PID 1 runs no command of its own but serves
// exec requests from srt over an inherited SOCK_SEQPACKET socket pair, so
// that one sandbox (its namespaces, mounts, proxies) runs many commands.
//
// srt creates each command's stdio (pipes, or a terminal) on the host and
// sends the sandbox's ends with SCM_RIGHTS together with the request; PID 1
// forks the command into a session of its own, under the seccomp filter
// PID 1 installed before serving (inherited), and reports its pid and
// later its status. Nothing inside the sandbox can reach the socket: PID 1
// holds it close-on-exec and is not dumpable. The messages are
// wire.AgentMsg, drawn in sandbox/linux/wire.

// runAgent is PID 1's loop in agent mode. It returns never: when srt's end
// of the socket closes, PID 1 exits and the kernel kills everything left
// in the PID namespace.
func runAgent(fd int) {
	f := os.NewFile(uintptr(fd), "agent")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "srt: agent: %v\n", err)
		os.Exit(wire.ExitSetup)
	}
	conn := c.(*net.UnixConn)
	a := &agentServer{conn: conn, ids: map[int]uint64{}}
	chld := make(chan os.Signal, 64)
	signal.Notify(chld, unix.SIGCHLD)
	go func() {
		for range chld {
			a.reap()
		}
	}()
	a.send(wire.AgentMsg{Op: wire.AgentReady}, nil)
	buf := make([]byte, wire.MaxAgentMsg)
	oob := make([]byte, unix.CmsgSpace(3*4))
	for {
		n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			os.Exit(0)
		}
		var fds []int
		if oobn > 0 {
			if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
				for _, m := range msgs {
					r, _ := unix.ParseUnixRights(&m)
					fds = append(fds, r...)
				}
			}
		}
		var m wire.AgentMsg
		if err := json.Unmarshal(buf[:n], &m); err != nil {
			closeAll(fds)
			continue
		}
		a.handle(m, fds)
	}
}

// agentServer is PID 1's state in agent mode.
type agentServer struct {
	conn *net.UnixConn
	wmu  sync.Mutex
	// mu guards ids, which maps a running command's pid to its exec id.
	// It is held across fork and "started", so that the reaper, which
	// takes it before "exit", cannot report an exit before the start.
	mu  sync.Mutex
	ids map[int]uint64
}

func (a *agentServer) send(m wire.AgentMsg, _ []int) {
	b, _ := json.Marshal(m)
	a.wmu.Lock()
	a.conn.Write(b)
	a.wmu.Unlock()
}

func (a *agentServer) handle(m wire.AgentMsg, fds []int) {
	switch m.Op {
	case wire.AgentExec:
		defer closeAll(fds)
		if len(fds) != 3 || len(m.Argv) == 0 {
			a.send(wire.AgentMsg{Op: wire.AgentFailed, ID: m.ID, Code: wire.ExitSetup, Error: "bad exec request"}, nil)
			return
		}
		// The request's variables override PID 1's own environment, which
		// holds srt's base (sanitised by the caller), the proxy variables
		// and TMPDIR.
		env := os.Environ()
		for _, kv := range m.Env {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env = envlist.Set(env, k, v)
			}
		}
		m.Env = env
		// A working directory that is not one is said as such, before the
		// command is looked up in it (else a missing cwd reads as a
		// missing program).
		if m.Dir != "" {
			if st, err := os.Stat(m.Dir); err != nil || !st.IsDir() {
				code, why := wire.ExitNotExec, "not a directory"
				var pe *os.PathError
				switch {
				case errors.As(err, &pe):
					why = pe.Err.Error()
				case err != nil:
					why = err.Error()
				}
				if errors.Is(err, unix.ENOENT) {
					code = wire.ExitNotFound
				}
				a.send(wire.AgentMsg{Op: wire.AgentFailed, ID: m.ID, Code: code, Error: fmt.Sprintf("working directory %s: %s", m.Dir, why)}, nil)
				return
			}
		}
		path, code, err := lookPathIn(m.Argv[0], m.Env, m.Dir)
		if err != nil {
			a.send(wire.AgentMsg{Op: wire.AgentFailed, ID: m.ID, Code: code, Error: err.Error()}, nil)
			return
		}
		attr := &syscall.SysProcAttr{Setsid: true}
		if m.TTY {
			attr.Setctty, attr.Ctty = true, 0
		}
		a.mu.Lock()
		pid, err := syscall.ForkExec(path, m.Argv, &syscall.ProcAttr{
			Dir: m.Dir, Env: m.Env, Files: []uintptr{uintptr(fds[0]), uintptr(fds[1]), uintptr(fds[2])}, Sys: attr,
		})
		if err != nil {
			a.mu.Unlock()
			code := wire.ExitNotExec
			if errors.Is(err, unix.ENOENT) {
				code = wire.ExitNotFound
			}
			a.send(wire.AgentMsg{Op: wire.AgentFailed, ID: m.ID, Code: code, Error: fmt.Sprintf("%s: %v", m.Argv[0], err)}, nil)
			return
		}
		a.ids[pid] = m.ID
		a.send(wire.AgentMsg{Op: wire.AgentStarted, ID: m.ID, Pid: pid}, nil)
		a.mu.Unlock()
	case wire.AgentSignal:
		closeAll(fds)
		a.mu.Lock()
		for pid, id := range a.ids {
			if id == m.ID {
				// The command's process group: what it started too.
				if unix.Kill(-pid, syscall.Signal(m.Sig)) != nil {
					unix.Kill(pid, syscall.Signal(m.Sig))
				}
			}
		}
		a.mu.Unlock()
	case wire.AgentFreeze, wire.AgentThaw:
		closeAll(fds)
		sig, ack := unix.SIGSTOP, wire.AgentFrozen
		if m.Op == wire.AgentThaw {
			sig, ack = unix.SIGCONT, wire.AgentThawed
		}
		// kill(-1) from a PID namespace's init reaches every process in
		// the namespace but init itself (kill(2)). Twice, so a process
		// forked while the first pass ran is caught by the second.
		unix.Kill(-1, sig)
		unix.Kill(-1, sig)
		a.send(wire.AgentMsg{Op: ack, ID: m.ID}, nil)
	default:
		closeAll(fds)
	}
}

// reap collects every child that has ended; a command srt started is
// reported, an orphan silently reaped.
func (a *agentServer) reap() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		a.mu.Lock()
		id, ok := a.ids[pid]
		delete(a.ids, pid)
		if ok {
			m := wire.AgentMsg{Op: wire.AgentExit, ID: id}
			switch {
			case ws.Exited():
				m.Code = ws.ExitStatus()
			case ws.Signaled():
				m.Signal = int(ws.Signal())
				m.Code = wire.ExitSignalShift + m.Signal
			}
			a.send(m, nil)
		}
		a.mu.Unlock()
	}
}

// lookPathIn finds argv0 in the PATH of env (not PID 1's own), relative
// to dir for a name with a slash, as execvp would. It returns the exit
// code a shell would give on failure. It stats inside the sandbox only.
func lookPathIn(argv0 string, env []string, dir string) (string, int, error) {
	p, err := execpath.Lookup(argv0, execpath.PathOf(env, "/usr/local/bin:/usr/bin:/bin"), dir, os.Stat)
	var e *execpath.Error
	if errors.As(err, &e) {
		return "", e.Code(), err
	}
	return p, 0, err
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
