package port

import (
	"errors"
	"testing"
)

func TestParseMemoryLimit(t *testing.T) {
	for in, want := range map[string]int64{
		"": 0, "default": 0, "off": NoMemoryLimit, "OFF": NoMemoryLimit, "0": NoMemoryLimit,
		"16M": 16 << 20, "512m": 512 << 20, "4G": 4 << 30, "1T": 1 << 40, "67108864": 64 << 20, "65536K": 64 << 20,
	} {
		if got, err := ParseMemoryLimit(in); err != nil || got != want {
			t.Errorf("ParseMemoryLimit(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"-1", "1", "15M", "4X", "G", "1.5G", "99999999999T"} {
		if got, err := ParseMemoryLimit(bad); err == nil {
			t.Errorf("ParseMemoryLimit(%q) = %d; want an error", bad, got)
		}
	}
}

func TestDefaultMemoryLimit(t *testing.T) {
	d := DefaultMemoryLimit()
	if d < MinMemoryLimit || d > MaxDefaultMemoryLimit {
		t.Errorf("DefaultMemoryLimit() = %d", d)
	}
	if ram := totalRAM(); ram > 0 && d > ram/2 {
		t.Errorf("DefaultMemoryLimit() = %d, more than half of RAM %d", d, ram)
	}
}

func TestMemoryLimitSpecRules(t *testing.T) {
	base := Spec{SessionID: "m", WorkspaceID: "w"}
	var se *SpecError
	for _, n := range []int64{-1, 1, MinMemoryLimit - 1} {
		s := base
		s.MemoryLimitBytes = n
		if err := Validate(s); !errors.As(err, &se) || se.Field != "memoryLimitBytes" {
			t.Errorf("memoryLimitBytes %d: %v; want a SpecError naming it", n, err)
		}
	}
	s := base
	s.MemoryLimitBytes = 64 << 20
	if err := Validate(s); err != nil {
		t.Errorf("64 MiB: %v", err)
	}
	if err := checkMemoryRequest(s, BackendNative, 32<<20, ""); !errors.As(err, &se) || se.Field != "memoryLimitBytes" {
		t.Errorf("above the server's limit: %v; want a SpecError", err)
	}
	if err := checkMemoryRequest(s, BackendNative, 0, ""); err != nil {
		t.Errorf("no server limit, a cgroup: %v", err)
	}
	if err := checkMemoryRequest(s, BackendNative, 1<<30, "no cgroup here"); !errors.Is(err, ErrUnenforceable) {
		t.Errorf("no cgroup: %v; want ErrUnenforceable", err)
	}
	for _, b := range []Backend{BackendNone, BackendMicroVM} {
		if err := checkMemoryRequest(s, b, 1<<30, ""); !errors.Is(err, ErrUnenforceable) {
			t.Errorf("%s: %v; want ErrUnenforceable", b, err)
		}
	}
	if err := checkMemoryRequest(base, BackendNone, 1<<30, "no cgroup here"); err != nil {
		t.Errorf("no explicit limit: %v", err)
	}
	if got := memoryLimitFor(base, 7<<20); got != 7<<20 {
		t.Errorf("memoryLimitFor default = %d", got)
	}
	if got := memoryLimitFor(s, 1<<30); got != 64<<20 {
		t.Errorf("memoryLimitFor explicit = %d", got)
	}
	for _, c := range []struct {
		limit     int64
		mech, why string
		want      string
	}{{0, "", "x", "off"}, {5, "", "no cgroup", "unavailable: no cgroup"}, {5, "cgroup v1", "", "5 bytes (cgroup v1)"}} {
		if got := memoryDetail(c.limit, c.mech, c.why); got != c.want {
			t.Errorf("memoryDetail(%d, %q, %q) = %q; want %q", c.limit, c.mech, c.why, got, c.want)
		}
	}
}
