package sandbox

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"

	"github.com/srt-go/srt/internal/cgroup"
	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/sandbox/linux"
	"github.com/srt-go/srt/settings"
	"github.com/srt-go/srt/violation"
)

// dispatchRole is Main's Linux part: the sandbox re-executes the running
// program for its helper roles (the sandbox's PID 1, the placeholder
// guardian, the Landlock stage, ssh's ProxyCommand).
func dispatchRole() { linux.DispatchRole() }

type linuxHost struct {
	bwrap string
	log   *slog.Logger
	// weak is set when user namespaces are unavailable and the settings
	// ask for the weaker Landlock sandbox (enableWeakerNestedSandbox).
	weak bool
}

func newHost(s *settings.Settings, lg *slog.Logger) (host, error) {
	bwrap, err := linux.FindBwrap(s.BwrapPath)
	if err == nil {
		err = linux.CheckUserNamespaces()
	}
	if err != nil || s.EnableWeakerNestedSandbox {
		if !s.EnableWeakerNestedSandbox {
			return nil, err
		}
		// The full sandbox whenever it works; the weaker one only where
		// it does not, proven by running bubblewrap once.
		if err == nil {
			for _, g := range linux.Check(context.Background(), bwrap) {
				if g.Name == "filesystem policy" && !g.OK {
					err = errors.New(g.Detail)
				}
			}
		}
		if err != nil {
			lg.Debug("full sandbox unavailable; using the weaker Landlock sandbox", "reason", err)
			if _, lerr := linux.LandlockABI(); lerr != nil {
				return nil, errors.Join(err, errors.New("enableWeakerNestedSandbox needs Landlock, and this kernel has none; refusing to run without isolation"))
			}
			return &linuxHost{log: lg, weak: true}, nil
		}
	}
	return &linuxHost{bwrap: bwrap, log: lg}, nil
}

// linuxConfig is the one place every road into a Linux sandbox (the
// command line, the library, srtd's terminals through Cmd; srtd's
// sessions through StartWarm) wires its hooks: every refusal, network,
// seccomp and filesystem alike, goes to report; observe turns on the
// filesystem observation; lg gets the debug lines.
func linuxConfig(p *policy.Policy, bwrap string, report func(violation.Violation), observe bool, lg *slog.Logger) linux.Config {
	return linux.Config{Policy: p, BwrapPath: bwrap, Logger: lg,
		OnViolation: report, OnSandboxViolation: report, ObserveFilesystem: observe}
}

func (h *linuxHost) start(ctx context.Context, c *Cmd) (process, error) {
	cfg := linuxConfig(c.Policy, h.bwrap, c.report, c.m.observeFS, h.log)
	cfg.Argv, cfg.Env, cfg.Dir, cfg.KeepFDs = c.Args, c.Env, c.Dir, c.KeepFDs
	cfg.Stdin, cfg.Stdout, cfg.Stderr = c.Stdin, c.Stdout, c.Stderr
	if h.weak {
		warn := io.Writer(os.Stderr)
		if c.Stderr != nil {
			warn = c.Stderr
		}
		return linux.StartLandlock(ctx, cfg, warn)
	}
	p, err := linux.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return linuxProcess{p}, nil
}

type linuxProcess struct{ *linux.Process }

func (p linuxProcess) Wait() (int, error) {
	code, err := p.Process.Wait()
	var se *linux.SetupError
	if errors.As(err, &se) {
		if d := linux.Diagnose(); d != "" {
			return code, &SetupError{errors.Join(err, errors.New(d))}
		}
	}
	return code, err
}

// WarmOptions configure StartWarm.
type WarmOptions struct {
	// BwrapPath is bubblewrap's path; empty means the one FindBwrap finds.
	BwrapPath string
	// Env is the environment of every command (each exec adds its own);
	// Dir the working directory inside the sandbox.
	Env []string
	Dir string
	// OnViolation receives every refusal (network, seccomp, filesystem);
	// it must not block. Nil ignores them.
	OnViolation func(violation.Violation)
	// ObserveFilesystem records the filesystem refusals too, at a round
	// trip per write-intent call (Options.ObserveFilesystem).
	ObserveFilesystem bool
	// Logger receives debug lines; nil discards them.
	Logger *slog.Logger
	// Cgroup, when set, is the memory cgroup every process of the
	// sandbox runs in from its first instruction (linux.Config.Cgroup).
	Cgroup *cgroup.Group
}

// StartWarm starts a warm sandbox for the compiled policy p (a confined
// view from policy.CompileView, srtd's sessions): one set of mounts,
// namespaces and proxies, many commands (linux.Warm.Exec). It is the
// same runtime as Cmd's, hooks included (linuxConfig). ctx bounds the
// start only. Errors are *linux.SetupError, with the host's diagnosis
// appended when there is one.
func StartWarm(ctx context.Context, p *policy.Policy, o WarmOptions) (*linux.Warm, error) {
	bwrap, err := linux.FindBwrap(o.BwrapPath)
	if err != nil {
		return nil, err
	}
	lg := o.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	report := o.OnViolation
	if report == nil {
		report = func(violation.Violation) {}
	}
	cfg := linuxConfig(p, bwrap, report, o.ObserveFilesystem, lg)
	cfg.Env, cfg.Dir, cfg.Cgroup = o.Env, o.Dir, o.Cgroup
	w, err := linux.StartWarm(ctx, cfg)
	if err != nil {
		if d := linux.Diagnose(); d != "" {
			err = errors.Join(err, errors.New(d))
		}
		return nil, err
	}
	return w, nil
}
