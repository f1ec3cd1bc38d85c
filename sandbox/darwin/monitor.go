package darwin

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"sync"
	"time"

	"github.com/srt-go/srt/violation"
)

// The violation monitor runs `log stream` for one run and turns the
// kernel's Seatbelt denials carrying the run's tag into violations
// (ParseLogLine). It runs only on macOS (run_darwin.go starts it); the
// code is portable so that its start-up handshake and its stop are
// tested on Linux against stand-ins for log(1) and logger(1).
//
// The unified log does not replay: a denial logged before `log stream`
// is attached is lost (measured on a Mac: with no wait at all, three
// denials in four were missed; 50 ms was enough). So the monitor does
// not trust a fixed sleep: it logs a marker with logger(1) until the
// stream shows it, and only then lets the command start. At the end it
// does the same with a second marker, so that the denials of the
// command's last moments are read before the stream is stopped.

const (
	// logPath and loggerPath are macOS's unified-log tools.
	logPath    = "/usr/bin/log"
	loggerPath = "/usr/bin/logger"
	// readyTimeout bounds the wait for the stream to attach; after it
	// the command runs anyway (violations are reporting, never
	// enforcement) and its first denials may be missed.
	readyTimeout = time.Second
	// drainTimeout bounds the wait, after the command, for the stream to
	// catch up.
	drainTimeout = 500 * time.Millisecond
	// markerEvery is how often a marker is logged while waiting for it.
	markerEvery = 50 * time.Millisecond
	// maxLogLine is the longest event line read; a longer one (no
	// denial is: a path is at most 1024 bytes) is dropped whole.
	maxLogLine = 1 << 20
)

// monitorTools are the programs and timings a Monitor uses: the real
// ones (StartMonitor) or a test's.
type monitorTools struct {
	log, logger   string
	ready, drain  time.Duration
	markerEvery   time.Duration
	markerTimeout time.Duration
}

// Monitor is a running `log stream` for one run's denials.
type Monitor struct {
	tools         monitorTools
	tag           string
	readyMarker   string
	drainedMarker string
	on            func(violation.Violation)
	lg            *slog.Logger

	ctx                            context.Context
	cancel                         context.CancelFunc
	done                           chan struct{} // closed when log stream has exited and its output is read
	ready                          chan struct{} // closed when the ready marker was read
	drained                        chan struct{} // closed when the drained marker was read
	readyOne, drainedOne, stopOnce sync.Once
	stderr                         cappedBuffer // log stream's stderr; read after done
	waitErr                        error        // log stream's exit; read after done
}

// StartMonitor starts `log stream` for the run whose profile carries tag
// (NewTag) and returns once the stream is attached, or after
// readyTimeout (then the run's first denials may be missed, and a debug
// line says so). on is called for each denial, from one goroutine, and
// must not block. ctx bounds the stream; Stop ends it. It returns an
// error, and starts nothing, for a bad tag, or when log(1) does not
// start or exits at once (a user outside the admin group may not stream
// the log; srt run inside another sandbox may not either).
func StartMonitor(ctx context.Context, tag string, on func(violation.Violation), lg *slog.Logger) (*Monitor, error) {
	return startMonitor(ctx, monitorTools{
		log: logPath, logger: loggerPath,
		ready: readyTimeout, drain: drainTimeout,
		markerEvery: markerEvery, markerTimeout: 500 * time.Millisecond,
	}, tag, on, lg)
}

func startMonitor(ctx context.Context, t monitorTools, tag string, on func(violation.Violation), lg *slog.Logger) (*Monitor, error) {
	if !tagPattern.MatchString(tag) {
		return nil, fmt.Errorf("darwin: bad log tag %q", tag)
	}
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	var r [16]byte
	rand.Read(r[:])
	id := hex.EncodeToString(r[:])
	m := &Monitor{
		tools: t, tag: tag, on: on, lg: lg,
		readyMarker:   "srt-log-ready-" + id,
		drainedMarker: "srt-log-drained-" + id,
		done:          make(chan struct{}),
		ready:         make(chan struct{}),
		drained:       make(chan struct{}),
	}
	m.ctx, m.cancel = context.WithCancel(ctx)
	cmd := exec.CommandContext(m.ctx, t.log, "stream", "--style", "ndjson", "--predicate", LogPredicate(tag, id))
	cmd.Stdout = &lineWriter{line: m.line}
	cmd.Stderr = &m.stderr
	// Cancel kills log(1); WaitDelay stops waiting for its output even
	// if something it started holds the pipe.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		m.cancel()
		return nil, fmt.Errorf("starting %s stream: %w", t.log, err)
	}
	go func() {
		m.waitErr = cmd.Wait()
		close(m.done)
	}()
	if !m.handshake(m.readyMarker, m.ready, t.ready) {
		select {
		case <-m.done:
			m.cancel()
			return nil, fmt.Errorf("%s stream exited: %w: %s", t.log, m.exitErr(), bytes.TrimSpace(m.stderr.b))
		default:
		}
		lg.Debug("violation monitor: the log stream did not show its marker; the command's first denials may be missed", "after", t.ready)
	}
	return m, nil
}

// exitErr is why log stream ended; only after done.
func (m *Monitor) exitErr() error {
	if m.waitErr == nil {
		return errors.New("exit status 0")
	}
	return m.waitErr
}

// handshake logs marker every markerEvery until seen is closed (true),
// or the stream ends, the Monitor is cancelled, or timeout passes
// (false).
func (m *Monitor) handshake(marker string, seen <-chan struct{}, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(m.tools.markerEvery)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(m.ctx, m.tools.markerTimeout)
		if err := exec.CommandContext(ctx, m.tools.logger, marker).Run(); err != nil {
			m.lg.Debug("violation monitor: logging its marker", "error", err)
		}
		cancel()
		select {
		case <-seen:
			return true
		case <-m.done:
			return false
		case <-m.ctx.Done():
			return false
		case <-deadline.C:
			return false
		case <-tick.C:
		}
	}
}

// line handles one line of the stream: a marker, a denial, or nothing.
// It runs on the one goroutine that copies log stream's output.
func (m *Monitor) line(b []byte) {
	switch {
	case bytes.Contains(b, []byte(m.readyMarker)) && isMarker(b, m.readyMarker, m.tools.logger):
		m.readyOne.Do(func() { close(m.ready) })
	case bytes.Contains(b, []byte(m.drainedMarker)) && isMarker(b, m.drainedMarker, m.tools.logger):
		m.drainedOne.Do(func() { close(m.drained) })
	default:
		if v, ok := ParseLogLine(b, m.tag); ok {
			if v.Time.IsZero() {
				v.Time = time.Now()
			}
			m.on(v)
		}
	}
}

// Stop waits (at most drainTimeout) for the stream to catch up with what
// was logged so far, then ends it and returns once its last line is
// handled: no call to on happens after Stop returns. It is safe to call
// more than once; calls after the first return at once.
func (m *Monitor) Stop() {
	m.stopOnce.Do(func() {
		select {
		case <-m.ready:
			if !m.handshake(m.drainedMarker, m.drained, m.tools.drain) {
				m.lg.Debug("violation monitor: the log stream did not catch up; the command's last denials may be missed")
			}
		default:
		}
		m.cancel()
		<-m.done
		if len(m.stderr.b) > 0 {
			m.lg.Debug("violation monitor stopped", "stderr", string(bytes.TrimSpace(m.stderr.b)))
		}
	})
}

// lineWriter calls line for each newline-terminated line written to it
// (without the newline). A line longer than maxLogLine is dropped whole.
// The slice passed to line is only valid during the call.
type lineWriter struct {
	buf  []byte
	skip bool // the current line is too long: dropped up to its newline
	line func([]byte)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if !w.skip {
				w.buf = append(w.buf, p...)
				if len(w.buf) > maxLogLine {
					w.buf, w.skip = w.buf[:0], true
				}
			}
			break
		}
		if !w.skip {
			w.buf = append(w.buf, p[:i]...)
			if len(w.buf) <= maxLogLine {
				w.line(w.buf)
			}
		}
		w.buf, w.skip = w.buf[:0], false
		p = p[i+1:]
	}
	return n, nil
}

// cappedBuffer keeps the first 4 KiB written to it.
type cappedBuffer struct{ b []byte }

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := 4096 - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(len(p), room)]...)
	}
	return len(p), nil
}
