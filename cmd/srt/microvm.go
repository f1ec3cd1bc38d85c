package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"

	"github.com/srt-go/srt/microvm"
	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/policy/dirindex"
	"github.com/srt-go/srt/settings"
)

// runMicroVM runs argv in a virtual machine (srt --backend microvm): the
// working directory is shared at the same path, the settings' network
// lists filter the VM's only way out, and the host's system directories
// are shown read-only (microvm.Config.System, minus microvm.SystemHidden
// and the policy's denyRead paths); nothing else of the host is visible.
// There is never a fallback to the host: a host that cannot
// start a VM is srt's own failure (125).
func runMicroVM(s *settings.Settings, argv []string, lg *slog.Logger, stdin, stdout, stderr *os.File) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Kill)
	defer stop()
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(stderr, "srt: working directory: %v\n", err)
		return exitSetup
	}
	// The VM sees the working directory and the host's system directories.
	// Until the guest can protect names that do not exist yet (the native
	// backend mounts placeholders for them), the share is read-only
	// whatever allowWrite says: a writable share would let the command
	// plant .bashrc or .git/hooks (found by an adversarial review).
	pol, err := policy.Compile(s, policy.Env{Cwd: cwd, DirIndex: dirindex.DefaultPath()})
	if err != nil {
		fmt.Fprintf(stderr, "srt: %v\n", err)
		return exitSetup
	}
	if pol.Network.TLS != nil {
		fmt.Fprintf(stderr, "srt: %v\n", s.ErrorAt("network.tlsTerminate", errors.New("not supported by the microvm backend yet; remove it or use the native backend")))
		return exitSetup
	}
	if s.Credentials != nil {
		// Neither the VM's environment nor its share is masked yet:
		// refuse rather than show a real value.
		fmt.Fprintf(stderr, "srt: %v\n", s.ErrorAt("credentials", errors.New("not supported by the microvm backend yet; remove it or use the native backend")))
		return exitSetup
	}
	readOnly := !pol.FilesystemDisabled
	// The host's userland is shown read-only (as the native sandbox shows
	// the whole host read-only), minus microvm.SystemHidden, and every
	// denyRead path in it or in the share is hidden host-side.
	denyRead, err := microvm.DenyReadOf(pol)
	if err != nil {
		fmt.Fprintf(stderr, "srt: --backend microvm: %v\n", err)
		return exitSetup
	}
	if !pol.FilesystemDisabled {
		if pol.Writable(pol.Cwd) {
			lg.Info("microvm: the working directory is shared read-only (writes stay in the VM): protected names cannot be enforced in a writable share yet")
		}
	}
	code, err := microvm.RunCommand(ctx, microvm.RunConfig{
		Settings: s,
		Workdir:  cwd,
		ReadOnly: readOnly,
		VM: microvm.Config{Logger: lg, Parent: pol.Network.Parent, Filter: pol.Network.Filter,
			System: policy.SystemDirs(policy.DefaultSystemDirs), DenyRead: denyRead},
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
