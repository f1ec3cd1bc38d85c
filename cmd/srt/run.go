package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/srt-go/srt/sandbox"
	"github.com/srt-go/srt/settings"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// exitSetup is srt's own failure status, as env(1) and timeout(1) use it.
const exitSetup = 125

// options are the parsed command line.
type options struct {
	settingsPath string
	command      string
	commandSet   bool
	debug        bool
	controlArg   string // --control-fd, checked by controlChannel
	passFDs      []int  // --pass-fd
	backend      string // --backend: "native" (default) or "microvm"
	controlSet   bool
	version      bool
	help         bool
	check        bool
	violations   string // --violations PATH
	commandID    string
	observeFS    *bool // --observe-fs; nil: on with --violations or --debug
	quiet        bool
	printSchema  bool   // --print-schema
	completion   string // --completion SHELL
	man          bool   // --man
	args         []string
}

// parseArgs reads srt's options up to the first argument that is not one
// (or "--"); everything after belongs to the command.
func parseArgs(args []string) (*options, error) {
	o := &options{}
	fl := newFlagSet(o)
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			o.help = true
			return o, nil
		}
		return nil, err
	}
	o.args = fl.Args()
	if v, ok := os.LookupEnv("SRT_DEBUG"); ok && v != "" && v != "0" && v != "false" {
		o.debug = true
	}
	return o, nil
}

// newFlagSet defines srt's flags, writing into o; their help is in
// program (options.go).
func newFlagSet(o *options) *flag.FlagSet {
	fl := flag.NewFlagSet("srt", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	fl.StringVar(&o.settingsPath, "s", "", "")
	fl.StringVar(&o.settingsPath, "settings", "", "")
	fl.Func("c", "", func(s string) error { o.command, o.commandSet = s, true; return nil })
	fl.BoolVar(&o.debug, "d", false, "")
	fl.BoolVar(&o.debug, "debug", false, "")
	fl.Func("control-fd", "", func(s string) error { o.controlArg, o.controlSet = s, true; return nil })
	fl.StringVar(&o.backend, "backend", "native", "")
	fl.Func("pass-fd", "", func(s string) error {
		fd, err := strconv.Atoi(s)
		if err != nil || fd < 3 {
			return fmt.Errorf("--pass-fd %q is invalid: it must be an integer file descriptor >= 3", s)
		}
		o.passFDs = append(o.passFDs, fd)
		return nil
	})
	fl.BoolVar(&o.version, "V", false, "")
	fl.BoolVar(&o.version, "version", false, "")
	fl.BoolVar(&o.help, "h", false, "")
	fl.BoolVar(&o.help, "help", false, "")
	fl.BoolVar(&o.check, "check", false, "")
	fl.StringVar(&o.violations, "violations", "", "")
	fl.StringVar(&o.commandID, "command-id", "", "")
	fl.BoolFunc("observe-fs", "", func(s string) error {
		b, err := strconv.ParseBool(s)
		o.observeFS = &b
		return err
	})
	fl.BoolVar(&o.quiet, "q", false, "")
	fl.BoolVar(&o.quiet, "quiet", false, "")
	fl.BoolVar(&o.printSchema, "print-schema", false, "")
	fl.StringVar(&o.completion, "completion", "", "")
	fl.BoolVar(&o.man, "man", false, "")
	return fl
}

// run is srt's main function, returning the exit status.
func run(args []string, stdin *os.File, stdout, stderr *os.File) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "srt: "+format+"\n", a...)
		return exitSetup
	}
	o, err := parseArgs(args)
	if err != nil {
		return fail("%v (see srt --help)", err)
	}
	switch {
	case o.help:
		fmt.Fprint(stdout, program.Help())
		return 0
	case o.printSchema:
		stdout.Write(settings.Schema())
		return 0
	case o.man:
		fmt.Fprint(stdout, program.Man())
		return 0
	case o.completion != "":
		script, err := program.Completion(o.completion)
		if err != nil {
			return fail("--completion: %v", err)
		}
		fmt.Fprint(stdout, script)
		return 0
	}
	if o.version {
		fmt.Fprintf(stdout, "srt %s\n", version)
		return 0
	}
	if o.check {
		return check(o.settingsPath, stdout, stderr)
	}
	argv, err := commandLine(o)
	if err != nil {
		return fail("%v", err)
	}
	ctl, ctlFD, err := o.controlChannel()
	if err != nil {
		return fail("%v", err)
	}
	lg := slog.New(slog.DiscardHandler)
	if o.debug {
		lg = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		// Packages that log without a logger of their own (mitm's
		// trust bundle: an extraCaCertPaths file skipped) say so too.
		slog.SetDefault(lg)
	}
	s, err := loadSettings(o.settingsPath)
	if err != nil {
		return fail("%v", err)
	}
	for _, k := range s.Ignored {
		lg.Debug("settings key has no effect in srt-go", "key", k)
	}
	switch o.backend {
	case "native":
	case "microvm":
		// The VM has no way to take a host descriptor or to change its
		// proxies' lists while it runs: refuse rather than run without.
		switch {
		case len(o.passFDs) > 0:
			return fail("--pass-fd: not supported by --backend microvm (a host descriptor cannot reach the guest)")
		case ctl != nil:
			return fail("--control-fd: not supported by --backend microvm yet")
		}
	default:
		return fail("--backend %q is not a backend; use native or microvm", o.backend)
	}
	var vfile *os.File
	if o.violations != "" {
		if vfile, err = openViolationsFile(o.violations); err != nil {
			return fail("%v", err)
		}
	}
	if o.backend == "microvm" {
		return runMicroVM(s, argv, o, vfile, lg, stdin, stdout, stderr)
	}
	observeFS := o.violations != "" || o.debug
	if o.observeFS != nil {
		observeFS = *o.observeFS
	}
	m, err := sandbox.NewManager(s, sandbox.Options{Logger: lg, ObserveFilesystem: observeFS})
	if err != nil {
		if vfile != nil {
			vfile.Close()
		}
		return fail("%v", err)
	}
	defer m.Close()
	vlog := startViolationLog(m.Violations(), vfile, stderr, o.debug)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := m.Command(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	if cmd.KeepFDs, err = checkPassFDs(o.passFDs); err != nil {
		return fail("%v", err)
	}
	cmd.CommandID = o.commandID

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwardedSignals...)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return fail("%v", err)
	}
	ctlFailed := startControl(ctl, ctlFD, cmd, stderr, cancel)
	go func() {
		for sig := range sigs {
			if cmd.Signal(sig) != nil {
				cancel() // not running yet or gone: end the sandbox
			}
		}
	}()
	err = cmd.Wait()
	vlog.finish(o.quiet)
	if ctlFailed() {
		return exitSetup
	}
	var ee *sandbox.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.Code
	default:
		return fail("%v", err)
	}
}

// commandLine returns the argv to run: the positional arguments as they
// are, or the user's shell with -c.
func commandLine(o *options) ([]string, error) {
	if o.commandSet {
		return append([]string{userShell(), "-c", o.command}, o.args...), nil
	}
	if len(o.args) == 0 {
		return nil, errors.New("no command given; usage: srt [options] [--] COMMAND [ARG...], or srt -c STRING (see srt --help)")
	}
	if strings.TrimSpace(o.args[0]) == "" {
		return nil, errors.New("the command is an empty string")
	}
	if len(o.args) == 1 && isCommandString(o.args[0]) {
		return []string{userShell(), "-c", o.args[0]}, nil
	}
	return o.args, nil
}

// isCommandString reports whether a lone argument is a command line
// rather than a program: it holds whitespace and names no executable
// (seed 003's first examples: srt "curl example.com",
// srt 'echo "malicious" >> .bashrc'). A program whose name holds a space
// still runs as itself.
func isCommandString(arg string) bool {
	if !strings.ContainsAny(arg, " \t\n") {
		return false
	}
	if strings.Contains(arg, "/") {
		fi, err := os.Stat(arg)
		return err != nil || fi.IsDir()
	}
	_, err := exec.LookPath(arg)
	return err != nil
}

// userShell is $SHELL when it names an executable absolute path, else
// /bin/sh.
func userShell() string {
	if sh := os.Getenv("SHELL"); filepath.IsAbs(sh) {
		if fi, err := os.Stat(sh); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return sh
		}
	}
	return "/bin/sh"
}

// loadSettings reads the settings file. Only a missing default file means
// the built-in defaults; a missing --settings file is an error, since
// running with defaults would drop the rules it asked for.
func loadSettings(path string) (*settings.Settings, error) {
	explicit := path != ""
	if !explicit {
		p, err := settings.DefaultPath()
		if err != nil {
			return nil, fmt.Errorf("finding the settings file: %w", err)
		}
		path = p
	}
	s, err := settings.Load(path)
	switch {
	case err == nil:
		return s, nil
	case !explicit && errors.Is(err, fs.ErrNotExist):
		return settings.Default(), nil
	case explicit && errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("settings file %s does not exist; refusing to run with the built-in defaults, which would drop the rules --settings asked for", path)
	}
	return nil, err
}
