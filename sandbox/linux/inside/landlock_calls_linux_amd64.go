package inside

import "golang.org/x/sys/unix"

// chownCalls are the ownership calls of this architecture, for the weaker
// sandbox's extra seccomp rules.
var (
	chownCalls = []uint32{unix.SYS_CHOWN, unix.SYS_FCHOWN, unix.SYS_LCHOWN, unix.SYS_FCHOWNAT}
)
