package inside

import "golang.org/x/sys/unix"

// chownCalls are the ownership calls of this architecture (arm64 has only the
// *at form and fchown), for the weaker sandbox's extra seccomp rules.
var (
	chownCalls = []uint32{unix.SYS_FCHOWN, unix.SYS_FCHOWNAT}
)
