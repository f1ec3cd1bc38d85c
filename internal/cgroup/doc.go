// Package cgroup gives each sandbox session a memory cgroup of its own:
// it finds a parent cgroup this process may create children in (Find),
// makes one child per session with a memory limit (Parent.New), puts the
// session's first process in it before that process runs a single
// instruction of its own (Group.Prepare), reads the child's OOM-kill
// counter (Group.OOMKills) and removes the child, killing what is left in
// it (Group.Remove).
//
// Both hierarchies are supported, each as the kernel documents it:
//
//   - cgroup v2 (Documentation/admin-guide/cgroup-v2.rst): memory.max,
//     memory.swap.max, memory.events' oom_kill, controllers enabled for
//     children through cgroup.subtree_control, the "no internal
//     processes" rule, delegation by ownership of a directory and its
//     cgroup.procs ("Delegation"), and clone3(CLONE_INTO_CGROUP) to
//     start a process inside a cgroup.
//   - cgroup v1 (Documentation/admin-guide/cgroup-v1/memory.rst):
//     memory.limit_in_bytes, memory.memsw.limit_in_bytes and
//     memory.oom_control's oom_kill. v1 has no CLONE_INTO_CGROUP, so the
//     process is started as a trampoline that moves itself into the
//     cgroup and then executes the real program (EnterArg, RunEnter).
//
// The files read here are the small ones the kernel documents
// (/proc/self/cgroup, cgroup.controllers, cgroup.subtree_control,
// cgroup.procs, memory.events, memory.oom_control): one value or
// "key value" per line. The package runs on Linux only; elsewhere it
// declares the types and nothing makes them.
package cgroup

// Version is a cgroup hierarchy's version: V1 or V2.
type Version int

// The two hierarchies.
const (
	V1 Version = 1
	V2 Version = 2
)

// Parent is a cgroup this process may create session cgroups in: the
// memory controller is available to its children and its directory is
// writable (root, or delegated). Find returns one.
type Parent struct {
	version Version
	dir     string // absolute path in the cgroup file system
	note    string // how it was found, for the start-up log line
}

// Group is one session's memory cgroup, made by Parent.New and removed
// by Group.Remove.
type Group struct {
	version Version
	dir     string
	limit   int64 // bytes
}

// EnterArg is the first argument that makes a binary calling
// sandbox.Main run RunEnter (the v1 trampoline, Group.Prepare).
const EnterArg = "--srt-cgroup-enter"
