//go:build darwin

package sandbox

import (
	"context"
	"log/slog"

	"github.com/srt-go/srt/sandbox/darwin"
	"github.com/srt-go/srt/settings"
)

// darwinHost runs commands under sandbox-exec with a Seatbelt profile
// generated from the same policy the Linux backend enforces.
type darwinHost struct {
	log *slog.Logger
}

// dispatchRole is Main's macOS part: Seatbelt re-executes nothing.
func dispatchRole() {}

func newHost(s *settings.Settings, lg *slog.Logger) (host, error) {
	// filesystem.enforceNamesAtCreation needs nothing here: Seatbelt
	// matches the profile's name rules when a name is created.
	if err := darwin.Probe(); err != nil {
		return nil, err
	}
	return &darwinHost{log: lg}, nil
}

func (h *darwinHost) start(ctx context.Context, c *Cmd) (process, error) {
	cfg := darwin.Config{
		Policy:      c.Policy,
		Argv:        c.Args,
		Env:         c.Env,
		Dir:         c.Dir,
		Stdin:       c.Stdin,
		Stdout:      c.Stdout,
		Stderr:      c.Stderr,
		KeepFDs:     c.KeepFDs,
		Logger:      h.log,
		OnViolation: c.report,
	}
	// Seatbelt's denials (filesystem, and the network, mach and other
	// operations the profile refuses) are read from the unified log by a
	// `log stream` per run, which costs a process and a start-up
	// handshake (sandbox/darwin/monitor.go): like Linux's filesystem
	// observation, only with ObserveFilesystem.
	if c.m.observeFS {
		cfg.OnSandboxViolation = c.report
	}
	return darwin.Start(ctx, cfg)
}
