package main

import (
	"github.com/srt-go/srt/internal/cmdline"
	"github.com/srt-go/srt/settings"
)

// program is srt's command line: --help, --completion and --man are
// rendered from it, and TestOptionTable checks parseArgs' flags against
// it. They are options, not subcommands: srt's first word that is not an
// option is the command to run, so "srt man ls" runs man(1).
var program = &cmdline.Program{
	Name:    "srt",
	Section: 1,
	Summary: "run a command in a filesystem and network sandbox",
	Synopsis: []string{
		"srt [options] [--] COMMAND [ARG...]",
		"srt [options] -c STRING [ARG0 [ARG...]]",
	},
	Description: []string{
		`Run COMMAND in a sandbox that enforces the filesystem and network policy of a settings file. COMMAND and its arguments are passed as they are; with -c, STRING is run by your shell ($SHELL, else /bin/sh) like "sh -c", and the ARGs become $0, $1, ... A lone COMMAND that holds whitespace and names no program is a command line too: srt "curl example.com".`,
	},
	OptionsTitle: "Options (read only before COMMAND)",
	Options: []cmdline.Option{
		{Short: "s", Long: "settings", Arg: "PATH", Complete: cmdline.Files,
			Help: "settings file (default: ~/.srt-settings.json; a missing default file means the built-in defaults: read everywhere, write nowhere but the private TMPDIR, no network)"},
		{Short: "c", Arg: "STRING", Help: "run STRING with your shell"},
		{Short: "d", Long: "debug", Help: "debug lines on stderr (also SRT_DEBUG=1)"},
		{Long: "backend", Arg: "NAME", Complete: cmdline.Values, Values: []string{"native", "microvm"}, Default: "native", Brief: "native, or microvm: run the command in a virtual machine",
			Help: "native, or microvm: run the command in a virtual machine (QEMU): its own kernel; the working directory and write roots are shared writable under the creation-time name rules (read-only without them), and the settings' filesystem and network rules apply (default: native)"},
		{Long: "pass-fd", Arg: "N",
			Help: "pass descriptor N (>= 3) to the command; without it the command gets none but 0, 1 and 2, whatever srt's caller left open (a leaked directory descriptor would bypass every mount)"},
		{Long: "control-fd", Arg: "N",
			Help: "read settings as JSON lines from descriptor N (>= 3); each line replaces the network lists of the running command; a bad line is reported and ignored"},
		{Long: "violations", Arg: "PATH", Complete: cmdline.Files,
			Help: "append each action the sandbox blocks to PATH, one JSON object per line (created 0600)"},
		{Long: "observe-fs", Arg: "false", OptionalArg: true, Complete: cmdline.Values, Values: []string{"true", "false"},
			Help: "record refused filesystem calls too; on by default with --violations or --debug, else off (it costs a round trip to srt per write: see BENCHMARKS.md)"},
		{Long: "command-id", Arg: "ID", Help: "the attribution key of the violations (default: a random key per run)"},
		{Short: "q", Long: "quiet", Help: "no summary of blocked actions on stderr at exit"},
		{Long: "check", Help: "print, guarantee by guarantee, what this host can enforce; exit 0 when everything is, else 1"},
		{Long: "print-schema", Help: "print the settings file's JSON Schema (draft 2020-12) and exit"},
		{Long: "completion", Arg: "SHELL", Complete: cmdline.Values, Values: cmdline.Shells,
			Help: "print the completion script for SHELL (bash, zsh or fish) and exit"},
		{Long: "man", Help: "print this manual page (roff) and exit"},
		{Short: "V", Long: "version", Help: "print the version and exit"},
		{Short: "h", Long: "help", Help: "print this help and exit"},
	},
	Positional: cmdline.Command,
	Epilog: []string{
		"srt exits 125 when it cannot set up the sandbox (the command does not run); otherwise with the command's status, 128+N if it was killed by signal N.",
	},
}

func init() {
	var keys []cmdline.Item
	for _, k := range settings.TopLevelKeys() {
		keys = append(keys, cmdline.Item{Term: k.Name, Text: k.Doc})
	}
	program.Sections = []cmdline.Section{
		{Title: "Settings file", Paras: []string{
			"The settings file is JSON (comments and trailing commas allowed) in the format of the reference srt. Unknown keys are errors, with a suggestion; srt refuses to run rather than ignore a setting. Its JSON Schema is printed by srt --print-schema and installed as /usr/share/srt-go/" + settings.SchemaFile + ". The top-level keys:",
		}, Items: keys},
		{Title: "Exit status", Items: []cmdline.Item{
			{Term: "125", Text: "srt's own failure: a bad option or settings file, or a sandbox it cannot set up. The command did not run."},
			{Term: "128+N", Text: "the command was killed by signal N."},
			{Term: "other", Text: "the command's own exit status (126: not executable, 127: not found)."},
		}},
		{Title: "Environment", Items: []cmdline.Item{
			{Term: "SRT_DEBUG", Text: "1 (or any value but 0 and false) is --debug."},
			{Term: "SHELL", Text: "the shell -c and a lone command line run with, when it is an executable absolute path; else /bin/sh."},
			{Term: "HOME", Text: "where the default settings file is."},
			{Term: "HTTP_PROXY, HTTPS_PROXY, NO_PROXY", Text: "srt's own parent proxy, for the network.parentProxy keys the settings leave out."},
		}},
		{Title: "Files", Items: []cmdline.Item{
			{Term: "~/" + settings.FileName, Text: "the default settings file."},
			{Term: "/usr/share/srt-go/" + settings.SchemaFile, Text: "the settings file's JSON Schema (Debian package)."},
		}},
		{Title: "See also", Paras: []string{"srtd(8), bwrap(1), https://github.com/srt-go/srt"}},
	}
}
