package main

import "github.com/srt-go/srt/sandbox/linux"

// The same binary is srt's in-sandbox PID 1, its placeholder guardian,
// its Landlock stage and ssh's ProxyCommand; init() dispatches before
// anything else runs.
func init() { linux.DispatchRole() }
