// Command selfinit is the model of how srt wires the microvm backend: one
// static binary that is the host-side CLI and, inside the VM, the guest's
// /init. TestSelfInit builds and runs it.
//
//	selfinit WORKDIR COMMAND [ARG...]
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/srt-go/srt/microvm"
	"github.com/srt-go/srt/microvm/guest"
)

func main() {
	// First thing: inside the VM this binary is PID 1.
	if guest.IsInit() {
		guest.Main()
	}
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: selfinit WORKDIR COMMAND [ARG...]")
		os.Exit(2)
	}
	code, err := microvm.RunCommand(context.Background(), microvm.RunConfig{Workdir: os.Args[1]},
		os.Args[2:], microvm.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "selfinit:", err)
		os.Exit(125)
	}
	os.Exit(code)
}
