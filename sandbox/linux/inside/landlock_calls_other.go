//go:build linux && !amd64 && !arm64

package inside

// No table for this architecture: seccomp.Build refuses it anyway.
var (
	chownCalls []uint32
)
