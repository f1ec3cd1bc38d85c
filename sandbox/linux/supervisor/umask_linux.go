package supervisor

// The callers' umasks, which srt applies to every creation it makes for
// them: read from /proc/TID/status once per thread, then kept from the
// umask(2) calls the filter notifies (seccomp.Table's "umask").
//
// A umask belongs to an fs_struct: copied at fork, shared by the threads
// (and processes) cloned with CLONE_FS, unshared by unshare(CLONE_FS).
// srt cannot see which threads share one, so a umask(2) call by any
// thread forgets every cached mask. The call is answered CONTINUE and the
// kernel sets the mask after srt has answered, so until it has certainly
// taken effect no mask read from /proc is kept (a sharer read meanwhile
// shows the old one; used once, that is a correct order of two
// concurrent calls, kept it would not be). A umask call has taken effect,
// or never will, once its thread makes another notified call, its
// thread's mask reads as the one it set (applying it again then changes
// nothing), or its thread is gone.
//
// Thread IDs are reused: a cached mask is kept with a pidfd of its thread
// (PIDFD_THREAD, Linux 6.9; before that a thread-group leader's plain
// pidfd) and used only while that thread lives, since a live thread's ID
// names no other thread. Where no pidfd can be had, nothing is cached
// and every creation reads /proc.

import (
	"bytes"
	"strconv"

	"golang.org/x/sys/unix"
)

// pidfdThread is PIDFD_THREAD (include/uapi/linux/pidfd.h: O_EXCL): a
// pidfd of one thread, readable when that thread has exited.
const pidfdThread = unix.O_EXCL

// defaultUmask is used for a thread whose status cannot be read (it is
// gone: the call it made fails anyway).
const defaultUmask = 0o022

// maxCachedUmasks bounds the cache (each entry holds a pidfd).
const maxCachedUmasks = 256

// umaskCache holds the callers' umasks. Used by the notification loop's
// thread only.
type umaskCache struct {
	threads map[int]cachedUmask // by host TID
	// pending are the umask calls answered CONTINUE that may not have
	// taken effect yet.
	pending []pendingUmask
	// noThreadPidfd: the kernel refused PIDFD_THREAD (before 6.9).
	noThreadPidfd bool
}

type cachedUmask struct{ pidfd, mask int }

type pendingUmask struct {
	tid, mask int
	pidfd     int // -1 without one
}

func newUmaskCache() *umaskCache { return &umaskCache{threads: map[int]cachedUmask{}} }

// of returns the umask of thread tid, which waits in a notified call.
func (c *umaskCache) of(tid int) int {
	if e, ok := c.threads[tid]; ok {
		if alive(e.pidfd) {
			return e.mask
		}
		unix.Close(e.pidfd)
		delete(c.threads, tid)
	}
	c.settle(tid)
	pidfd := c.pidfd(tid) // before the read: the mask is then that thread's or newer
	mask, err := readUmask(tid)
	if err != nil || pidfd < 0 || len(c.pending) > 0 {
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
		return mask
	}
	if len(c.threads) >= maxCachedUmasks {
		c.forget()
	}
	c.threads[tid] = cachedUmask{pidfd: pidfd, mask: mask}
	return mask
}

// called is told of thread tid's umask(mask) call before srt lets it run.
func (c *umaskCache) called(tid int, mask uint64) {
	c.settle(tid) // its own earlier umask call has returned
	c.forget()
	c.pending = append(c.pending, pendingUmask{tid: tid, mask: int(mask & 0o777), pidfd: c.pidfd(tid)})
}

// settle drops the pending umask calls that have taken effect (or never
// will); tid is the thread making the call being answered.
func (c *umaskCache) settle(tid int) {
	kept := c.pending[:0]
	for _, p := range c.pending {
		if p.tid == tid || p.pidfd >= 0 && !alive(p.pidfd) || umaskIs(p.tid, p.mask) {
			if p.pidfd >= 0 {
				unix.Close(p.pidfd)
			}
			continue
		}
		kept = append(kept, p)
	}
	c.pending = kept
}

// forget empties the cache.
func (c *umaskCache) forget() {
	for _, e := range c.threads {
		unix.Close(e.pidfd)
	}
	clear(c.threads)
}

func (c *umaskCache) close() {
	c.forget()
	for _, p := range c.pending {
		if p.pidfd >= 0 {
			unix.Close(p.pidfd)
		}
	}
	c.pending = nil
}

// pidfd opens a pidfd of thread tid; -1 if it cannot.
func (c *umaskCache) pidfd(tid int) int {
	if !c.noThreadPidfd {
		fd, err := unix.PidfdOpen(tid, pidfdThread)
		if err == nil {
			return fd
		}
		if err != unix.EINVAL {
			return -1
		}
		c.noThreadPidfd = true
	}
	fd, err := unix.PidfdOpen(tid, 0) // a thread-group leader's only
	if err != nil {
		return -1
	}
	return fd
}

// alive reports whether the thread of pidfd has not exited.
func alive(pidfd int) bool {
	p := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(p, 0)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n == 0
	}
}

// umaskIs reports whether thread tid's umask is mask, or it is gone.
func umaskIs(tid, mask int) bool {
	m, err := readUmask(tid)
	return err == nil && m == mask || err == unix.ENOENT || err == unix.ESRCH
}

// readUmask returns the Umask line of /proc/TID/status (its second line:
// the first 512 bytes hold it; Name is at most 64 bytes escaped), or
// defaultUmask and the error (ENOENT, ESRCH: the thread is gone).
func readUmask(tid int) (int, error) {
	fd, err := unix.Open("/proc/"+strconv.Itoa(tid)+"/status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return defaultUmask, err
	}
	defer unix.Close(fd)
	var buf [512]byte
	n, err := unix.Read(fd, buf[:])
	if err != nil {
		return defaultUmask, err
	}
	for line := range bytes.Lines(buf[:n]) {
		if rest, ok := bytes.CutPrefix(line, []byte("Umask:")); ok {
			m, err := strconv.ParseUint(string(bytes.TrimSpace(rest)), 8, 32)
			if err != nil {
				return defaultUmask, unix.EINVAL
			}
			return int(m), nil
		}
	}
	return defaultUmask, unix.EINVAL
}

// setUmask gives the answering thread the umask of thread tid, with a
// system call only when it differs from the one it has.
func (c *creator) setUmask(tid int) {
	if m := c.umasks.of(tid); m != c.threadUmask {
		unix.Umask(m)
		c.threadUmask = m
	}
}
