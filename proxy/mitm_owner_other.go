//go:build !unix

package proxy

import "os"

// fileUID is the owner of fi; unknown where there is no Stat_t, so the
// MITM proxy's socket is refused there (fail closed).
func fileUID(os.FileInfo) (uint32, bool) { return 0, false }
