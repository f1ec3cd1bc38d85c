package main

import (
	"flag"
	"io"
	"strconv"

	"github.com/srt-go/srt/internal/cmdline"
	"github.com/srt-go/srt/port"
)

// program is srtd's command line: --help, --completion and --man are
// rendered from it, newFlagSet takes each flag's default from it, and
// TestOptionTable checks the two agree.
var program = &cmdline.Program{
	Name:    "srtd",
	Section: 8,
	Summary: "serve sandboxed sessions, execs and terminals over a loopback HTTP API",
	Synopsis: []string{
		"srtd [--addr 127.0.0.1:PORT] [--token-file PATH] [--sandbox on|off] [--microvm auto|off]",
		"     [--memory-limit default|off|SIZE] [--cgroup-parent DIR] [options]",
		"srtd --completion bash|zsh|fish",
	},
	Description: []string{
		"srtd serves the sandbox port over HTTP on loopback. It probes the host once, prints one start-up line (agent sandbox ON ..., no OS-native agent sandbox on this host ..., or agent sandbox DISABLED by --sandbox off) and one web console line (its login URL, or why it is off), writes a new bearer token to the token file (mode 0600) and serves its API (api/openapi.json) until SIGTERM or SIGINT, which destroy every sandbox and terminal before it exits.",
		"The microvm backend is probed at start-up with a test boot unless --microvm off; srtd serves at once, and one more line, \"microvm probe\", gives the verdict once it is known.",
		"Options take one or two dashes (-addr, --addr). srtd completion SHELL is --completion SHELL.",
	},
	OptionsTitle: "Options",
	Options: []cmdline.Option{
		{Long: "addr", Arg: "HOST:PORT", Default: "127.0.0.1:7777", Help: "listen address; loopback only unless --allow-non-loopback"},
		{Long: "token-file", Arg: "PATH", Complete: cmdline.Files, Help: "where to write the bearer token (mode 0600); default $XDG_RUNTIME_DIR/srtd/token or ~/.srtd/token"},
		{Long: "sandbox", Arg: "on|off", Brief: "wrap launches in a sandbox: on or off", Complete: cmdline.Values, Values: []string{"on", "off"}, Help: "on (wrap launches when the host offers a backend) or off; default $CC_SERVER_SANDBOX, then $SRTD_SANDBOX, else on"},
		{Long: "allow-non-loopback", Help: "allow --addr on a non-loopback address (anyone who can reach it and read the token drives the server)"},
		{Long: "addr-file", Arg: "PATH", Complete: cmdline.Files, Help: "write the listening address there once listening (for --addr with port 0)"},
		{Long: "max-sessions", Arg: "N", Default: "64", Help: "sandboxes alive at once"},
		{Long: "max-execs", Arg: "N", Default: "64", Help: "execs running at once"},
		{Long: "max-terminals", Arg: "N", Default: "16", Help: "terminal sessions alive at once"},
		{Long: "max-conns-per-session", Arg: "N", Default: strconv.Itoa(port.DefaultMaxConnsPerSession), Help: "connections one session's proxies serve at once (more are closed at once and reported as a violation); lowered at start-up to fit the descriptor limit"},
		{Long: "max-api-conns", Arg: "N", Default: "256", Help: "API connections served at once (more wait to be accepted)"},
		{Long: "max-body", Arg: "BYTES", Default: "1048576", Help: "largest request body, bytes"},
		{Long: "default-backend", Arg: "NAME", Complete: cmdline.Values, Values: []string{"native", "microvm", "none"}, Help: "backend of a launch that names none: native (default; none when the host has none) or microvm (falls back to native, with a log line, when no VM can start)"},
		{Long: "name-glob-write-denies", Arg: "standard|none", Complete: cmdline.Values, Values: []string{"standard", "none"}, Default: "standard", Help: "launch policy's file-name glob write-denies: standard (.env, *.key, *.pem, refused when created; where the host cannot, a launch with a writable path fails closed) or none"},
		{Long: "bwrap", Arg: "PATH", Complete: cmdline.Files, Help: "bubblewrap's absolute path; default bwrap in PATH"},
		{Long: "microvm", Arg: "auto|off", Complete: cmdline.Values, Values: []string{"auto", "off"}, Help: "auto (probe the microvm backend with a test boot at start-up) or off; default $SRTD_MICROVM, else auto"},
		{Long: "terminal-network", Arg: "open|baseline", Complete: cmdline.Values, Values: []string{"open", "baseline"}, Default: "open", Help: "a native terminal's egress when its request names none: open (every host name; the deny list, cloud metadata and srtd's own addresses still refused; seed 000) or baseline (the launch allow-list)"},
		{Long: "memory-limit", Arg: "SIZE", Complete: cmdline.Values, Values: []string{"default", "off"}, Default: "default", Help: "memory limit of a session that names no memoryLimitBytes: default (half of RAM, at most 4G), off (or 0), or bytes with an optional K, M, G suffix; enforced by a memory cgroup per native session"},
		{Long: "cgroup-parent", Arg: "DIR", Complete: cmdline.Files, Help: "cgroup directory (v2 with the memory controller, or v1 memory) to make session cgroups in, writable by srtd's user; default srtd's own cgroup"},
		{Long: "debug", Help: "debug log lines"},
		{Long: "completion", Arg: "SHELL", Complete: cmdline.Values, Values: cmdline.Shells, Help: "print the completion script for SHELL (bash, zsh or fish) and exit"},
		{Long: "man", Help: "print this manual page (roff) and exit"},
		{Short: "V", Long: "version", Help: "print the version and exit"},
		{Short: "h", Long: "help", Help: "print this help and exit"},
	},
	Subcommands: []cmdline.Subcommand{
		{Name: "completion", Arg: "SHELL", Brief: "print the completion script for SHELL", Values: cmdline.Shells},
	},
	Epilog: []string{"Exit status: 0 after a signal, 2 for a usage error, 1 otherwise."},
	Sections: []cmdline.Section{
		{Title: "Exit status", Items: []cmdline.Item{
			{Term: "0", Text: "stopped by SIGTERM or SIGINT (every sandbox destroyed), or --help, --man, --completion, --version."},
			{Term: "1", Text: "srtd could not start or serve (the address is taken, the token file cannot be written)."},
			{Term: "2", Text: "a usage error: an unknown option or a bad value."},
		}},
		{Title: "Web console", Paras: []string{
			"srtd serves a web console of its own at /console/: its sessions with the backend each really runs on, their violations as they happen and exec history, a terminal, and buttons that launch, suspend, resume and destroy sessions. At start srtd prints one line with the URL to open: Web console: http://127.0.0.1:7777/console/?token=.... The URL holds a login token, new at every start: opening it logs the browser in (a cookie) and drops the token from the address bar. The console can do whatever the API token can, so treat the URL like the token file.",
			"The console runs only on Linux with a loopback-only --addr, where srtd checks that each connection comes from its own user; elsewhere, and with --allow-non-loopback, the line says Web console: off and why, and only the bearer-token API is served.",
			"Under the systemd user unit, srtd's start-up lines, the console's URL among them, go to the user's journal: journalctl --user -u srtd.",
		}},
		{Title: "Environment", Items: []cmdline.Item{
			{Term: "CC_SERVER_SANDBOX, SRTD_SANDBOX", Text: "on or off: --sandbox when it is not given (the first set wins)."},
			{Term: "SRTD_MICROVM", Text: "auto or off: --microvm when it is not given."},
			{Term: "SRT_MICROVM_INIT", Text: "a static srt to be the microvm guest's /init when srtd is not built static."},
			{Term: "SRT_MICROVM_QEMU", Text: "QEMU when qemu-system-x86_64 is not in PATH."},
			{Term: "XDG_RUNTIME_DIR", Text: "where the default token file is."},
		}},
		{Title: "Files", Items: []cmdline.Item{
			{Term: "$XDG_RUNTIME_DIR/srtd/token, ~/.srtd/token", Text: "the bearer token (mode 0600), replaced at each start and removed at exit."},
			{Term: "/usr/lib/systemd/user/srtd.service", Text: "the systemd user unit of the Debian package: systemctl --user enable --now srtd; its log, with the web console's URL, is in the user's journal (journalctl --user -u srtd)."},
		}},
		{Title: "See also", Paras: []string{"srt(1), bwrap(1), https://github.com/srt-go/srt"}},
	},
}

// flags are srtd's parsed flags.
type flags struct {
	addr, tokenFile, sandbox, addrFile, defaultBackend, nameGlobs, bwrap *string
	microvm, termNet, memLimit, cgroupParent, completion                 *string
	nonLoopback, debug, man, help, h, version                            *bool
	maxSessions, maxExecs, maxTerminals, maxConns, maxAPIConns           *int
	maxBody                                                              *int64
}

// newFlagSet defines srtd's flags, each default from program; its output
// is discarded (run prints the help and the errors).
func newFlagSet() (*flag.FlagSet, *flags) {
	fs := flag.NewFlagSet("srtd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	def := func(name string) string {
		for _, o := range program.Options {
			if o.Long == name {
				return o.Default
			}
		}
		panic("srtd: no option " + name + " in the table")
	}
	num := func(name string) int {
		n, err := strconv.Atoi(def(name))
		if err != nil {
			panic("srtd: option " + name + ": default is not a number")
		}
		return n
	}
	f := &flags{
		addr:           fs.String("addr", def("addr"), ""),
		tokenFile:      fs.String("token-file", def("token-file"), ""),
		sandbox:        fs.String("sandbox", def("sandbox"), ""),
		nonLoopback:    fs.Bool("allow-non-loopback", false, ""),
		addrFile:       fs.String("addr-file", def("addr-file"), ""),
		maxSessions:    fs.Int("max-sessions", num("max-sessions"), ""),
		maxExecs:       fs.Int("max-execs", num("max-execs"), ""),
		maxTerminals:   fs.Int("max-terminals", num("max-terminals"), ""),
		maxConns:       fs.Int("max-conns-per-session", num("max-conns-per-session"), ""),
		maxAPIConns:    fs.Int("max-api-conns", num("max-api-conns"), ""),
		maxBody:        fs.Int64("max-body", int64(num("max-body")), ""),
		defaultBackend: fs.String("default-backend", def("default-backend"), ""),
		nameGlobs:      fs.String("name-glob-write-denies", def("name-glob-write-denies"), ""),
		bwrap:          fs.String("bwrap", def("bwrap"), ""),
		microvm:        fs.String("microvm", def("microvm"), ""),
		termNet:        fs.String("terminal-network", def("terminal-network"), ""),
		memLimit:       fs.String("memory-limit", def("memory-limit"), ""),
		cgroupParent:   fs.String("cgroup-parent", def("cgroup-parent"), ""),
		debug:          fs.Bool("debug", false, ""),
		completion:     fs.String("completion", "", ""),
		man:            fs.Bool("man", false, ""),
		help:           fs.Bool("help", false, ""),
		version:        new(bool),
		h:              fs.Bool("h", false, ""),
	}
	fs.BoolVar(f.version, "V", false, "")
	fs.BoolVar(f.version, "version", false, "")
	return fs, f
}

// version is set at build time with -ldflags "-X main.version=..."
// (scripts/build-deb.sh sets it to the package's version).
var version = "0.1.0-dev"
