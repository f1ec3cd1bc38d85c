package supervisor

// Opens that wait: a FIFO's for its other end, a file's while another
// process holds a lease on it. Each waits on a thread of its own and
// answers from there, so the loop goes on answering meanwhile.

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srt-go/srt/seccomp"
	"golang.org/x/sys/unix"
)

// waiters are the opens waiting on threads of their own.
type waiters struct {
	// pending counts the answers given from other goroutines; the
	// listener is closed only after pending is done (stop).
	pending sync.WaitGroup
	// count is the number of opens waiting, at most maxWaiters.
	count atomic.Int32
	// stopping is closed when the loop ends: a FIFO's wait is then
	// released.
	stopping chan struct{}
	// keepBounding is Config.BoundingCaps, for prepareCreatorThread.
	keepBounding bool
}

func newWaiters(keepBounding bool) *waiters {
	return &waiters{stopping: make(chan struct{}), keepBounding: keepBounding}
}

// stop releases the FIFO waits and waits until every waiting open has
// answered.
func (ws *waiters) stop() {
	close(ws.stopping)
	ws.pending.Wait()
}

// maxWaiters bounds the opens waiting at once (waiters.open: FIFOs,
// leases); more fail with ENFILE.
const maxWaiters = 64

// open opens obj with the caller's flags on a thread of its own and
// answers from there: a FIFO's open waits for the other end (fifo), and a
// file's waits while another process holds a lease on it (up to
// /proc/sys/fs/lease-break-time). Only a FIFO's wait can be ended early.
func (ws *waiters) open(rq request, obj int, flags uint64, fifo bool) verdict {
	if ws.count.Add(1) > maxWaiters {
		ws.count.Add(-1)
		return failed(unix.ENFILE) // each costs srt a thread: bounded
	}
	dup, err := unix.FcntlInt(uintptr(obj), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		ws.count.Add(-1)
		return failed(errnoOf(err))
	}
	ws.pending.Add(1)
	go func() {
		defer ws.pending.Done()
		defer ws.count.Add(-1)
		defer unix.Close(dup)
		if err := prepareCreatorThread(ws.keepBounding); err != nil {
			seccomp.Respond(rq.fd, rq.nt.ID, unix.EACCES)
			return
		}
		p := "/proc/self/fd/" + strconv.Itoa(dup)
		done, released := make(chan struct{}), make(chan bool, 1)
		if !fifo {
			released <- false
		} else {
			go ws.releaseFIFO(rq, p, done, released)
		}
		f := int(flags) &^ (unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW)
		nfd, err := unix.Open(p, f|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		close(done)
		if <-released {
			if err == nil {
				unix.Close(nfd)
			}
			seccomp.Respond(rq.fd, rq.nt.ID, unix.EINTR) // the caller is gone, or the sandbox is ending
			return
		}
		v := send(rq, nfd, err, flags)
		switch {
		case v.errno != 0:
			seccomp.Respond(rq.fd, rq.nt.ID, v.errno)
		case v.val != answered:
			seccomp.RespondValue(rq.fd, rq.nt.ID, v.val)
		}
	}()
	return verdict{val: answered}
}

// releaseFIFO ends the wait of an open of FIFO p (a /proc/self/fd path)
// when the caller is gone or the sandbox is ending, by opening both ends
// itself; it says on released whether it did.
func (ws *waiters) releaseFIFO(rq request, p string, done <-chan struct{}, released chan<- bool) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-done:
			released <- false
			return
		case <-ws.stopping:
		case <-t.C:
			if seccomp.IDValid(rq.fd, rq.nt.ID) {
				continue
			}
		}
		// O_RDWR is both ends, and never waits.
		r, err := unix.Open(p, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			time.Sleep(50 * time.Millisecond) // try again
			continue
		}
		<-done
		unix.Close(r)
		released <- true
		return
	}
}
