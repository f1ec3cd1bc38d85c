package main

import "github.com/srt-go/srt/sandbox/linux"

// The same binary is srtd and, for the sandboxes it starts, their PID 1,
// placeholder guardian, Landlock stage and proxy-connect helper (as for
// srt); init() dispatches before anything else runs.
func init() { linux.DispatchRole() }
