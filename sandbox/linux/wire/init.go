package wire

import "github.com/srt-go/srt/seccomp"

// InitSpec is what srt tells its in-sandbox PID 1, as JSON in an
// inherited sealed memfd that PID 1 reads and closes (never the command line,
// which every process inside can read). Descriptor fields are numbers in
// PID 1, as bubblewrap passes them on.
type InitSpec struct {
	// Argv is the command; Argv[0] is looked up in PATH inside the sandbox.
	Argv []string `json:"argv"`
	// KeepFDs are descriptors above 2 the user passed to srt; they stay open
	// in the command. Every other descriptor is closed.
	KeepFDs []int `json:"keepFds,omitempty"`
	// CloseFDs are srt's own descriptors (the binary, this spec's pipe).
	CloseFDs []int `json:"closeFds,omitempty"`
	// Ctty is the descriptor (0-2) of the sandbox's own terminal, which
	// becomes the command's controlling terminal; -1 for none.
	Ctty int `json:"ctty"`
	// StartedFD is a pipe to srt: StartedByte is written once PID 1 runs,
	// so srt can tell bubblewrap's own set-up failures from the command's
	// exit status.
	StartedFD int `json:"startedFd"`
	// LifelineFD is the read end of a pipe whose write end only srt holds:
	// EOF means srt is gone, and PID 1 then ends the sandbox.
	LifelineFD int `json:"lifelineFd"`
	// ListenFD is a socket to srt over which PID 1 sends the listeners
	// it binds on the sandbox's loopback (SendListeners), before the
	// command runs; -1 for none.
	ListenFD  int          `json:"listenFd"`
	Listeners []ListenSpec `json:"listeners,omitempty"`
	// Seccomp configures the seccomp filter installed before the command
	// starts; it is never optional.
	Seccomp seccomp.Options `json:"seccomp"`
	// NotifyFD is a socket to srt over which PID 1 sends the filter's
	// notification listener (SendListener); used only when Seccomp.Notify
	// is set.
	NotifyFD int `json:"notifyFd"`
	// KernelNamesFD, when above 2, is a socket to srt over which PID 1
	// sends its mount namespace for the in-kernel name rules
	// (SendNamespace) once its filter is on, and waits for srt's answer
	// before it runs the command or the exec agent.
	KernelNamesFD int `json:"kernelNamesFd,omitempty"`
	// KernelNamesPrivate are the sandbox's private trees (TMPDIR, /dev,
	// /proc), where no name rule applies: PID 1 sends them with the
	// namespace, so that srt exempts their file systems.
	KernelNamesPrivate []string `json:"kernelNamesPrivate,omitempty"`
	// RequireListener makes a kernel without a TSYNC listener a setup
	// error instead of the deny-only filter: creation-time name rules
	// (filesystem.enforceNamesAtCreation) cannot hold without it. It
	// also turns core dumps off (RLIMIT_CORE 0, hard): the kernel writes
	// a core file without a system call srt sees, under a name
	// core_pattern may take from the program ("%e"), in the working
	// directory, which may be a .git/hooks.
	RequireListener bool `json:"requireListener,omitempty"`
	// AgentFD, when above 2, is a socket to srt over which PID 1 serves
	// exec requests (AgentMsg) instead of running Argv.
	AgentFD int `json:"agentFd,omitempty"`
	// Mounts are the plan's binds as they must look once bubblewrap is
	// done: PID 1 checks each before it reports running, and ends the
	// sandbox (a set-up failure) when one is not there.
	Mounts []MountCheck `json:"mounts,omitempty"`
}

// MountCheck says that sandbox path Guest, reached without following any
// symbolic link, is a mount point whose root is the host object Dev and
// Ino name, read-only when ReadOnly: the mount the plan made there.
// bubblewrap follows links when it looks up a source or makes a mount
// point, so a link a run left (or another sandbox swaps in meanwhile)
// where a bind goes would otherwise put that bind on another object or
// elsewhere, unnoticed.
type MountCheck struct {
	Guest    string `json:"guest"`
	Dev      uint64 `json:"dev"`
	Ino      uint64 `json:"ino"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// StartedByte is the one byte PID 1 writes on InitSpec.StartedFD once it
// runs and catches the signals srt relays.
const StartedByte byte = 1

// ListenSpec is one socket PID 1 binds inside the sandbox.
type ListenSpec struct {
	Name string `json:"name"` // ListenerHTTP, ListenerSOCKS5 or ListenerLoopback
	Addr string `json:"addr"` // "127.0.0.1:3128", "[::1]:3128"
}

// The names of the listeners, in ListenSpec and in the listeners
// message: the two proxies, and a port of the host's loopback that an
// allowedDomains entry names ("localhost:3000"), which srt relays to the
// host's same address and port.
const (
	ListenerHTTP     = "http"
	ListenerSOCKS5   = "socks5"
	ListenerLoopback = "loopback"
)

// MaxLoopbackListeners bounds the ListenerLoopback sockets of one
// sandbox (a "localhost:PORT" entry is two): srt refuses to start a
// sandbox whose allow-list names more.
const MaxLoopbackListeners = 64

// BwrapInfo is the part of bubblewrap's --info-fd JSON that srt reads:
// bubblewrap writes one object and closes the pipe.
type BwrapInfo struct {
	// ChildPID is the host pid of the sandbox's PID 1.
	ChildPID int `json:"child-pid"`
}
