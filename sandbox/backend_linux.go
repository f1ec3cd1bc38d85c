package sandbox

import (
	"context"
	"errors"
	"log/slog"

	"github.com/srt-go/srt/sandbox/linux"
	"github.com/srt-go/srt/settings"
)

type linuxHost struct {
	bwrap string
	log   *slog.Logger
}

func newHost(s *settings.Settings, lg *slog.Logger) (host, error) {
	bwrap, err := linux.FindBwrap(s.BwrapPath)
	if err != nil {
		return nil, err
	}
	if err := linux.CheckUserNamespaces(); err != nil {
		return nil, err
	}
	return &linuxHost{bwrap: bwrap, log: lg}, nil
}

func (h *linuxHost) start(ctx context.Context, c *Cmd) (process, error) {
	p, err := linux.Start(ctx, linux.Config{
		Policy:    c.Policy,
		BwrapPath: h.bwrap,
		Argv:      c.Args,
		Env:       c.Env,
		Dir:       c.Dir,
		Stdin:     c.Stdin,
		Stdout:    c.Stdout,
		Stderr:    c.Stderr,
		KeepFDs:   c.KeepFDs,
		Logger:    h.log,
	})
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
