package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/srt-go/srt/port"
)

// nextSandboxSSE returns the next event of ch, failing after 30 s or at
// the end of the stream.
func nextSandboxSSE(t *testing.T, ch <-chan sandboxSSE) sandboxSSE {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event in 30 s")
	}
	return sandboxSSE{}
}

// TestSrtdEventsReset: a Last-Event-ID of a former sandbox of the same id
// (destroyed, then launched again) or past the last seq is never answered
// with silence (issue 16, F5): the stream starts with a lost event with
// reason reset, then replays from the first kept event; the SSE ids carry
// the stream's tag, another for each sandbox, and the plain seq form is
// another stream's. A Last-Event-ID of the current stream still resumes.
func TestSrtdEventsReset(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		d := startSrtd(t, u, "--microvm", "off")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		launch := func() {
			if _, err := d.c.Launch(ctx, port.Spec{SessionID: "e", WorkspaceID: "w"}, port.BackendNative); err != nil {
				t.Fatal(err)
			}
		}
		launch()
		for range 2 {
			if out, code := d.sh(t, "e", "true"); code != 0 {
				t.Fatalf("exec: %d %s", code, out)
			}
		}
		// starting, ready, exit, exit.
		old := d.sandboxEventsAfter(t, "e", "")
		var last sandboxSSE
		for range 4 {
			last = nextSandboxSSE(t, old)
		}
		if last.Type != port.EventExit || last.Seq != 4 {
			t.Fatalf("fourth event %+v; want the second exit, seq 4", last)
		}
		oldTag, _, _ := strings.Cut(last.ID, ".")
		if _, err := d.c.Destroy(ctx, "e"); err != nil {
			t.Fatal(err)
		}
		launch()
		check := func(lastID string, wantSeq uint64) {
			t.Helper()
			evs := d.sandboxEventsAfter(t, "e", lastID)
			ev := nextSandboxSSE(t, evs)
			tag, _, _ := strings.Cut(ev.ID, ".")
			if tag == oldTag {
				t.Errorf("Last-Event-ID %s: the re-created sandbox's stream has the former's tag %s", lastID, tag)
			}
			if wantSeq == 0 {
				if ev.Type != port.EventLost || ev.Reason != port.LostReset || ev.Seq != 0 {
					t.Fatalf("Last-Event-ID %s: first %+v; want lost, reason reset, seq 0", lastID, ev)
				}
				ev = nextSandboxSSE(t, evs)
				wantSeq = 1
			}
			if ev.Seq != wantSeq {
				t.Errorf("Last-Event-ID %s: first seq %d %s, want %d", lastID, ev.Seq, ev.Type, wantSeq)
			}
		}
		check(last.ID, 0)           // the former sandbox's
		check("4", 0)               // the plain seq form
		check(oldTag[:11]+"x.1", 0) // another tag
		fresh := d.sandboxEventsAfter(t, "e", "")
		first := nextSandboxSSE(t, fresh)
		tag, _, _ := strings.Cut(first.ID, ".")
		check(tag+".99999", 0) // past the last seq
		check(tag+".1", 2)     // this stream's: resumes
		if first.Type != port.EventStarting || first.Seq != 1 {
			t.Errorf("re-created sandbox's first event %+v", first)
		}
	})
}
