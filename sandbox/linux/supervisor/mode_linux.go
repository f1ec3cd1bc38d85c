package supervisor

// The mode refusals of a notifying filter (seccomp.Call.Mode): the set-id
// bits and the write permissions that seccomp.BuildSetID refuses in a
// deny-only sandbox are refused here, EPERM as there, and reported.

import (
	"os"
	"strconv"
	"time"

	"github.com/srt-go/srt/seccomp"
	"github.com/srt-go/srt/violation"
	"golang.org/x/sys/unix"
)

// Rules naming why a mode was refused (violation.Violation.Reason).
const (
	ruleSetID         = "set-id bit"
	ruleWorldWritable = "world-writable mode"
	ruleGroupWritable = "group-writable mode"
)

// refusedMode reports whether the call's mode has a refused bit, and why.
// The mode is a register the kernel copied into the notification, not
// the caller's memory: no other thread can change it after this look.
func refusedMode(m *seccomp.ModeCheck, args [6]uint64) (string, bool) {
	mode := uint32(args[m.Arg])
	switch bad := mode & m.Refused; {
	case bad == 0:
		return "", false
	case bad&(unix.S_ISUID|unix.S_ISGID) != 0:
		return ruleSetID, true
	case bad&unix.S_IWOTH != 0:
		return ruleWorldWritable, true
	default:
		return ruleGroupWritable, true
	}
}

// refuseMode answers a call whose mode is refused with EPERM and reports
// it, the record first (see refuse). Each call is reported: the command
// makes few of them, and each would have left a file behind.
func (d *dispatcher) refuseMode(fd int, nt seccomp.Notification, c seccomp.Call, rule string) {
	defer seccomp.Respond(fd, nt.ID, unix.EPERM)
	hostPID := int(nt.PID)
	nsPID, exe := procInfo(hostPID)
	if nsPID == 1 {
		return // PID 1's own call, not the command's
	}
	action := violation.FileWriteMode
	if !c.Mode.Chmod {
		action = violation.FileWriteCreate
	}
	d.on(violation.Violation{
		Time: time.Now(), Action: action, Target: modeTarget(hostPID, c.Mode, nt.Data.Args),
		Reason: rule, PID: nsPID, Exe: exe,
	})
}

// modeTarget is the file a mode-setting call names, as the caller sees
// it; the descriptor's path for fchmod; "" when unreadable.
func modeTarget(pid int, m *seccomp.ModeCheck, args [6]uint64) string {
	if m.Path >= 0 {
		return callPath(pid, args, m.Dirfd, m.Path)
	}
	p, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(int(int32(uint32(args[m.Dirfd])))))
	if err != nil {
		return ""
	}
	return p
}
