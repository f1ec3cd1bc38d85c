package linux

import (
	"io"
	"strings"
	"testing"
)

// TestReadInfoWatchesPID1: the host pid of the sandbox's PID 1, from
// bubblewrap's --info-fd, goes to the guardian too, which must outwait
// it (bubblewrap, killed, ends first).
func TestReadInfoWatchesPID1(t *testing.T) {
	out := make(chan int, 1)
	var watched []int
	readInfo(io.NopCloser(strings.NewReader(`{"child-pid": 4242, "cgroup-namespace": 1}`)), out, func(pid int) { watched = append(watched, pid) })
	if pid, ok := <-out; !ok || pid != 4242 {
		t.Errorf("out gave %d, %v; want 4242", pid, ok)
	}
	if _, ok := <-out; ok {
		t.Error("out not closed")
	}
	if len(watched) != 1 || watched[0] != 4242 {
		t.Errorf("watched %v, want [4242]", watched)
	}
	out = make(chan int, 1)
	readInfo(io.NopCloser(strings.NewReader(``)), out, func(pid int) { t.Errorf("watched %d without info", pid) })
	if _, ok := <-out; ok {
		t.Error("a pid without info")
	}
}
