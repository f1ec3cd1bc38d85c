package guest

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/hashicorp/yamux"
	"github.com/srt-go/srt/internal/execpath"
	"github.com/srt-go/srt/microvm/internal/wire"
	"github.com/srt-go/srt/proxy"
	"golang.org/x/sys/unix"
)

// outputGrace is how long the agent keeps reading a process's output
// after it exited: a background child that inherited stdout must not hold
// the exit status back for ever.
const outputGrace = 2 * time.Second

// gitSafeEnv makes every directory a git safe.directory for the guest's
// processes (git-config(1), ENVIRONMENT: GIT_CONFIG_COUNT): they run as
// the guest's root, and a share shows its files with their host owner, so
// git would refuse an unprivileged user's repository as of "dubious
// ownership". The check protects a user from running another user's
// repository configuration; in the guest that configuration can only act
// on the guest, under the same rules as the command itself. A request's
// own GIT_CONFIG_COUNT (ExecRequest.Env) replaces it.
var gitSafeEnv = []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*"}

// clockSlack is how far behind the host's clock the guest's may be before
// an exec steps it forward (catchUp).
const clockSlack = 20 * time.Millisecond

// catchUp steps the guest's clock forward to host time hostNs (the
// request's wire.ExecRequest.UnixTime) when it is behind by more than
// clockSlack: files the command writes then carry the host's time, as make
// and git compare them with the host's. It never steps backwards; 0 does
// nothing.
func catchUp(hostNs int64) {
	if hostNs <= 0 || time.Now().UnixNano() >= hostNs-int64(clockSlack) {
		return
	}
	ts := unix.NsecToTimespec(hostNs)
	unix.ClockSettime(unix.CLOCK_REALTIME, &ts)
}

// startCode is the exit status a shell gives for a process that could not
// start with err (wire.ExecStarted.Code): the lookup's own (execpath.Error),
// 127 for an executable that is not there, 126 for one that cannot be
// executed (execve(2): EACCES, ENOEXEC, EISDIR, ETXTBSY), 0 otherwise.
func startCode(err error) int {
	var le *execpath.Error
	switch {
	case errors.As(err, &le):
		return le.Code()
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return 127
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.ENOEXEC), errors.Is(err, unix.EISDIR), errors.Is(err, unix.ETXTBSY), errors.Is(err, unix.EPERM):
		return 126
	}
	return 0
}

// exec runs one process for an exec stream.
func (a *agent) exec(st *yamux.Stream) {
	var req wire.ExecRequest
	if err := wire.ReadJSON(st, &req); err != nil {
		return
	}
	a.mu.Lock()
	cfg := a.cfg
	a.mu.Unlock()
	catchUp(req.UnixTime)
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=/root", "USER=root", "LANG=C.UTF-8"}, gitSafeEnv...)
	if req.TTY != nil {
		env = append(env, "TERM=xterm-256color")
	}
	if cfg.HTTPPort != 0 {
		env = append(env, proxy.Env(cfg.HTTPPort, cfg.SOCKSPort)...)
	}
	env = mergeEnv(env, req.Env)
	dir := req.Dir
	if dir == "" {
		dir = "/"
	}
	fail := func(err error) { wire.WriteJSON(st, wire.ExecStarted{Error: err.Error(), Code: startCode(err)}) }
	if len(req.Argv) == 0 {
		fail(errors.New("empty argv"))
		return
	}
	path, err := execpath.Lookup(req.Argv[0], execpath.PathOf(env, ""), dir, os.Stat)
	if err != nil {
		fail(err)
		return
	}

	var (
		wmu      sync.Mutex // one frame at a time on st
		stdin    io.WriteCloser
		outs     []*os.File // read ends we copy to the host
		childEnd []*os.File // closed in the agent once the child has them
	)
	attr := &os.ProcAttr{Dir: dir, Env: env}
	if req.TTY != nil {
		ptmx, tty, err := pty.Open()
		if err != nil {
			fail(err)
			return
		}
		pty.Setsize(ptmx, &pty.Winsize{Rows: req.TTY.Rows, Cols: req.TTY.Cols})
		attr.Files = []*os.File{tty, tty, tty}
		attr.Sys = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		stdin, outs, childEnd = ptmx, []*os.File{ptmx}, []*os.File{tty}
		defer ptmx.Close()
	} else {
		inR, inW, err1 := os.Pipe()
		outR, outW, err2 := os.Pipe()
		errR, errW, err3 := os.Pipe()
		if err := errors.Join(err1, err2, err3); err != nil {
			fail(err)
			return
		}
		attr.Files = []*os.File{inR, outW, errW}
		attr.Sys = &syscall.SysProcAttr{Setpgid: true}
		stdin, outs, childEnd = inW, []*os.File{outR, errR}, []*os.File{inR, outW, errW}
		defer outR.Close()
		defer errR.Close()
	}
	// Refusals in the process's tree go to the host as frames on st
	// (observe_linux.go).
	w, err := newWatch(cfg, func(b []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		return wire.WriteFrame(st, wire.FrameViolation, b)
	})
	if err != nil {
		for _, f := range childEnd {
			f.Close()
		}
		stdin.Close()
		fail(err)
		return
	}
	pid, status, err := w.start(a.procs, path, req.Argv, attr)
	for _, f := range childEnd {
		f.Close()
	}
	if err != nil {
		w.finish()
		stdin.Close()
		fail(err)
		return
	}
	if err := wire.WriteJSON(st, wire.ExecStarted{PID: pid}); err != nil {
		unix.Kill(-pid, unix.SIGKILL)
	}

	// Host → guest: stdin, signals, resizes. A broken stream means the
	// host is gone: kill the process group.
	go func() {
		var buf []byte
		for {
			typ, p, err := wire.ReadFrame(st, buf)
			if err != nil {
				unix.Kill(-pid, unix.SIGKILL)
				stdin.Close()
				return
			}
			buf = p[:0]
			switch typ {
			case wire.FrameStdin:
				if len(p) == 0 {
					if req.TTY != nil {
						stdin.Write([]byte{4}) // ^D: end of input for the line discipline
					} else {
						stdin.Close()
					}
					continue
				}
				stdin.Write(p)
			case wire.FrameSignal:
				if len(p) == 1 {
					// The process group: a shell's children get it too.
					if unix.Kill(-pid, unix.Signal(p[0])) != nil {
						unix.Kill(pid, unix.Signal(p[0]))
					}
				}
			case wire.FrameResize:
				if len(p) == 4 && req.TTY != nil {
					pty.Setsize(outs[0], &pty.Winsize{
						Rows: uint16(p[0])<<8 | uint16(p[1]), Cols: uint16(p[2])<<8 | uint16(p[3])})
				}
			}
		}
	}()

	var wg sync.WaitGroup
	for i, f := range outs {
		typ := wire.FrameStdout
		if i == 1 {
			typ = wire.FrameStderr
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := make([]byte, 32<<10)
			for {
				n, err := f.Read(b)
				if n > 0 {
					wmu.Lock()
					werr := wire.WriteFrame(st, typ, b[:n])
					wmu.Unlock()
					if werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
	ws := <-status
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(outputGrace):
		for _, f := range outs {
			f.Close()
		}
		<-done
	}
	es := wire.ExitStatus{Code: ws.ExitStatus(), ViolationsDropped: w.finish()}
	if ws.Signaled() {
		es.Signal = int(ws.Signal())
		es.Code = 128 + es.Signal
	}
	b, _ := jsonMarshal(es)
	wmu.Lock()
	wire.WriteFrame(st, wire.FrameExit, b)
	wmu.Unlock()
}

func mergeEnv(base, over []string) []string {
	idx := map[string]int{}
	out := append([]string(nil), base...)
	for i, kv := range out {
		k, _, _ := strings.Cut(kv, "=")
		idx[k] = i
	}
	for _, kv := range over {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := idx[k]; ok {
			out[i] = kv
		} else {
			idx[k] = len(out)
			out = append(out, kv)
		}
	}
	return out
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
