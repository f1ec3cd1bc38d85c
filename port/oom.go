package port

// oomCounter is implemented by the runners whose sessions run in a
// memory cgroup (native on Linux): oomKills is how many of the session's
// processes the kernel's OOM killer has killed so far.
//
// An exec whose process ends by SIGKILL with no kill reason of the port's
// (timeout, manual) while that count moved ends with killed, reason
// "oom" (seed 000, "Événements du bac à sable"); see execRun.run.
type oomCounter interface {
	oomKills() uint64
}

// oomKills is r's OOM-kill count, 0 for a runner without a memory cgroup.
func oomKills(r runner) uint64 {
	if c, ok := r.(oomCounter); ok {
		return c.oomKills()
	}
	return 0
}
