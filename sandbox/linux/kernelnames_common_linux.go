package linux

// This file runs in srt: what a run and `srt --check` say of the path of
// the creation-time name rules, whether or not this build has the
// in-kernel one (kernelnames_linux.go, build tag srt_bpflsm).

// NameRulesEnv chooses the path of the creation-time rules: "kernel"
// lets a run try the in-kernel one (experimental: it has not yet run end
// to end on a kernel that loads it, and it does not tell a bare
// repository that existed before the run; SECURITY.md); anything else,
// and unset, is the supervisor's.
const NameRulesEnv = "SRT_NAME_RULES"

// errNotChosen is why a run without SRT_NAME_RULES=kernel uses the
// supervisor.
var errNotChosen = errNoKernelPath{"the in-kernel path is experimental: " + NameRulesEnv + "=kernel tries it"}

// Paths of the creation-time name rules, as `srt --check` and `srt -d`
// name them.
const (
	NamePathKernel     = "kernel (BPF LSM)"
	NamePathSupervisor = "supervisor (seccomp user notification)"
)

// errNoKernelPath is why a run uses the supervisor.
type errNoKernelPath struct{ why string }

func (e errNoKernelPath) Error() string { return e.why }
