package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync/atomic"

	"github.com/srt-go/srt/sandbox"
	"github.com/srt-go/srt/settings"
)

// controlName is the name settings errors give a --control-fd line.
func controlName(fd int) string { return "control fd " + strconv.Itoa(fd) }

// parseControlFD checks the --control-fd argument: an integer >= 3.
func parseControlFD(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 3 {
		return 0, fmt.Errorf("--control-fd %q is invalid: it must be an integer file descriptor >= 3 (0-2 are stdin, stdout and stderr)", s)
	}
	return n, nil
}

// maxControlLine bounds one --control-fd line; a settings object is a few
// kilobytes.
const maxControlLine = 1 << 20

// serveControl reads JSON lines from r, the --control-fd descriptor fd,
// until end of file (srt-notes §2.5). Each line is a complete settings
// object, checked like the settings file; its network lists replace
// those of the running command through update. A line that does not
// validate, or that update refuses, is reported on stderr and ignored:
// the previous settings stay in force. Blank lines are ignored.
//
// It returns nil at end of file, or the read error. lines counts the
// lines applied so far, so a caller can tell a channel that failed before
// delivering anything.
func serveControl(r io.Reader, fd int, update func(settings.Network) error, stderr io.Writer, lines *int) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br)
		if len(bytes.TrimSpace(line)) > 0 {
			applyControlLine(line, fd, update, stderr)
			*lines++
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// readLine returns the next line without its newline; an over-long line
// is returned truncated (and then fails to parse) and the rest skipped.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) <= maxControlLine {
			line = append(line, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), err
	}
}

func applyControlLine(line []byte, fd int, update func(settings.Network) error, stderr io.Writer) {
	name := controlName(fd)
	s, err := settings.Parse(line, name)
	if err == nil {
		err = update(s.Network)
		if err != nil {
			err = fmt.Errorf("%s: %w", name, err)
		}
	}
	if err != nil {
		// A *settings.Error already starts with the name.
		fmt.Fprintf(stderr, "srt: %v; ignored, previous settings still in force\n", err)
	}
}

// controlChannel opens the --control-fd descriptor; nil when the option
// was not given.
func (o *options) controlChannel() (*os.File, int, error) {
	if !o.controlSet {
		return nil, 0, nil
	}
	fd, err := parseControlFD(o.controlArg)
	if err != nil {
		return nil, 0, err
	}
	f, err := openControlFD(fd)
	return f, fd, err
}

// startControl reads the control channel ctl (descriptor fd) for the
// running cmd in the background. A channel that fails before delivering
// any line stops the command (stop), as the reference does, and the
// returned func then reports true, once the command has ended, so that srt
// exits 125. A nil ctl does nothing.
func startControl(ctl *os.File, fd int, cmd *sandbox.Cmd, stderr io.Writer, stop func()) (failed func() bool) {
	var bad atomic.Bool
	if ctl == nil {
		return bad.Load
	}
	go func() {
		defer ctl.Close()
		lines := 0
		err := serveControl(ctl, fd, cmd.UpdateNetwork, stderr, &lines)
		if err == nil {
			return
		}
		if lines > 0 {
			fmt.Fprintf(stderr, "srt: %s: %v; the settings last received stay in force\n", controlName(fd), err)
			return
		}
		fmt.Fprintf(stderr, "srt: %s: %v; stopping the command, which asked for a control channel that never worked\n", controlName(fd), err)
		bad.Store(true)
		stop()
	}()
	return bad.Load
}
