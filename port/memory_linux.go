package port

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/srt-go/srt/internal/cgroup"
	"golang.org/x/sys/unix"
)

// memory is the port's memory-limit state, found once by New.
type memory struct {
	// limit is the default per-session limit, bytes; 0 means none
	// (Options.MemoryLimit NoMemoryLimit).
	limit int64
	// parent is where session cgroups are made; nil when none can be
	// used, and why says why.
	parent *cgroup.Parent
	why    string
}

// newMemory resolves Options.MemoryLimit and finds the cgroup parent
// (Options.CgroupParent, else this process's own cgroup; cgroup.Find),
// and logs the mechanism in use: one Info line, or one Warn line when a
// default limit cannot be enforced (sessions then run without it; an
// explicit memoryLimitBytes is refused). An operator-given parent that
// cannot be used is an error: srtd does not start.
func newMemory(opts Options, lg *slog.Logger) (memory, error) {
	var m memory
	switch {
	case opts.MemoryLimit == 0:
		m.limit = DefaultMemoryLimit()
	case opts.MemoryLimit == NoMemoryLimit:
	case opts.MemoryLimit < MinMemoryLimit:
		return m, fmt.Errorf("memory limit %d: want at least %d bytes, 0 for the default or NoMemoryLimit", opts.MemoryLimit, MinMemoryLimit)
	default:
		m.limit = opts.MemoryLimit
	}
	p, err := cgroup.Find(opts.CgroupParent)
	switch {
	case err != nil && opts.CgroupParent != "":
		return m, fmt.Errorf("cgroup parent: %w", err)
	case err != nil:
		m.why = err.Error()
		if m.limit > 0 {
			lg.Warn("memory limit: unavailable; sessions run without the default limit, and a launch asking for memoryLimitBytes is refused (--cgroup-parent names a delegated cgroup)", "reason", m.why)
		} else {
			lg.Info("memory limit: off; unavailable for memoryLimitBytes too", "reason", m.why)
		}
	default:
		m.parent = p
		lg.Info("memory limit", "mechanism", p.String(), "default", limitText(m.limit))
	}
	return m, nil
}

func limitText(n int64) string {
	if n <= 0 {
		return "off"
	}
	return fmt.Sprintf("%d bytes", n)
}

// check is checkMemoryRequest for this port.
func (m *memory) check(spec Spec, b Backend) error {
	return checkMemoryRequest(spec, b, m.limit, m.why)
}

// sessionCgroup makes the memory cgroup of a native session of spec, or
// returns nil when it runs without a limit (none asked for and no default,
// or no cgroup usable for a default; check refused an explicit limit
// then). Its name carries srtd's pid, so that two servers under one parent
// do not collide. The detail is the handle's details.memoryLimit.
func (m *memory) sessionCgroup(spec Spec) (g *cgroup.Group, detail string, err error) {
	limit := memoryLimitFor(spec, m.limit)
	if limit <= 0 || m.parent == nil {
		return nil, memoryDetail(limit, "", m.why), nil
	}
	g, err = m.parent.New(fmt.Sprintf("srtd-%d-%s", os.Getpid(), spec.SessionID), limit)
	if err != nil {
		return nil, "", fmt.Errorf("the session's memory cgroup: %w", err)
	}
	return g, memoryDetail(limit, fmt.Sprintf("cgroup v%d", g.Version()), ""), nil
}

// totalRAM is this host's RAM in bytes (sysinfo(2)), 0 when unknown.
func totalRAM() int64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}
