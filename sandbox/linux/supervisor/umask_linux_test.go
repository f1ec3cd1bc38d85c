package supervisor

import (
	"os/exec"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// lockedThread runs a goroutine locked to a thread of its own and returns
// its thread ID; the thread lives until stop is closed. The test
// process's threads share one fs_struct, so one umask.
func lockedThread(t *testing.T) int {
	tid := make(chan int)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		runtime.LockOSThread()
		tid <- unix.Gettid()
		<-stop
	}()
	return <-tid
}

// TestUmaskCacheSiblingReadDuringUmask: a sibling's mask read after a
// umask(2) call was answered but before the kernel applied it is used
// once and not kept; once the call has taken effect, the new mask is.
func TestUmaskCacheSiblingReadDuringUmask(t *testing.T) {
	old := unix.Umask(0o022)
	defer unix.Umask(old)
	a, b := lockedThread(t), lockedThread(t)
	c := newUmaskCache()
	defer c.close()
	if m := c.of(b); m != 0o022 {
		t.Fatalf("b: %o, want 022", m)
	}
	if _, ok := c.threads[b]; !ok {
		t.Fatal("b's mask not kept")
	}
	c.called(a, 0o077) // answered CONTINUE; the kernel has not set it yet
	if m := c.of(b); m != 0o022 {
		t.Fatalf("b before the umask took effect: %o, want the old 022", m)
	}
	if _, ok := c.threads[b]; ok {
		t.Fatal("b's mask kept while a's umask call may not have taken effect")
	}
	unix.Umask(0o077) // the kernel runs a's call
	if m := c.of(b); m != 0o077 {
		t.Fatalf("b after: %o, want 077", m)
	}
	if _, ok := c.threads[b]; !ok || len(c.pending) != 0 {
		t.Fatalf("after the umask took effect: kept %v, pending %d", ok, len(c.pending))
	}
}

// TestUmaskCacheOwnNextCall: the thread that called umask(2) making
// another call proves the first has returned, even when its mask then
// reads otherwise (another thread changed it since).
func TestUmaskCacheOwnNextCall(t *testing.T) {
	old := unix.Umask(0o022)
	defer unix.Umask(old)
	a := lockedThread(t)
	c := newUmaskCache()
	defer c.close()
	c.called(a, 0o077)
	unix.Umask(0o027) // a's call ran, then someone else's
	if m := c.of(a); m != 0o027 {
		t.Fatalf("a: %o, want 027", m)
	}
	if len(c.pending) != 0 {
		t.Fatal("a's call still pending after a's next call")
	}
}

// TestUmaskCacheExitedThread: a kept mask is not used for a thread ID
// whose thread has exited (its ID may be another thread's now).
func TestUmaskCacheExitedThread(t *testing.T) {
	old := unix.Umask(0o077)
	cmd := exec.Command("sleep", "30")
	err := cmd.Start()
	unix.Umask(old)
	if err != nil {
		t.Skip(err)
	}
	pid := cmd.Process.Pid
	c := newUmaskCache()
	defer c.close()
	if m := c.of(pid); m != 0o077 {
		t.Fatalf("child: %o, want 077", m)
	}
	if _, ok := c.threads[pid]; !ok {
		t.Fatal("child's mask not kept")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if m := c.of(pid); m != defaultUmask {
		t.Fatalf("after exit: %o, want a fresh read (%o for a thread that is gone)", m, defaultUmask)
	}
	if _, ok := c.threads[pid]; ok {
		t.Fatal("a gone thread's mask is still kept")
	}
}
