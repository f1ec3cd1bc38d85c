//go:build !darwin

package mitm

import "context"

// systemRoots is empty outside macOS: the host's roots are files there
// (hostRoots).
func systemRoots(context.Context) []byte { return nil }
