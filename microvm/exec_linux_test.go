package microvm_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/srt-go/srt/microvm"
)

// run runs argv in vm and returns its status, stdout and stderr.
func run(t *testing.T, vm *microvm.VM, argv []string, stdin string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	req := microvm.ExecRequest{Argv: argv, Stdout: &out, Stderr: &errb}
	if stdin != "" {
		req.Stdin = strings.NewReader(stdin)
	}
	p, err := vm.Exec(ctx, req)
	if err != nil {
		t.Fatalf("Exec %q: %v", argv, err)
	}
	code, err := p.Wait()
	if err != nil {
		t.Fatalf("Wait %q: %v", argv, err)
	}
	return code, out.String(), errb.String()
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
	if _, err := vm.Exec(context.Background(), microvm.ExecRequest{Argv: []string{"no-such-program"}}); err == nil {
		t.Error("Exec of a missing program succeeded")
	}
}
