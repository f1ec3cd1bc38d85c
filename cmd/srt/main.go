// Command srt runs a command under the filesystem and network policy of a
// settings file (~/.srt-settings.json), drop-in compatible with the
// reference srt's command line:
//
//	srt [options] [--] COMMAND [ARG...]
//	srt [options] -c STRING [ARG0 [ARG...]]
//
// srt's own options are read only before the command. Its own failures
// exit 125, as env(1) and timeout(1) do, and the command never runs;
// otherwise the command's exit status passes through (128+N when it was
// killed by signal N).
package main

import (
	"os"

	"github.com/srt-go/srt/microvm/guest"
	"github.com/srt-go/srt/sandbox"
)

func main() {
	// First: the same binary is the sandbox's PID 1, its placeholder
	// guardian, its Landlock stage and ssh's ProxyCommand.
	sandbox.Main()
	// Built static (CGO_ENABLED=0), the same binary is the microvm
	// backend's guest /init: no second program to build or install.
	if guest.IsInit() {
		guest.Main()
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
