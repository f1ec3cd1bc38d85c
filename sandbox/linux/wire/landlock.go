package wire

import "github.com/srt-go/srt/seccomp"

// LandlockSpec is what srt tells the Landlock stage, as JSON through an
// inherited pipe that srt writes and closes. Paths are absolute host
// paths; a missing one is skipped.
type LandlockSpec struct {
	Argv       []string        `json:"argv"`
	ReadDirs   []string        `json:"readDirs,omitempty"`
	ReadFiles  []string        `json:"readFiles,omitempty"`
	ListDirs   []string        `json:"listDirs,omitempty"`
	WriteDirs  []string        `json:"writeDirs,omitempty"`
	WriteFiles []string        `json:"writeFiles,omitempty"`
	Devices    []string        `json:"devices,omitempty"`
	TCPPorts   []uint16        `json:"tcpPorts"`
	Seccomp    seccomp.Options `json:"seccomp"`
	Ctty       int             `json:"ctty"`
	// KeepFDs are the user's descriptors (Config.KeepFDs), left open in
	// the command at their numbers; every other one is closed.
	KeepFDs []int `json:"keepFds,omitempty"`
	// NotifyFD is a socket to srt over which the stage sends the seccomp
	// listener when Seccomp.Notify is set, as PID 1 does (SendListener).
	NotifyFD int `json:"notifyFd,omitempty"`
}
