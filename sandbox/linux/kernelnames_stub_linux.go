//go:build !srt_bpflsm

package linux

// This file runs in srt built without the in-kernel path of the
// creation-time name rules (the default build): every run uses the
// supervisor, and srt does not link the BPF loader (cilium/ebpf: about
// 2 MB of binary and 1 MB of memory per process).

import (
	"io"
	"log/slog"
	"os"

	"github.com/srt-go/srt/sandbox/linux/fsplan"
	"github.com/srt-go/srt/sandbox/linux/wire"
	"github.com/srt-go/srt/violation"
)

// errNotBuilt is why a run of this build uses the supervisor.
var errNotBuilt = errNoKernelPath{"this srt is built without the in-kernel path (go build -tags srt_bpflsm)"}

// kernelNames is the supervisor's path in this build: nil and why.
func kernelNames(Config, *wire.InitSpec, string, fsplan.Mapping, func(*os.File) int, func(violation.Violation), *slog.Logger) (io.Closer, error) {
	if os.Getenv(NameRulesEnv) != "kernel" {
		return nil, errNotChosen
	}
	return nil, errNotBuilt
}

// KernelNamesPath returns the supervisor's path and why (for
// `srt --check`).
func KernelNamesPath() (string, error) {
	if os.Getenv(NameRulesEnv) != "kernel" {
		return NamePathSupervisor, errNotChosen
	}
	return NamePathSupervisor, errNotBuilt
}
