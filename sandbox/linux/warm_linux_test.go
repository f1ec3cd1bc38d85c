package linux

import (
	"errors"
	"fmt"
	"os/exec"
	"testing"
)

// TestWarmKillError: Kill reports a failed placeholder cleanup, matched
// by its sentinel, and no other way the sandbox ended, whatever the
// message says.
func TestWarmKillError(t *testing.T) {
	cleanup := &SetupError{fmt.Errorf("%w: %w", errPlaceholderCleanup, errors.New("exit status 1"))}
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"cleanup", cleanup, cleanup},
		{"other", setupErr("cannot protect a missing path: placeholders: /x: exists"), nil},
		{"none", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("true")
			if err := cmd.Run(); err != nil {
				t.Fatal(err)
			}
			initPID := make(chan int)
			close(initPID)
			done := make(chan struct{})
			close(done)
			w := &Warm{proc: &Process{cmd: cmd, initPID: initPID}, done: done, err: tc.err}
			if got := w.Kill(); got != tc.want {
				t.Errorf("Kill = %v, want %v", got, tc.want)
			}
		})
	}
	if got := cleanup.Error(); got != "cleaning up placeholders: exit status 1" {
		t.Errorf("message %q", got)
	}
}
