package microvm

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/srt-go/srt/internal/syspath"
	"github.com/srt-go/srt/netrule"
	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/proxy"
	"github.com/srt-go/srt/settings"
	"github.com/srt-go/srt/violation"
)

// The guest's loopback ports of the proxy relays, as in the native
// backend (sandbox/linux.HTTPProxyPort, SOCKSProxyPort).
const (
	HTTPProxyPort  = 3128
	SOCKSProxyPort = 1080
)

// Share is one host directory shared into the guest over virtio-9p (seed
// 000, "SandboxBindMount").
type Share struct {
	// HostPath is an absolute, existing host directory.
	HostPath string
	// GuestPath is the absolute mount point in the guest.
	GuestPath string
	// ReadOnly is enforced three times: QEMU exports the share read-only
	// (-fsdev readonly=on), bubblewrap binds it read-only into QEMU's
	// view, and the guest mounts it read-only.
	ReadOnly bool
}

// Config describes one VM. The zero value of every field but Shares and
// Policy has a default.
type Config struct {
	// Shares are the only host directories the guest sees.
	Shares []Share
	// ProtectedPaths are guest paths that are never writable, even inside
	// a writable share (seed 000, "protectedPaths"). Each existing one is
	// bound read-only on itself in the guest and, on the host, bound
	// read-only into QEMU's view. Paths that do not exist at launch are
	// listed in Details()["unprotected"].
	ProtectedPaths []string
	// MemoryMiB is the guest RAM. Zero means 256.
	MemoryMiB int
	// CPUs is the number of vCPUs. Zero means 1.
	CPUs int
	// Policy is the egress allow/deny rule set, served by this VM's own
	// proxy.Server. Nil denies every destination.
	Policy *netrule.Policy
	// Parent is the upstream proxy this VM's proxies go through
	// (proxy.Config.Parent; policy.Network.Parent); nil dials directly.
	Parent *proxy.Parent
	// Filter is request filtering for this VM's proxies
	// (proxy.Config's Filtering; policy.Network.Filter).
	Filter proxy.Filtering
	// OnViolation is called for each refused egress connection, as
	// proxy.Config.OnViolation, and for each refusal the guest's seccomp
	// supervisor reports (filesystem writes the read-only shares and
	// protected paths refuse, seccomp refusals); violations are also
	// events. It is called from the goroutine reading the process's
	// stream, so it must not block.
	OnViolation func(violation.Violation)
	// MaxConns bounds the connections that proxy serves at once
	// (proxy.Config.MaxConns); 0 means proxy.DefaultMaxConns.
	MaxConns int
	// Accel is "auto" (the default: KVM when it really works, else TCG,
	// the reason in Details()["accelReason"]), "kvm" or "tcg".
	// SRT_MICROVM_ACCEL overrides an empty value.
	Accel string
	// BootTimeout bounds Launch. Zero means 60s.
	BootTimeout time.Duration
	// RequestTimeout bounds each control request (Suspend, Resume, the
	// start of an Exec). Zero means 30s.
	RequestTimeout time.Duration
	// QEMUPath is qemu-system-x86_64. Empty means SRT_MICROVM_QEMU, then
	// PATH. Tests point it at a missing file to simulate a host that
	// cannot run VMs.
	QEMUPath string
	// InitPath is the guest's /init, a static executable that calls
	// guest.Main when guest.IsInit. Empty means SRT_MICROVM_INIT, then
	// this executable (srt built with CGO_ENABLED=0 is its own guest).
	InitPath string
	// CacheDir holds the kernel and initramfs. Empty means
	// DefaultCacheDir.
	CacheDir string
	// Confine is "auto" (the default: QEMU runs under bubblewrap when bwrap
	// is installed), "bwrap" (required) or "none".
	Confine string
	// Hostname is the guest's host name. Empty means "srt-microvm".
	Hostname string
	// Events turns on the event stream (VM.Events). The consumer must
	// drain it: events are never dropped, so an unread stream grows.
	Events bool
	// Logger receives debug lines (QEMU's argv). Nil discards them.
	Logger *slog.Logger
	// Names, when not nil, is the compiled policy whose filesystem rules
	// every process in the guest runs under at creation time, as in the
	// native backend (filesystem.enforceNamesAtCreation): the same
	// sandbox/linux/supervisor with the notifying filter's EmulateCreates
	// options, the Landlock backstop where the guest kernel has Landlock,
	// and the set-id filter (sandbox/linux/inside's order). Only the
	// policy's filesystem half goes to the guest (wire.Rules): never its
	// network rules, credentials or masks. Its paths are host paths; the
	// guest judges a guest path at the host path a share shows there, and
	// paths no share shows (the guest's own root, /tmp, /run) are the
	// guest's private trees, outside the rules. The DenyWrite entries that
	// exist inside a writable share are also added to ProtectedPaths, so
	// QEMU's own view (host side, where the guest kernel has no say) keeps
	// them read-only. A process whose rules cannot be set up in the guest
	// does not start: Exec fails (fail closed). Nil keeps the observe-only
	// supervisor of the share table, which starts a process unobserved
	// when it cannot be set up.
	Names *policy.Policy
}

func (c *Config) validate() error {
	for i, s := range c.Shares {
		if !filepath.IsAbs(s.HostPath) || !filepath.IsAbs(s.GuestPath) {
			return fmt.Errorf("config: Shares[%d]: HostPath and GuestPath must be absolute", i)
		}
		if filepath.Clean(s.GuestPath) == "/" {
			return fmt.Errorf("config: Shares[%d]: cannot share onto the guest's /", i)
		}
	}
	for i, p := range c.ProtectedPaths {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("config: ProtectedPaths[%d]: %q is not absolute", i, p)
		}
	}
	if len(c.Shares) > 16 {
		return errors.New("config: Shares: at most 16")
	}
	switch c.Accel {
	case "", "auto", "kvm", "tcg":
	default:
		return fmt.Errorf("config: Accel: %q is not auto, kvm or tcg", c.Accel)
	}
	switch c.Confine {
	case "", "auto", "bwrap", "none":
	default:
		return fmt.Errorf("config: Confine: %q is not auto, bwrap or none", c.Confine)
	}
	return nil
}

func (c *Config) setDefaults() {
	if c.MemoryMiB <= 0 {
		c.MemoryMiB = 256
	}
	if c.CPUs <= 0 {
		c.CPUs = 1
	}
	if c.BootTimeout == 0 {
		c.BootTimeout = 60 * time.Second
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.Accel == "" {
		c.Accel = getenv("SRT_MICROVM_ACCEL", "auto")
	}
	if c.Hostname == "" {
		c.Hostname = "srt-microvm"
	}
	for i := range c.Shares {
		c.Shares[i].HostPath = filepath.Clean(c.Shares[i].HostPath)
		c.Shares[i].GuestPath = filepath.Clean(c.Shares[i].GuestPath)
	}
}

// UnavailableError says this host cannot run a microvm: an explicit
// microvm request must fail with it, never fall back (seed 000).
type UnavailableError struct {
	Reason string // "qemu", "guest kernel", "guest init", "start QEMU", "bubblewrap"
	Err    error
}

func (e *UnavailableError) Error() string {
	return "microvm unavailable: " + e.Reason + ": " + e.Err.Error()
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// ErrBusy is returned by a suspend to disk while a process runs or a
// share is in use.
var ErrBusy = errors.New("microvm busy")

// ErrState is returned for an operation the VM's state does not allow.
var ErrState = errors.New("operation not allowed in this state")

func findQEMU(p string) (string, error) {
	if p == "" {
		p = getenv("SRT_MICROVM_QEMU", "qemu-system-x86_64")
	}
	var full string
	var err error
	if filepath.IsAbs(p) {
		full, err = exec.LookPath(p)
	} else {
		full, err = syspath.LookPath(p)
	}
	if err != nil {
		return "", &UnavailableError{Reason: "qemu",
			Err: fmt.Errorf("%w (install qemu-system-x86: apt-get install qemu-system-x86)", err)}
	}
	return full, nil
}

// ProbeResult says whether this host can run microvms (issue 7, "Probe").
type ProbeResult struct {
	// Available is true when QEMU is installed and a test VM booted and
	// ran a command.
	Available bool `json:"available"`
	// Accel is "kvm" or "tcg" when Available.
	Accel string `json:"accel,omitempty"`
	// Reason says why not Available, or, when Available with TCG, why KVM
	// was not used.
	Reason string `json:"reason,omitempty"`
	// BootMS is the test boot's launch-to-ready time.
	BootMS int64 `json:"bootMs,omitempty"`
	// InstallHint names the missing packages, if that is the reason.
	InstallHint string `json:"installHint,omitempty"`
}

// RunConfig is what "srt --backend microvm -- COMMAND" needs.
type RunConfig struct {
	// Settings supplies the egress rules (network.allowedDomains,
	// deniedDomains, their reasons). Nil means settings.Default(): no
	// network. network.httpProxyPort/socksProxyPort are not used: the
	// VM's own proxies filter.
	Settings *settings.Settings
	// Workdir is the host directory shared at the same path in the guest
	// and used as the command's working directory. Empty means the
	// current directory.
	Workdir string
	// ReadOnly shares Workdir read-only.
	ReadOnly bool
	// Env adds to the guest environment. TERM, COLORTERM, LANG and LC_ALL
	// of this process are passed on; nothing else of it is.
	Env []string
	// VM is the base VM configuration (memory, CPUs, accelerator...);
	// its Shares, Policy and Events are filled in by RunCommand.
	VM Config
}

// Stdio are the command's standard streams. When In is a terminal the
// command gets a PTY in the guest, In is put in raw mode for the
// duration, and window size changes are forwarded.
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
}
