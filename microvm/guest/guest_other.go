//go:build !linux

package guest

import (
	"fmt"
	"os"
	"runtime"
)

// Main is the guest's PID 1; the guest is always Linux.
func Main() {
	fmt.Fprintf(os.Stderr, "srt-guest: the microvm guest agent runs on linux, not %s\n", runtime.GOOS)
	os.Exit(125)
}
