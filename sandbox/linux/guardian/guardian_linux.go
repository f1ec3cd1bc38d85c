package guardian

// This file runs in the guardian process: it serves srt's requests and,
// once srt is gone, removes what no other sandbox holds.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"

	"github.com/srt-go/srt/sandbox/linux/wire"
	"golang.org/x/sys/unix"
)

// Run is the guardian's main function; args are the arguments after
// wire.GuardianArg (srt's state directory). It never returns.
func Run(args []string) {
	// Terminal and job-control signals must not cut the cleanup short.
	signal.Ignore(unix.SIGINT, unix.SIGHUP, unix.SIGTERM, unix.SIGQUIT, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU)
	if len(args) != 1 {
		os.Exit(wire.ExitSetup)
	}
	g := &state{locks: filepath.Join(args[0], "locks")}
	conn := os.NewFile(wire.GuardianFD, "guardian")
	rd := bufio.NewReader(conn)
	for {
		line, err := rd.ReadBytes('\n')
		if err != nil {
			break
		}
		var req wire.GuardianRequest
		var rep wire.GuardianReply
		if err := json.Unmarshal(line, &req); err != nil {
			rep.Error = err.Error()
		} else {
			rep, err = g.handle(req)
			if err != nil {
				rep.Error = err.Error()
			}
		}
		b, _ := json.Marshal(rep)
		conn.Write(append(b, '\n'))
	}
	conn.Close()
	if !g.done && g.pgid > 0 {
		// srt died. bubblewrap and its child may still be setting up,
		// before the child has tied itself to its parent (PDEATHSIG) or
		// before srt's PID 1 holds its lifeline: end the whole process
		// group, which bubblewrap's child stays in until it calls
		// setsid().
		unix.Kill(-g.pgid, unix.SIGKILL)
	}
	g.waitDead()
	g.cleanup()
	os.Exit(0)
}

// hold is one placeholder this guardian holds: path on the host, its lock
// file, and the descriptor of the lock file (locked shared). pfd is an
// O_PATH descriptor of the placeholder's directory, opened without
// following any link: everything the guardian does to the placeholder
// after that goes through it (fstatat, unlinkat on name), so a session
// that swaps a directory on the way for a link cannot point the guardian
// at another file. obj, when not -1, holds the placeholder itself (O_PATH)
// so that its inode cannot be freed and reused by another file while held.
type hold struct {
	path, lock string
	fd         int
	pfd, obj   int
	name       string
}

// state is what the guardian knows of its sandbox.
type state struct {
	locks string
	held  []hold
	// pidfds are the watched processes, opened when srt named them: a
	// pid looked up only at cleanup could by then be another process's.
	pidfds []int
	// pgid is bubblewrap's process group; done says srt finished normally.
	pgid int
	done bool
}

// handle answers one request of srt's.
func (g *state) handle(req wire.GuardianRequest) (wire.GuardianReply, error) {
	switch req.Op {
	case wire.GuardianCreate:
		created, err := g.acquire(req.Path, req.Dir, true, req.Content)
		return wire.GuardianReply{Created: created}, err
	case wire.GuardianAdopt:
		_, err := g.acquire(req.Path, req.Dir, false, "")
		return wire.GuardianReply{}, err
	case wire.GuardianDone:
		g.done = true
		return wire.GuardianReply{}, nil
	case wire.GuardianWatch:
		for _, pid := range req.PIDs {
			if fd, err := unix.PidfdOpen(pid, 0); err == nil {
				g.pidfds = append(g.pidfds, fd)
			} // else already gone
		}
		if g.pgid == 0 && len(req.PIDs) > 0 {
			// The first pid srt watches is bubblewrap's, which leads its
			// own process group; the sandbox's PID 1 comes later.
			g.pgid = req.PIDs[0]
		}
		return wire.GuardianReply{}, nil
	}
	return wire.GuardianReply{}, fmt.Errorf("unknown guardian op %q", req.Op)
}

// acquire takes a shared lock on path's lock file and, when create is set,
// creates the placeholder if nothing is there. Every sandbox that uses the
// placeholder holds the lock shared, so sandboxes in one directory run
// side by side; only cleanup takes it exclusively, so it cannot remove a
// placeholder that any sandbox still uses. After locking, the lock file is
// checked to be still linked (a cleanup may have removed it between our
// open and our lock) and the step retried if not. Two sandboxes creating at
// once are settled by O_EXCL: one creates and writes the marker, the other
// shares. With create unset (adopt), an existing placeholder of another
// sandbox is shared; a path with no lock file is not a placeholder and is
// left alone.
func (g *state) acquire(path string, dir, create bool, content string) (bool, error) {
	lock := lockName(g.locks, path)
	for _, h := range g.held {
		if h.path == path {
			return false, nil // flock(2) locks of one process would deadlock
		}
	}
	for range 100 {
		flags := unix.O_RDWR | unix.O_CLOEXEC | unix.O_NOFOLLOW
		if create {
			flags |= unix.O_CREAT
		}
		fd, err := unix.Open(lock, flags, 0o600)
		if errors.Is(err, unix.ENOENT) && !create {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("placeholder lock %s: %w", lock, err)
		}
		if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
			unix.Close(fd)
			return false, fmt.Errorf("placeholder lock: %w", err)
		}
		if !sameFile(fd, lock) {
			unix.Close(fd)
			continue
		}
		pfd, name, err := openParent(path)
		if err != nil {
			unix.Close(fd)
			return false, err
		}
		obj := -1
		if create {
			if obj, err = createPlaceholder(pfd, name, dir, content); err != nil {
				unix.Close(pfd)
				unix.Close(fd)
				return false, err
			}
		}
		created := obj >= 0
		if created {
			writeMarker(fd, obj) // of what was created, not of a name looked up again
		} else {
			obj = holdObject(pfd, name)
		}
		g.held = append(g.held, hold{path: path, lock: lock, fd: fd, pfd: pfd, obj: obj, name: name})
		return created, nil
	}
	return false, fmt.Errorf("placeholder %s: lock kept changing", path)
}

// waitDead waits until every watched process has exited, so that no
// placeholder is removed while a sandbox that relies on it still runs.
// bubblewrap alone is not enough: killed, it ends before its child, the
// sandbox's PID 1, whose exit in turn waits for every other process of
// the PID namespace to be gone (zap_pid_ns_processes), so PID 1's end is
// the sandbox's.
func (g *state) waitDead() {
	for _, fd := range g.pidfds {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); err != unix.EINTR {
				break
			}
		}
		unix.Close(fd)
	}
}

// cleanup removes each placeholder no other sandbox holds,
// provided it is still the empty file or directory that was created.
func (g *state) cleanup() {
	// Deepest first, so that a directory placeholder is empty by the time
	// its turn comes.
	slices.SortStableFunc(g.held, func(a, b hold) int { return len(b.path) - len(a.path) })
	for _, h := range g.held {
		if unix.Flock(h.fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
			unix.Close(h.fd)
			continue
		}
		var st unix.Stat_t
		dev, ino, size, ok := readMarker(h.fd)
		if ok && unix.Fstatat(h.pfd, h.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && uint64(st.Dev) == dev && st.Ino == ino {
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFDIR:
				unix.Unlinkat(h.pfd, h.name, unix.AT_REMOVEDIR) // fails, and keeps it, if someone filled it
			case unix.S_IFREG:
				if st.Size == size {
					unix.Unlinkat(h.pfd, h.name, 0)
				}
			}
		}
		unix.Unlink(h.lock)
		unix.Close(h.fd)
		unix.Close(h.pfd)
		if h.obj >= 0 {
			unix.Close(h.obj)
		}
	}
}
