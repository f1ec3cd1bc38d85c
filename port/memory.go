package port

import (
	"fmt"
	"strconv"
	"strings"
)

// Memory limits of sessions (issue 16, "killed says why, including
// OOM"): every native session on Linux runs in a memory cgroup of its
// own (internal/cgroup) with the spec's memoryLimitBytes or, when it
// names none, Options.MemoryLimit. A process the kernel's OOM killer ends
// there ends its exec's stream with killed, reason "oom".
const (
	// MinMemoryLimit is the smallest memoryLimitBytes a spec may ask for,
	// in bytes: below it bubblewrap and the sandbox's PID 1 (a Go
	// program) may not start at all.
	MinMemoryLimit = 16 << 20
	// MaxDefaultMemoryLimit caps DefaultMemoryLimit: 4 GiB.
	MaxDefaultMemoryLimit = 4 << 30
	// NoMemoryLimit as Options.MemoryLimit turns the default limit off
	// (srtd's --memory-limit off): sessions that name no
	// memoryLimitBytes run without one.
	NoMemoryLimit = -1
)

// DefaultMemoryLimit is Options.MemoryLimit when zero, in bytes: half of
// this host's RAM or MaxDefaultMemoryLimit, whichever is smaller
// (MaxDefaultMemoryLimit where the RAM is unknown).
func DefaultMemoryLimit() int64 {
	if ram := totalRAM(); ram > 0 && ram/2 < MaxDefaultMemoryLimit {
		return ram / 2
	}
	return MaxDefaultMemoryLimit
}

// ParseMemoryLimit reads srtd's --memory-limit: "" or "default"
// (0, meaning DefaultMemoryLimit), "off" or "0" (NoMemoryLimit), or a
// number of bytes with an optional binary suffix K, M, G or T (KiB, MiB,
// GiB, TiB; "512M", "4G"), at least MinMemoryLimit.
func ParseMemoryLimit(s string) (int64, error) {
	switch strings.ToLower(s) {
	case "", "default":
		return 0, nil
	case "off", "0":
		return NoMemoryLimit, nil
	}
	num, mult := s, int64(1)
	if i := len(s) - 1; i > 0 {
		if k := strings.IndexByte("KMGT", s[i]&^0x20); k >= 0 {
			num, mult = s[:i], int64(1)<<(10*(k+1))
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("--memory-limit %q: want off, default, or a number of bytes with an optional K, M, G or T suffix", s)
	}
	if n*mult < MinMemoryLimit {
		return 0, fmt.Errorf("--memory-limit %q: below the minimum of %d bytes (16M)", s, MinMemoryLimit)
	}
	return n * mult, nil
}

// checkMemoryField is Validate's rule for memoryLimitBytes: absent (0),
// or at least MinMemoryLimit. The server's own cap is checked at launch
// (memory.check).
func checkMemoryField(n int64) error {
	if n != 0 && n < MinMemoryLimit {
		return &SpecError{"memoryLimitBytes", fmt.Sprintf("%d bytes: at least %d (16 MiB), or absent for the server's default", n, MinMemoryLimit)}
	}
	return nil
}

// memoryLimitFor is the limit a session of spec runs under, in bytes
// (0: none): its own memoryLimitBytes, else the port's default.
func memoryLimitFor(spec Spec, def int64) int64 {
	if spec.MemoryLimitBytes > 0 {
		return spec.MemoryLimitBytes
	}
	return def
}

// checkMemoryRequest is the launch-time rule for an explicit
// memoryLimitBytes: not above the port's limit (a *SpecError, 400); not
// on a backend or host that cannot enforce it (ErrUnenforceable, 422:
// never a session without the limit it asked for). why is "" when this
// host can make memory cgroups, else the reason it cannot.
func checkMemoryRequest(spec Spec, b Backend, def int64, why string) error {
	want := spec.MemoryLimitBytes
	if want == 0 {
		return nil
	}
	if def > 0 && want > def {
		return &SpecError{"memoryLimitBytes", fmt.Sprintf("%d bytes is above this server's limit of %d bytes (srtd --memory-limit)", want, def)}
	}
	switch {
	case b == BackendNone:
		return fmt.Errorf("%w: memoryLimitBytes: backend none runs the session on the host, in no memory cgroup; not launching it without the limit it asks for", ErrUnenforceable)
	case b == BackendMicroVM:
		return fmt.Errorf("%w: memoryLimitBytes: a microvm session's memory limit is its VM's RAM (microvm.Config.MemoryMiB), not a cgroup; not launching it with another limit than the one it asks for", ErrUnenforceable)
	case why != "":
		return fmt.Errorf("%w: memoryLimitBytes %d: no memory cgroup can be used on this host (%s); not launching the session without the limit it asks for (srtd --cgroup-parent names a delegated one)", ErrUnenforceable, want, why)
	}
	return nil
}

// memoryDetail is the handle's details.memoryLimit: the limit in force
// and how, "off", or "unavailable: why".
func memoryDetail(limit int64, mech, why string) string {
	switch {
	case limit <= 0:
		return "off"
	case why != "":
		return "unavailable: " + why
	}
	return fmt.Sprintf("%d bytes (%s)", limit, mech)
}
