package sandbox

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/srt-go/srt/settings"
	"golang.org/x/term"
)

// TestCmdResize: Resize sets the size of the command's own pty, which is
// what stty reads inside, without SIGWINCH to this process and without
// touching the caller's terminal (srtd's case: the caller's terminal is
// not its controlling one).
func TestCmdResize(t *testing.T) {
	requireBwrap(t)
	m, err := NewManager(settings.Default(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 24, Cols: 80}); err != nil {
		t.Fatal(err)
	}
	if _, err := term.MakeRaw(int(tty.Fd())); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := m.Command(ctx, "sh", "-c", "stty size; read x; stty size")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := make(chan []byte, 64)
	go func() {
		for {
			b := make([]byte, 4096)
			n, err := ptmx.Read(b)
			if n > 0 {
				out <- b[:n]
			}
			if err != nil {
				close(out)
				return
			}
		}
	}()
	var seen []byte
	waitFor := func(want string) {
		t.Helper()
		for !bytes.Contains(seen, []byte(want)) {
			select {
			case b, ok := <-out:
				if !ok {
					t.Fatalf("no %q in %q", want, seen)
				}
				seen = append(seen, b...)
			case <-ctx.Done():
				t.Fatalf("no %q in %q", want, seen)
			}
		}
	}
	waitFor("24 80")
	if err := cmd.Resize(30, 100); err != nil {
		t.Fatal(err)
	}
	ptmx.Write([]byte("\n"))
	waitFor("30 100")
	if ws, err := pty.GetsizeFull(ptmx); err != nil || ws.Rows != 24 || ws.Cols != 80 {
		t.Errorf("the caller's terminal is %+v, %v; want it left at 24x80", ws, err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestCmdResizeNoTerminal: a command none of whose stdio is a terminal
// has nothing to resize.
func TestCmdResizeNoTerminal(t *testing.T) {
	requireBwrap(t)
	m, err := NewManager(settings.Default(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	cmd := m.Command(context.Background(), "true")
	if err := cmd.Resize(1, 1); err == nil {
		t.Error("Resize before Start succeeded")
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	if err := cmd.Resize(30, 100); err == nil || errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Resize without a terminal = %v, want an error", err)
	}
}
