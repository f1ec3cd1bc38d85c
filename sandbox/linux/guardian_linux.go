package linux

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/srt-go/srt/sandbox/linux/wire"
	"golang.org/x/sys/unix"
)

// The guardian is a small process, srt's own binary started with
// wire.GuardianArg, that owns every change srt makes to the host filesystem for
// one sandbox: it creates the placeholders, and removes them once the
// sandbox is gone. It lives in its own session and outlives srt, so that
// even when srt is killed with SIGKILL no placeholder is left behind: the
// guardian sees its socket close, waits for bubblewrap and the sandbox's
// PID 1 to be dead (pidfd), and cleans up.
//
// Several sandboxes may share a placeholder (two runs in one directory).
// Each holds a shared flock(2) on a lock file named after the path in the
// state directory; only a guardian that can take the lock exclusively, so
// the last user, removes the placeholder. Removing it earlier would detach
// the mount in the other sandbox (unlinking a mount point in another mount
// namespace lazily unmounts it, Linux ≥ 3.18) and lift its protection.

// guardian is srt's handle on its guardian process.
type guardian struct {
	cmd  *exec.Cmd
	conn *os.File
	rd   *bufio.Reader
}

// startGuardian starts the guardian for one sandbox.
func startGuardian(stateDir string) (*guardian, error) {
	if err := checkDispatched(); err != nil {
		return nil, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("guardian socketpair: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "guardian"), os.NewFile(uintptr(fds[1]), "guardian")
	defer theirs.Close()
	cmd := exec.Command("/proc/self/exe", wire.GuardianArg, stateDir)
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		ours.Close()
		return nil, fmt.Errorf("starting guardian: %w", err)
	}
	return &guardian{cmd: cmd, conn: ours, rd: bufio.NewReader(ours)}, nil
}

func (g *guardian) call(req wire.GuardianRequest) (wire.GuardianReply, error) {
	var rep wire.GuardianReply
	b, _ := json.Marshal(req)
	if _, err := g.conn.Write(append(b, '\n')); err != nil {
		return rep, fmt.Errorf("guardian: %w", err)
	}
	line, err := g.rd.ReadBytes('\n')
	if err != nil {
		return rep, fmt.Errorf("guardian: %w", err)
	}
	if err := json.Unmarshal(line, &rep); err != nil {
		return rep, fmt.Errorf("guardian reply: %w", err)
	}
	if rep.Error != "" {
		return rep, errors.New(rep.Error)
	}
	return rep, nil
}

// callAll sends every request before reading the replies, so a batch costs
// one round trip. The first failure is returned, naming its path.
func (g *guardian) callAll(reqs []wire.GuardianRequest) error {
	// A guardian that does not answer must not hang srt's start-up.
	g.conn.SetDeadline(time.Now().Add(15 * time.Second))
	defer g.conn.SetDeadline(time.Time{})
	var buf []byte
	for _, r := range reqs {
		b, _ := json.Marshal(r)
		buf = append(append(buf, b...), '\n')
	}
	if _, err := g.conn.Write(buf); err != nil {
		return fmt.Errorf("guardian: %w", err)
	}
	var first error
	for _, r := range reqs {
		line, err := g.rd.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("guardian: %w", err)
		}
		var rep wire.GuardianReply
		if err := json.Unmarshal(line, &rep); err != nil {
			return fmt.Errorf("guardian reply: %w", err)
		}
		if rep.Error != "" && first == nil {
			first = fmt.Errorf("%s: %s", r.Path, rep.Error)
		}
	}
	return first
}

// finish tells the guardian the sandbox is over and waits for its cleanup.
func (g *guardian) finish() error {
	// "done" says srt saw bubblewrap end; without it the guardian knows srt
	// died and ends bubblewrap's process group itself.
	g.conn.SetDeadline(time.Now().Add(5 * time.Second))
	g.call(wire.GuardianRequest{Op: wire.GuardianDone})
	g.conn.Close()
	return g.cmd.Wait()
}

// RunGuardian is the guardian's main function; args are the arguments after
// wire.GuardianArg. It never returns.
func RunGuardian(args []string) {
	// Terminal and job-control signals must not cut the cleanup short.
	signal.Ignore(unix.SIGINT, unix.SIGHUP, unix.SIGTERM, unix.SIGQUIT, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU)
	if len(args) != 1 {
		os.Exit(wire.ExitSetup)
	}
	g := &guardianState{locks: filepath.Join(args[0], "locks")}
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

type held struct {
	path, lock string
	fd         int
}

type guardianState struct {
	locks string
	held  []held
	pids  []int
	// pgid is bubblewrap's process group; done says srt finished normally.
	pgid int
	done bool
}

func (g *guardianState) handle(req wire.GuardianRequest) (wire.GuardianReply, error) {
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
		g.pids = append(g.pids, req.PIDs...)
		if len(req.PIDs) > 0 {
			g.pgid = req.PIDs[0] // bubblewrap leads its own process group
		}
		return wire.GuardianReply{}, nil
	}
	return wire.GuardianReply{}, fmt.Errorf("unknown guardian op %q", req.Op)
}

func lockName(dir, path string) string {
	sum := sha256.Sum256([]byte(path))
	return filepath.Join(dir, hex.EncodeToString(sum[:16]))
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
func (g *guardianState) acquire(path string, dir, create bool, content string) (bool, error) {
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
		created := false
		if create {
			created, err = createPlaceholder(path, dir, content)
			if err != nil {
				unix.Close(fd)
				return false, err
			}
			if created {
				writeMarker(fd, path)
			}
		}
		g.held = append(g.held, held{path: path, lock: lock, fd: fd})
		return created, nil
	}
	return false, fmt.Errorf("placeholder %s: lock kept changing", path)
}

// createPlaceholder creates an empty file or directory at path, refusing to
// follow any symbolic link on the way (openat2 RESOLVE_NO_SYMLINKS). It
// reports false when something already exists there.
func createPlaceholder(path string, dir bool, content string) (bool, error) {
	parent, name := filepath.Split(path)
	pfd, err := unix.Openat2(unix.AT_FDCWD, parent, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return false, fmt.Errorf("placeholder %s: %w", path, err)
	}
	defer unix.Close(pfd)
	if dir {
		err = unix.Mkdirat(pfd, name, 0o755)
	} else {
		var fd int
		fd, err = unix.Openat(pfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if err == nil {
			if content != "" {
				unix.Write(fd, []byte(content))
			}
			unix.Close(fd)
		}
	}
	if errors.Is(err, unix.EEXIST) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("placeholder %s: %w", path, err)
	}
	return true, nil
}

// writeMarker records the placeholder's identity in its lock file, so that
// whichever guardian is last can tell the placeholder from a file a person
// created at the same name.
func writeMarker(fd int, path string) {
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil {
		return
	}
	unix.Ftruncate(fd, 0)
	unix.Pwrite(fd, []byte(fmt.Sprintf("%d %d %d\n", st.Dev, st.Ino, st.Size)), 0)
}

// readMarker returns the placeholder's device, inode and size as created.
func readMarker(fd int) (dev, ino uint64, size int64, ok bool) {
	buf := make([]byte, 96)
	n, _ := unix.Pread(fd, buf, 0)
	f := strings.Fields(string(buf[:max(n, 0)]))
	if len(f) != 3 {
		return 0, 0, 0, false
	}
	d, err1 := strconv.ParseUint(f[0], 10, 64)
	i, err2 := strconv.ParseUint(f[1], 10, 64)
	sz, err3 := strconv.ParseInt(f[2], 10, 64)
	return d, i, sz, err1 == nil && err2 == nil && err3 == nil
}

func sameFile(fd int, path string) bool {
	var a, b unix.Stat_t
	return unix.Fstat(fd, &a) == nil && unix.Stat(path, &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino
}

// waitDead waits until every watched process has exited, so that no
// placeholder is removed while a sandbox that relies on it still runs.
func (g *guardianState) waitDead() {
	for _, pid := range g.pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // already gone
		}
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
func (g *guardianState) cleanup() {
	// Deepest first, so that a directory placeholder is empty by the time
	// its turn comes.
	slices.SortStableFunc(g.held, func(a, b held) int { return len(b.path) - len(a.path) })
	for _, h := range g.held {
		if unix.Flock(h.fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
			unix.Close(h.fd)
			continue
		}
		var st unix.Stat_t
		dev, ino, size, ok := readMarker(h.fd)
		if ok && unix.Lstat(h.path, &st) == nil && uint64(st.Dev) == dev && st.Ino == ino {
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFDIR:
				unix.Rmdir(h.path) // fails, and keeps it, if someone filled it
			case unix.S_IFREG:
				if st.Size == size {
					unix.Unlink(h.path)
				}
			}
		}
		unix.Unlink(h.lock)
		unix.Close(h.fd)
	}
}
