package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"

	"github.com/srt-go/srt/microvm"
	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/policy/dirindex"
	"github.com/srt-go/srt/proxy"
	"github.com/srt-go/srt/settings"
	"github.com/srt-go/srt/violation"
)

// runMicroVM runs argv in a virtual machine (srt --backend microvm): the
// working directory is shared at the same path, the settings' network
// lists filter the VM's only way out, and the host's system directories
// are shown read-only (microvm.Config.System, minus microvm.SystemHidden
// and the policy's denyRead paths); nothing else of the host is visible.
// There is never a fallback to the host: a host that cannot
// start a VM is srt's own failure (125).
//
// The guest's refusals (its supervisor's filesystem and seccomp records)
// and the VM's proxies' go to the same violation log as native's
// (--violations, --debug, the exit summary, -q), attributed to the
// command (--command-id) and filtered by ignoreViolations as native's
// sandbox.Cmd does.
//
// The working directory is the kernel's (microvmWorkdir: getcwd(2), its
// real path), resolved once: the policy, the share's host path, the
// hidden paths planned in it and QEMU's view all use that path, never
// $PWD's spelling, which a link in /tmp another user flips could point
// elsewhere at each later lookup (an adversarial review had the share
// show the home directory while its hidden paths were planned for the
// project: ~/.ssh readable).
func runMicroVM(s *settings.Settings, argv []string, o *options, vfile *os.File, lg *slog.Logger, stdin, stdout, stderr *os.File) int {
	cwd, err := microvmWorkdir()
	if err != nil {
		fmt.Fprintf(stderr, "srt: working directory: %v\n", err)
		return exitSetup
	}
	return runMicroVMAt(cwd, s, argv, o, vfile, lg, stdin, stdout, stderr)
}

// runMicroVMAt is runMicroVM in working directory cwd, a real path
// (microvmWorkdir), which nothing here resolves again but the policy,
// whose result must be cwd itself.
func runMicroVMAt(cwd string, s *settings.Settings, argv []string, o *options, vfile *os.File, lg *slog.Logger, stdin, stdout, stderr *os.File) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Kill)
	defer stop()
	store := violation.NewStore(0)
	vlog := startViolationLog(store, vfile, stderr, o.debug)
	defer vlog.finish(o.quiet)
	key := o.commandID
	if key == "" {
		key = violation.NewKey()
	}
	text := strings.Join(argv, " ")
	report := func(v violation.Violation) {
		v.Key, v.Command = key, text
		if v.Raw == "" {
			v.Raw = v.Line()
		}
		if !violation.Ignored(v, v.Command, s.IgnoreViolations) {
			store.Add(v)
		}
	}
	// The VM sees the working directory and, with the creation-time name
	// rules on (decided as for native: filesystem.enforceNamesAtCreation),
	// the policy's write roots, writable at their host paths: the guest
	// runs every process under the policy's filesystem rules with srt's
	// own supervisor (microvm.Config.Names), so a name such as .bashrc or
	// .git/hooks/pre-commit cannot be planted at any depth. Without them
	// the working directory is shared read-only whatever allowWrite says:
	// a writable share would let the command plant those names (found by
	// an adversarial review). The host's system directories are shown
	// read-only (as the native sandbox shows the whole host read-only),
	// minus microvm.SystemHidden, and every denyRead path in them or in a
	// share is hidden host-side, in QEMU's own view (microvm.Config.DenyRead).
	pol, err := policy.Compile(s, policy.Env{Cwd: cwd, DirIndex: dirindex.DefaultPath()})
	if err != nil {
		fmt.Fprintf(stderr, "srt: %v\n", err)
		return exitSetup
	}
	if pol.Cwd != cwd {
		// A component of the real path was replaced by a link meanwhile:
		// the rules were compiled for another directory than the share.
		fmt.Fprintf(stderr, "srt: --backend microvm: the working directory %s resolved to %s while srt started (a symbolic link on its path changed); not running: %v\n", cwd, pol.Cwd, policy.ErrUnenforceable)
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
	denyRead, err := microvm.DenyReadOf(pol)
	if err != nil {
		fmt.Fprintf(stderr, "srt: --backend microvm: %v\n", err)
		return exitSetup
	}
	// srtd's API is refused to the VM's proxies as to native's
	// (sandbox/linux's srtd registry), whatever the lists allow.
	forbidden, err := microvmForbidden()
	if err != nil {
		fmt.Fprintf(stderr, "srt: --backend microvm: %v\n", err)
		return exitSetup
	}
	var names *policy.Policy
	var shares []microvm.Share
	if !pol.FilesystemDisabled {
		create, notice, err := microvmCreationRules(pol)
		if err != nil {
			fmt.Fprintf(stderr, "srt: %v\n", err)
			return exitSetup
		}
		if notice != "" {
			fmt.Fprintf(stderr, "srt: %s\n", notice)
		}
		if create {
			names = pol
			readOnly = !pol.Writable(pol.Cwd)
			shares = microvmWriteRoots(pol, readOnly)
		}
		if names == nil && pol.Writable(pol.Cwd) {
			lg.Info("microvm: the working directory is shared read-only (writes stay in the VM): protected names cannot be enforced in a writable share without the creation-time name rules")
		}
	}
	code, err := microvm.RunCommand(ctx, microvm.RunConfig{
		Settings: s,
		Workdir:  cwd,
		ReadOnly: readOnly,
		Env:      microvmEnv(os.Environ()),
		VM: microvm.Config{Logger: lg, Parent: pol.Network.Parent, Filter: pol.Network.Filter, Forbidden: forbidden, OnViolation: report,
			Shares: shares, Names: names, System: policy.SystemDirs(policy.DefaultSystemDirs), DenyRead: denyRead},
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

// microvmWriteRoots are the shares of the policy's write roots besides
// the working directory's: each existing directory of AllowWrite at its
// resolved host path, writable, but those the working directory's share
// already holds writable (cwdReadOnly false) and those inside another
// write root.
func microvmWriteRoots(pol *policy.Policy, cwdReadOnly bool) []microvm.Share {
	var roots []string
	for _, w := range pol.AllowWrite {
		if w.Kind != policy.Dir || w.Resolved == "/" || w.Resolved == pol.Cwd || !cwdReadOnly && policy.Within(w.Resolved, pol.Cwd) {
			continue
		}
		roots = append(roots, w.Resolved)
	}
	var out []microvm.Share
	for _, r := range roots {
		if slices.ContainsFunc(roots, func(o string) bool { return o != r && policy.Within(r, o) }) ||
			slices.ContainsFunc(out, func(s microvm.Share) bool { return s.HostPath == r }) {
			continue
		}
		out = append(out, microvm.Share{HostPath: r, GuestPath: r})
	}
	return out
}

// microvmEnv is what of srt's environment the command gets in the VM
// (native passes all of it): everything but what names a place of the
// host the guest does not show or has its own of (PATH, HOME, TMPDIR,
// the working directory, the user's agent and bus sockets, a display),
// the guest's user (it runs as root), srt's own SRT_* settings, and the
// proxy variables, which the guest sets to its own relays
// (proxy.Env).
func microvmEnv(environ []string) []string {
	drop := map[string]bool{}
	for _, k := range []string{"PATH", "HOME", "PWD", "OLDPWD", "TMPDIR", "TMP", "TEMP", "TEMPDIR", "USER", "LOGNAME",
		"SSH_AUTH_SOCK", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "WAYLAND_DISPLAY"} {
		drop[k] = true
	}
	for _, kv := range proxy.Env(1, 2) {
		k, _, _ := strings.Cut(kv, "=")
		drop[k] = true
	}
	var out []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || drop[k] || strings.HasPrefix(k, "SRT_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}
