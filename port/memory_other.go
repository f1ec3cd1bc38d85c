//go:build !linux

package port

import (
	"log/slog"
	"runtime"
)

// memory is the port's memory-limit state: no memory cgroups off Linux.
type memory struct {
	limit int64 // the default per-session limit asked for, bytes; 0 none
	why   string
}

func newMemory(opts Options, lg *slog.Logger) (memory, error) {
	m := memory{why: "no memory cgroups on " + runtime.GOOS}
	switch {
	case opts.MemoryLimit == 0:
		m.limit = DefaultMemoryLimit()
	case opts.MemoryLimit > 0:
		m.limit = opts.MemoryLimit
	}
	if m.limit > 0 {
		lg.Warn("sessions run without a memory limit", "reason", m.why)
	}
	return m, nil
}

// check is checkMemoryRequest for this port.
func (m *memory) check(spec Spec, b Backend) error {
	return checkMemoryRequest(spec, b, m.limit, m.why)
}

func totalRAM() int64 { return 0 }
