package linux

import (
	"errors"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// terminal gives the sandboxed command a pseudo-terminal of its own when
// srt runs in one, and relays between the two, as sudo's use_pty does.
//
// Why: a command that holds the caller's terminal can push keystrokes into
// the caller's shell with ioctl(TIOCSTI) or TIOCLINUX, which run after srt
// exits, outside the sandbox (CVE-2017-5226 for bubblewrap;
// dev.tty.legacy_tiocsti is 1 on many kernels). bubblewrap's --new-session
// blocks that but leaves the command without a controlling terminal, so
// shells and editors break. With a pty of its own the command has a real
// controlling terminal (job control, vim, resize), and whatever it injects
// lands in its own input.
type terminal struct {
	ptmx, tty *os.File
	// ctty is the command's descriptor (0-2) that is the pty.
	ctty    int
	real    *os.File // the caller's terminal, for size and raw mode
	in      *os.File // the caller's stdin when it is the terminal, else nil
	out     io.Writer
	restore *term.State
	winch   chan os.Signal
	drained chan struct{}
}

// errNoTerminal: Resize of a command none of whose stdio is a terminal.
var errNoTerminal = errors.New("the sandboxed command has no terminal to resize")

func isTerminal(x any) (*os.File, bool) {
	f, ok := x.(*os.File)
	return f, ok && f != nil && term.IsTerminal(int(f.Fd()))
}

// newTerminal replaces each of stdin, stdout and stderr that is a terminal
// by a new pty's slave. It returns nil when none is a terminal.
func newTerminal(stdin *io.Reader, stdout, stderr *io.Writer) (*terminal, error) {
	in, inTTY := isTerminal(*stdin)
	out, outTTY := isTerminal(*stdout)
	errf, errTTY := isTerminal(*stderr)
	if !inTTY && !outTTY && !errTTY {
		return nil, nil
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		return nil, err
	}
	t := &terminal{ptmx: ptmx, tty: tty, ctty: -1, drained: make(chan struct{})}
	switch {
	case outTTY:
		t.real, t.out = out, out
	case errTTY:
		t.real, t.out = errf, errf
	default:
		t.real, t.out = in, in // echo of what is typed goes back to the terminal
	}
	if inTTY {
		t.in, t.real = in, in
		*stdin = tty
		t.ctty = 0
	}
	if outTTY {
		*stdout = tty
		if t.ctty < 0 {
			t.ctty = 1
		}
	}
	if errTTY {
		*stderr = tty
		if t.ctty < 0 {
			t.ctty = 2
		}
	}
	pty.InheritSize(t.real, ptmx)
	return t, nil
}

// start puts the caller's terminal in raw mode (when srt is in its
// foreground process group; a background srt must not touch it) and starts
// relaying.
func (t *terminal) start() {
	if t.in != nil && foreground(t.in) {
		if st, err := term.MakeRaw(int(t.in.Fd())); err == nil {
			t.restore = st
		}
	}
	t.winch = make(chan os.Signal, 1)
	// The kernel tells srt of a resize with SIGWINCH only when the
	// caller's terminal is srt's controlling terminal (the command line);
	// srtd, which holds a terminal of its own for each session, calls
	// resize instead.
	if controlling(t.real) {
		signal.Notify(t.winch, unix.SIGWINCH)
	}
	go func() {
		for range t.winch {
			pty.InheritSize(t.real, t.ptmx)
		}
	}()
	if t.in != nil {
		go io.Copy(t.ptmx, t.in)
	}
	go func() {
		io.Copy(t.out, t.ptmx) // ends with EIO once every slave is closed
		close(t.drained)
	}()
}

// close waits for the command's last output, restores the caller's
// terminal and releases the pty.
func (t *terminal) close() {
	if t.winch != nil {
		select {
		case <-t.drained:
		case <-time.After(2 * time.Second):
		}
		signal.Stop(t.winch)
		close(t.winch)
	}
	if t.restore != nil {
		term.Restore(int(t.in.Fd()), t.restore)
	}
	t.tty.Close()
	t.ptmx.Close()
}

// resize sets the size of the command's pty to rows by cols characters;
// the kernel signals SIGWINCH to its foreground process group.
func (t *terminal) resize(rows, cols uint16) error {
	return unix.IoctlSetWinsize(int(t.ptmx.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
}

// controlling reports whether f is the controlling terminal of this
// process's session.
func controlling(f *os.File) bool {
	sid, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGSID)
	own, err2 := unix.Getsid(0)
	return err == nil && err2 == nil && sid == own
}

func foreground(f *os.File) bool {
	pgrp, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}
