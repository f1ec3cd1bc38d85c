package linux

import (
	"log/slog"
	"os"
	"slices"

	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/sandbox/linux/fsplan"
	"github.com/srt-go/srt/sandbox/linux/supervisor"
	"github.com/srt-go/srt/sandbox/linux/wire"
	"github.com/srt-go/srt/violation"
)

// This file runs in srt, before the sandbox starts: it sets the seccomp
// filter up to notify and creates the supervisor that answers it
// (sandbox/linux/supervisor; PID 1's half is sandbox/linux/inside's
// seccomp_linux.go).

// startNotifier sets spec up for a notifying filter and returns srt's side
// of it, when cfg asks for sandbox violations, creation-time rules or
// checked binds; nil (and spec untouched) otherwise. m is the plan's
// mapping, through which the supervisor judges the sandbox's paths.
func startNotifier(cfg Config, create bool, spec *wire.InitSpec, tmpdir string, m fsplan.Mapping, addFD func(*os.File) int, lg *slog.Logger) (*supervisor.Supervisor, error) {
	if cfg.OnSandboxViolation == nil && !create && !(spec.Seccomp.CheckBinds && !spec.Seccomp.AllowUnixSockets) {
		return nil, nil
	}
	spec.Seccomp.Notify = true
	if cfg.ObserveFilesystem && cfg.OnSandboxViolation != nil && !cfg.Policy.FilesystemDisabled {
		spec.Seccomp.ObserveWrites = true
		// Reads are observed only where one can be refused: every open
		// would otherwise pay the round trip for nothing. A confined
		// view's denyRead outside everything it shows (srtd's token) can
		// never be opened.
		spec.Seccomp.ObserveReads = slices.ContainsFunc(cfg.Policy.DenyRead, func(d policy.Path) bool {
			return cfg.Policy.View == nil || cfg.Policy.View.Visible(d.Resolved)
		})
	}
	if create {
		spec.Seccomp.EmulateCreates = true
		spec.RequireListener = true
	}
	on := cfg.OnSandboxViolation
	if on == nil {
		on = func(violation.Violation) {}
	}
	s, end, err := supervisor.New(supervisor.Config{
		Seccomp: spec.Seccomp, Policy: cfg.Policy, TmpDir: tmpdir, Mapping: m, OnViolation: on, Logger: lg,
	})
	if err != nil {
		return nil, err
	}
	spec.NotifyFD = addFD(end)
	return s, nil
}
