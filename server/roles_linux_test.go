package server

import "github.com/srt-go/srt/sandbox/linux"

// The test binary starts native terminals, so it plays the roles of srt's
// binary too; init() dispatches before the tests.
func init() { linux.DispatchRole() }
