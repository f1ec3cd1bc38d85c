package main

import (
	"context"
	"log/slog"

	"github.com/srt-go/srt/microvm"
	"github.com/srt-go/srt/port"
)

// portOptions are the flags that configure the port.
type portOptions struct {
	sandboxOn      bool
	defaultBackend string
	// nameGlobs is --name-glob-write-denies: "standard" (the seed's
	// launch policy, .env *.key *.pem) or "none" (the operator's explicit
	// choice of a launch policy without them).
	nameGlobs string
	bwrap     string
	// microvm is --microvm: "auto" (the microvm package's launcher,
	// probed with a test boot) or "off".
	microvm string
	// maxSessions is --max-sessions: the port's session limit.
	maxSessions int
	// maxConnsPerSession is --max-conns-per-session as the descriptor
	// budget left it (descriptorBudget).
	maxConnsPerSession int
	// selfDeny are srtd's own API addresses: denied to every session's
	// egress, whatever its allow-list, so that no sandbox can drive the
	// server that made it (escape class 21).
	selfDeny []string
	// memoryLimit is --memory-limit (port.ParseMemoryLimit), cgroupParent
	// --cgroup-parent: port.Options.MemoryLimit and CgroupParent.
	memoryLimit  int64
	cgroupParent string
}

// newPort probes the host once (the microvm part in the background) and
// returns the port.
func newPort(o portOptions, lg *slog.Logger) (port.Port, error) {
	opts := port.Options{
		Sandbox:            port.SandboxOn,
		Logger:             lg,
		DefaultBackend:     port.Backend(o.defaultBackend),
		BwrapPath:          o.bwrap,
		MaxSessions:        o.maxSessions,
		MaxConnsPerSession: o.maxConnsPerSession,
		MemoryLimit:        o.memoryLimit,
		CgroupParent:       o.cgroupParent,
	}
	switch {
	case !o.sandboxOn:
		opts.Sandbox = port.SandboxOff
		opts.MicroVM = port.MicroVMDisabled("not probed: the sandbox is off (--sandbox off)")
	case o.microvm == "off":
		opts.MicroVM = port.MicroVMDisabled("disabled by --microvm off")
	default:
		opts.MicroVM = port.NewMicroVMLauncher(microvm.Config{})
	}
	if o.nameGlobs == "none" {
		opts.NameGlobWriteDenies = []string{}
	}
	if len(o.selfDeny) > 0 {
		b := port.DefaultBaseline()
		b.Denied = append(b.Denied, o.selfDeny...)
		opts.Baseline = &b
	}
	return port.New(context.Background(), opts)
}
