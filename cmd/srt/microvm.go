package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"

	"github.com/srt-go/srt/microvm"
	"github.com/srt-go/srt/settings"
)

// runMicroVM runs argv in a virtual machine (srt --backend microvm): the
// working directory is shared at the same path, the settings' network
// lists filter the VM's only way out, and nothing else of the host is
// visible. There is never a fallback to the host: a host that cannot
// start a VM is srt's own failure (125).
func runMicroVM(s *settings.Settings, argv []string, lg *slog.Logger, stdin, stdout, stderr *os.File) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Kill)
	defer stop()
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(stderr, "srt: working directory: %v\n", err)
		return exitSetup
	}
	code, err := microvm.RunCommand(ctx, microvm.RunConfig{
		Settings: s,
		Workdir:  cwd,
		VM:       microvm.Config{Logger: lg},
	}, argv, microvm.Stdio{In: stdin, Out: stdout, Err: stderr})
	if err != nil {
		var ue *microvm.UnavailableError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "srt: --backend microvm: this host cannot start a virtual machine: %v\n", err)
		} else {
			fmt.Fprintf(stderr, "srt: --backend microvm: %v\n", err)
		}
		return exitSetup
	}
	return code
}
