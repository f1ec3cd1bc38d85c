package pdeathsig

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"
)

// startFrom runs start on a goroutine locked to its thread that returns
// right after, which ends the thread: what happens to a process forked
// from the thread of srt's seccomp listener.
func startFrom(t *testing.T, start func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends
		errc <- start()
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func sleeper() *exec.Cmd {
	cmd := exec.Command("sleep", "0.3")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// TestChildOutlivesThread: started through Start, the child survives the
// end of the thread that asked for it, and cmd.Wait still reaps it.
func TestChildOutlivesThread(t *testing.T) {
	cmd := sleeper()
	startFrom(t, func() error { return StartCmd(cmd) })
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the child did not exit normally: %v", err)
	}
}

// TestWithoutStartTheChildDies shows what Start prevents, so that the
// test above can fail.
func TestWithoutStartTheChildDies(t *testing.T) {
	cmd := sleeper()
	startFrom(t, cmd.Start)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("want the child killed by its parent-death signal, got %v", err)
	}
}

func TestStartError(t *testing.T) {
	cmd := exec.Command("/nonexistent/srt-test")
	if err := StartCmd(cmd); err == nil {
		t.Fatal("Start of a missing program succeeded")
	}
}
