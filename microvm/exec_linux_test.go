package microvm_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/srt-go/srt/microvm"
)

// run runs argv in vm and returns its status, stdout and stderr.
func run(t *testing.T, vm *microvm.VM, argv []string, stdin string) (int, string, string) {
	t.Helper()
	code, out, errs, err := runE(vm, argv, stdin)
	if err != nil {
		t.Fatal(err)
	}
	return code, out, errs
}

// runE is run for goroutines other than the test's.
func runE(vm *microvm.VM, argv []string, stdin string) (int, string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	req := microvm.ExecRequest{Argv: argv, Stdout: &out, Stderr: &errb}
	if stdin != "" {
		req.Stdin = strings.NewReader(stdin)
	}
	p, err := vm.Exec(ctx, req)
	if err != nil {
		return 0, "", "", fmt.Errorf("Exec %q: %w", argv, err)
	}
	code, err := p.Wait()
	if err != nil {
		return 0, "", "", fmt.Errorf("Wait %q: %w", argv, err)
	}
	return code, out.String(), errb.String(), nil
}

func TestExecRoundTrip(t *testing.T) {
	vm := launch(t, microvm.Config{})
	if got := vm.State(); got != microvm.StateWarm {
		t.Fatalf("state after Launch = %s, want warm", got)
	}
	for _, tc := range []struct {
		name   string
		argv   []string
		stdin  string
		code   int
		stdout string
		stderr string
	}{
		{"exit-0", []string{"true"}, "", 0, "", ""},
		{"exit-42", []string{"sh", "-c", "exit 42"}, "", 42, "", ""},
		{"stdin-to-stdout", []string{"cat"}, "hello\nworld\n", 0, "hello\nworld\n", ""},
		{"stderr", []string{"sh", "-c", "echo oops >&2; exit 3"}, "", 3, "", "oops\n"},
		{"killed-by-signal", []string{"sh", "-c", "kill -TERM $$"}, "", 128 + 15, "", ""},
		{"guest-kernel", []string{"sh", "-c", "test -e /proc/version && ! test -e /etc/debian_version && echo own-kernel"}, "", 0, "own-kernel\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, vm, tc.argv, tc.stdin)
			if code != tc.code || out != tc.stdout || errs != tc.stderr {
				t.Errorf("got (%d, %q, %q), want (%d, %q, %q)", code, out, errs, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
	t.Run("concurrent-on-one-channel", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				in := strings.Repeat(fmt.Sprintf("proc%d\n", i), 1000)
				code, out, _, err := runE(vm, []string{"sh", "-c", "cat; exit " + strconv.Itoa(i)}, in)
				if err != nil || code != i || out != in {
					t.Errorf("process %d: exit %d, %d bytes of output, %v", i, code, len(out), err)
				}
			}()
		}
		wg.Wait()
	})
	t.Run("8MiB-of-output", func(t *testing.T) {
		var n countWriter
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		p, err := vm.Exec(ctx, microvm.ExecRequest{Argv: []string{"head", "-c", "8388608", "/dev/zero"}, Stdout: &n})
		if err != nil {
			t.Fatal(err)
		}
		if code, err := p.Wait(); code != 0 || err != nil || n != 8<<20 {
			t.Errorf("exit %d, %v, %d bytes", code, err, n)
		}
	})
	if _, err := vm.Exec(context.Background(), microvm.ExecRequest{Argv: []string{"no-such-program"}}); err == nil {
		t.Error("Exec of a missing program succeeded")
	}
}

type countWriter int

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

// TestGuestClockCaughtUp: a process starts with the guest's clock no
// longer behind the host's (wire.ExecRequest.UnixTime), though under TCG it
// falls seconds behind while the guest boots; make and git compare the
// command's file times with the host's.
func TestGuestClockCaughtUp(t *testing.T) {
	vm := launch(t, microvm.Config{})
	// Let the guest's clock fall behind if it does.
	time.Sleep(2 * time.Second)
	for i := 0; i < 3; i++ {
		start := time.Now()
		code, out, errs := run(t, vm, []string{"date", "+%s"}, "") // busybox: whole seconds
		end := time.Now()
		if code != 0 {
			t.Fatalf("date: %d %q", code, errs)
		}
		sec, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if sec < start.Unix()-1 || sec > end.Unix()+1 {
			t.Errorf("guest clock %d, host between %d and %d", sec, start.Unix(), end.Unix())
		}
	}
}
