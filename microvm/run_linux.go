package microvm

import (
	"context"
	"errors"
	"fmt"
	"github.com/srt-go/srt/policy"
	"os"
	"os/signal"
	"syscall"

	"github.com/srt-go/srt/netrule"
	"github.com/srt-go/srt/settings"
	"golang.org/x/term"
)

// RunCommand boots a VM, runs argv in it and returns its exit status
// (128+N for signal N). SIGINT, SIGTERM and SIGHUP received meanwhile
// are forwarded to the command (without a PTY; with one, ^C travels as
// input). The VM is destroyed before it returns, whatever happens.
// err is non-nil when the command could not run at all (the host
// cannot start a VM: *UnavailableError; never a fallback to the host);
// the CLI should then exit 125.
func RunCommand(ctx context.Context, rc RunConfig, argv []string, stdio Stdio) (exit int, err error) {
	if len(argv) == 0 {
		return 0, errors.New("microvm: no command")
	}
	s := rc.Settings
	if s == nil {
		s = settings.Default()
	}
	pol, err := netrule.Compile(policy.NetworkRules(s.Network))
	if err != nil {
		return 0, fmt.Errorf("network rules: %w", err)
	}
	wd := rc.Workdir
	if wd == "" {
		if wd, err = os.Getwd(); err != nil {
			return 0, err
		}
	}
	cfg := rc.VM
	cfg.Policy = pol
	cfg.Events = false
	cfg.Shares = append(append([]Share(nil), cfg.Shares...), Share{HostPath: wd, GuestPath: wd, ReadOnly: rc.ReadOnly})
	vm, err := Launch(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer vm.Close()
	if cfg.Logger != nil {
		// What the VM really runs on (srt -d): KVM only when a test boot
		// proved it, else TCG, and why.
		d := vm.Details()
		cfg.Logger.Info("microvm ready", "accel", d["accel"], "accelReason", d["accelReason"], "kernel", d["kernel"], "bootMs", d["bootMs"], "names", d["names"])
	}

	env := append([]string(nil), rc.Env...)
	for _, k := range []string{"TERM", "COLORTERM", "LANG", "LC_ALL"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append([]string{k + "=" + v}, env...)
		}
	}
	req := ExecRequest{Argv: argv, Env: env, Dir: wd, Stdin: stdio.In, Stdout: stdio.Out, Stderr: stdio.Err}
	var tty *os.File
	if f, ok := stdio.In.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		tty = f
		w, h, err := term.GetSize(int(f.Fd()))
		if err != nil {
			w, h = 80, 24
		}
		req.TTY = &TTYSize{Rows: uint16(h), Cols: uint16(w)}
		old, err := term.MakeRaw(int(f.Fd()))
		if err == nil {
			defer term.Restore(int(f.Fd()), old)
		}
	}
	// stdin is copied by a goroutine that may stay blocked in Read after
	// the command exits; that is harmless for a CLI about to exit.
	p, err := vm.Exec(ctx, req)
	var ee *ExecError
	if errors.As(err, &ee) && ee.Code != 0 {
		// Not found or not executable: the command's failure, with a
		// shell's status, not srt's.
		fmt.Fprintf(stdio.Err, "srt: %s\n", ee.Msg)
		return ee.Code, nil
	}
	if err != nil {
		return 0, err
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGWINCH)
	defer signal.Stop(sigs)
	for {
		select {
		case <-p.Done():
			code, err := p.Wait()
			return code, err
		case sig := <-sigs:
			if sig == syscall.SIGWINCH {
				if tty != nil {
					if w, h, err := term.GetSize(int(tty.Fd())); err == nil {
						p.Resize(TTYSize{Rows: uint16(h), Cols: uint16(w)})
					}
				}
				continue
			}
			if tty == nil {
				p.Signal(sig.(syscall.Signal))
			}
		}
	}
}
