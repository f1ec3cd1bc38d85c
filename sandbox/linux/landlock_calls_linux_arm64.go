package linux

import "golang.org/x/sys/unix"

// chownCalls and chmodCalls (number, index of the mode argument) are the
// ownership and permission calls of this architecture (arm64 has only the
// *at forms and the f* forms), for the weaker sandbox's extra seccomp rules.
var (
	chownCalls = []uint32{unix.SYS_FCHOWN, unix.SYS_FCHOWNAT}
	chmodCalls = [][2]uint32{{unix.SYS_FCHMOD, 1}, {unix.SYS_FCHMODAT, 2}, {unix.SYS_FCHMODAT2, 2}}
)
