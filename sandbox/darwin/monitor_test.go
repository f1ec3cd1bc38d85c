package darwin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/srt-go/srt/violation"
)

// fakeTools writes stand-ins for log(1) and logger(1) in a fresh
// directory: log prints the stream's banner and then follows a file of
// events (as `log stream` follows the unified log), logger appends the
// ndjson event logger(1) would produce, and events appends a line to the
// file (a denial the kernel logged). logScript replaces log's body when
// set; loggerScript replaces logger's.
func fakeTools(t *testing.T, logScript, loggerScript string) (monitorTools, func(line string)) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("needs /bin/sh")
	}
	if _, err := exec.LookPath("tail"); err != nil {
		t.Skip("needs tail")
	}
	dir := t.TempDir()
	events := filepath.Join(dir, "events")
	if err := os.WriteFile(events, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	logger := filepath.Join(dir, "logger")
	if logScript == "" {
		logScript = fmt.Sprintf("printf '%%s\\n' \"$@\" > %s/args\necho 'Filtering the log data using \"...\"'\nexec tail -n +1 -f %s\n", dir, events)
	}
	if loggerScript == "" {
		loggerScript = fmt.Sprintf("printf '{\"processID\":%%d,\"processImagePath\":\"%s\",\"eventMessage\":\"%%s\"}\\n' $$ \"$1\" >> %s\n", logger, events)
	}
	for name, body := range map[string]string{"log": logScript, "logger": loggerScript} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	tools := monitorTools{
		log: filepath.Join(dir, "log"), logger: logger,
		ready: 10 * time.Second, drain: 10 * time.Second,
		markerEvery: 20 * time.Millisecond, markerTimeout: 5 * time.Second,
	}
	return tools, func(line string) {
		f, err := os.OpenFile(events, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(line + "\n"); err != nil {
			t.Fatal(err)
		}
	}
}

// collector records the violations a Monitor reports.
type collector struct {
	mu sync.Mutex
	vs []violation.Violation
}

func (c *collector) on(v violation.Violation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.vs = append(c.vs, v)
}

func (c *collector) got() []violation.Violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]violation.Violation(nil), c.vs...)
}

func TestMonitor(t *testing.T) {
	tools, emit := fakeTools(t, "", "")
	tag, other := NewTag("touch /etc/x"), NewTag("touch /etc/x")
	var c collector
	m, err := startMonitor(context.Background(), tools, tag, c.on, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.ready:
	default:
		t.Fatal("StartMonitor returned before the stream showed its marker")
	}
	args, err := os.ReadFile(filepath.Join(filepath.Dir(tools.log), "args"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "stream\n--style\nndjson\n--predicate\n" + LogPredicate(tag, strings.TrimPrefix(m.readyMarker, "srt-log-ready-")) + "\n"; string(args) != want {
		t.Errorf("log arguments:\n%s\nwant:\n%s", args, want)
	}
	emit(kernelEvent("Sandbox: touch(4242) deny(1) file-write-create /etc/x\n" + other))
	emit(`{"processID":0,"eventMessage":"Sandbox: touch(4242) deny(1) file-write`)
	emit(kernelEvent("Sandbox: touch(4242) deny(1) file-write-create /etc/x\n" + tag))
	// Stop waits for the drained marker, which comes after the denial.
	m.Stop()
	vs := c.got()
	if len(vs) != 1 || vs[0].Action != violation.FileWriteCreate || vs[0].Target != "/etc/x" || vs[0].PID != 4242 || vs[0].Time.IsZero() {
		t.Fatalf("violations %+v", vs)
	}
	select {
	case <-m.drained:
	default:
		t.Error("Stop returned before the stream caught up")
	}
	select {
	case <-m.done:
	default:
		t.Error("log stream still running after Stop")
	}
	// Nothing is reported after Stop, and a second Stop returns.
	emit(kernelEvent("Sandbox: touch(4242) deny(1) file-write-create /etc/y\n" + tag))
	m.Stop()
	time.Sleep(50 * time.Millisecond)
	if n := len(c.got()); n != 1 {
		t.Errorf("%d violations after Stop", n)
	}
}

// A stream that never shows the marker delays the command by the ready
// timeout only, and Stop does not wait for a drain it cannot see.
func TestMonitorNotAttached(t *testing.T) {
	tools, emit := fakeTools(t, "", "exit 0\n")
	tools.ready, tools.drain = 200*time.Millisecond, 10*time.Second
	tag := NewTag("ls")
	var c collector
	start := time.Now()
	m, err := startMonitor(context.Background(), tools, tag, c.on, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < tools.ready || d > 5*time.Second {
		t.Errorf("StartMonitor took %v", d)
	}
	emit(kernelEvent("Sandbox: ls(7) deny(1) file-read-data /Users/me/.ssh/id_ed25519\n" + tag))
	deadline := time.Now().Add(5 * time.Second)
	for len(c.got()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	start = time.Now()
	m.Stop()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Stop took %v", d)
	}
	if vs := c.got(); len(vs) != 1 || vs[0].Target != "/Users/me/.ssh/id_ed25519" {
		t.Errorf("violations %+v", vs)
	}
}

// log(1) refusing to stream (a user outside the admin group) is an
// error that says why, returned without waiting for the ready timeout.
func TestMonitorLogRefuses(t *testing.T) {
	tools, _ := fakeTools(t, "echo \"log: Must be admin to run 'stream' command\" >&2\nexit 64\n", "")
	start := time.Now()
	m, err := startMonitor(context.Background(), tools, NewTag("ls"), func(violation.Violation) {}, nil)
	if err == nil {
		m.Stop()
		t.Fatal("no error")
	}
	if !strings.Contains(err.Error(), "Must be admin") || !strings.Contains(err.Error(), "exit status 64") {
		t.Errorf("error %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	if _, err := startMonitor(context.Background(), tools, "bad tag\"", func(violation.Violation) {}, nil); err == nil {
		t.Error("a bad tag was accepted")
	}
	tools.log = filepath.Join(t.TempDir(), "missing")
	if _, err := startMonitor(context.Background(), tools, NewTag("ls"), func(violation.Violation) {}, nil); err == nil {
		t.Error("a missing log(1) was accepted")
	}
}

// Cancelling the context ends the stream; Stop then returns at once.
func TestMonitorCancel(t *testing.T) {
	tools, _ := fakeTools(t, "", "")
	ctx, cancel := context.WithCancel(context.Background())
	m, err := startMonitor(ctx, tools, NewTag("ls"), func(violation.Violation) {}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-m.done:
	case <-time.After(5 * time.Second):
		t.Fatal("log stream still running after cancel")
	}
	start := time.Now()
	m.Stop()
	if d := time.Since(start); d > time.Second {
		t.Errorf("Stop took %v", d)
	}
}

func TestLineWriter(t *testing.T) {
	var lines []string
	w := &lineWriter{line: func(b []byte) { lines = append(lines, string(b)) }}
	long := strings.Repeat("x", maxLogLine+1)
	for _, chunk := range []string{"a", "b\nc", "\n\n", long[:10], long[10:], "\nd", "", "\ne", "\n" + long + "\nf\n", "partial"} {
		if n, err := w.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	want := []string{"ab", "c", "", "d", "e", "f"}
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Errorf("lines %q, want %q", lines, want)
	}
}
