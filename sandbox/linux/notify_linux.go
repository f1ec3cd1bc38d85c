package linux

import (
	"io"
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
// With the creation-time rules it also loads the in-kernel check where it
// can (kernelnames_linux.go) and returns it; the caller closes it when the
// sandbox ends.
func startNotifier(cfg Config, create bool, spec *wire.InitSpec, tmpdir string, m fsplan.Mapping, addFD func(*os.File) int, lg *slog.Logger) (*supervisor.Supervisor, io.Closer, error) {
	if cfg.OnSandboxViolation == nil && !create && !(spec.Seccomp.CheckBinds && !spec.Seccomp.AllowUnixSockets) {
		return nil, nil, nil
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
	on := cfg.OnSandboxViolation
	if on == nil {
		on = func(violation.Violation) {}
	}
	var prog io.Closer
	if create {
		spec.Seccomp.EmulateCreates = true
		spec.RequireListener = true
		var why error
		prog, why = kernelNames(cfg, spec, tmpdir, m, addFD, on, lg)
		if prog != nil {
			lg.Debug("creation-time name rules", "path", NamePathKernel)
		} else {
			lg.Debug("creation-time name rules", "path", NamePathSupervisor, "why", why)
		}
	}
	s, end, err := supervisor.New(supervisor.Config{
		Seccomp: spec.Seccomp, Policy: cfg.Policy, TmpDir: tmpdir, Mapping: m, OnViolation: on, Logger: lg,
	})
	if err != nil {
		if prog != nil {
			prog.Close()
		}
		return nil, nil, err
	}
	spec.NotifyFD = addFD(end)
	return s, prog, nil
}
