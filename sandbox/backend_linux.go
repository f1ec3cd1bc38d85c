package sandbox

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"

	"github.com/srt-go/srt/sandbox/linux"
	"github.com/srt-go/srt/settings"
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

func (h *linuxHost) start(ctx context.Context, c *Cmd) (process, error) {
	cfg := linux.Config{
		Policy:             c.Policy,
		BwrapPath:          h.bwrap,
		Argv:               c.Args,
		Env:                c.Env,
		Dir:                c.Dir,
		Stdin:              c.Stdin,
		Stdout:             c.Stdout,
		Stderr:             c.Stderr,
		KeepFDs:            c.KeepFDs,
		Logger:             h.log,
		OnViolation:        c.report,
		OnSandboxViolation: c.report,
		ObserveFilesystem:  c.m.observeFS,
	}
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
