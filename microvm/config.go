package microvm

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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
	// System are host system directories (policy.SystemDirs, policy.View's
	// System) shown read-only in the guest at their own path, so the
	// host's userland runs there (issue 20). A directory is one more
	// virtio-9p export, read-only three times as a read-only Share is, and
	// mounted with cache=loose in the guest (the host tree is not expected
	// to change during a run). A symbolic link (/bin -> usr/bin) is made
	// as the same link in the guest, not shared twice; its target is
	// visible only if it is itself in System. Entries that are neither a
	// directory nor a link to one (/run/.../stub-resolv.conf, which
	// SystemDirs adds for /etc/resolv.conf), or whose parent path holds a
	// link, are skipped and listed in Details()["systemSkipped"]. An
	// entry at or below /dev, /proc or /sys, or "/", is a config error:
	// the guest has its own. SystemHidden is hidden inside them.
	System []string
	// DenyRead are resolved host paths the guest must not read
	// (policy.Policy's DenyRead minus its AllowRead carve-outs; see
	// DenyReadOf). Each one inside a share or a System directory is
	// hidden on the host side, in QEMU's bubblewrap view, like
	// SystemHidden: the 9p server itself cannot export it. A path that
	// does not exist is skipped; one that cannot be hidden (QEMU
	// unconfined, a symbolic link on the way) makes Launch fail.
	DenyRead []string
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
	// Forbidden, when not nil, is asked about every address this VM's
	// proxies are about to dial, whatever Policy allowed
	// (proxy.Config.Forbidden): srt passes the native sandboxes' srtd
	// address guard (linux.ServerAddresses), so that a VM allowed
	// localhost cannot reach a running srtd's API either.
	Forbidden func(netip.AddrPort) string
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
	for i, d := range c.System {
		if err := checkSystemPath(d); err != nil {
			return fmt.Errorf("config: System[%d]: %w", i, err)
		}
	}
	for i, s := range c.Shares {
		if pseudoFS(filepath.Clean(s.GuestPath)) {
			return fmt.Errorf("config: Shares[%d]: %s is inside /dev, /proc or /sys, which the guest mounts itself", i, s.GuestPath)
		}
	}
	for i, p := range c.DenyRead {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("config: DenyRead[%d]: %q is not absolute", i, p)
		}
	}
	if len(c.Shares)+len(c.System) > 22 {
		// microvm has 24 virtio-mmio slots; the control port takes one.
		return errors.New("config: Shares and System: at most 22 together")
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

// SystemHidden are the secrets of a host's /etc that a guest never sees,
// even when /etc is in Config.System: each path (a filepath.Match
// pattern, expanded at Launch) that exists is covered on the host side,
// in QEMU's bubblewrap view, by an empty read-only directory or by
// /dev/null, so even a subverted guest kernel cannot have the 9p server
// read it. QEMU started by root keeps uid 0 for file ownership and so
// could read root's 0600 files without this.
//
// What is hidden and why (the secret a file holds):
//   - /etc/shadow, /etc/gshadow and their "-" backups: password hashes
//     (shadow(5), gshadow(5));
//   - /etc/security/opasswd: old password hashes (pam_pwhistory(8));
//   - /etc/ssl/private: TLS private keys (Debian's ssl-cert);
//   - /etc/ssh/ssh_host_*_key: the SSH host private keys (sshd(8), FILES;
//     the .pub halves stay visible);
//   - /etc/krb5.keytab: Kerberos service keys (krb5.conf(5));
//   - /etc/NetworkManager/system-connections, /etc/netplan: Wi-Fi and VPN
//     passwords (nm-settings-keyfile(5), netplan(5));
//   - /etc/wireguard: WireGuard private keys (wg-quick(8));
//   - /etc/ppp/*-secrets: PPP CHAP/PAP passwords (pppd(8));
//   - /etc/ipsec.secrets, /etc/ipsec.d/private: IPsec keys (ipsec.secrets(5));
//   - /etc/letsencrypt/archive, /etc/letsencrypt/keys: certbot's private keys.
//
// Shown on purpose: /etc/sudoers and /etc/sudoers.d (policy, not
// secrets: they name who may do what, and programs such as sudo -l read
// them), /etc/passwd and /etc/group (every user may read them on the
// host), the public halves of keys and certificates.
var SystemHidden = []string{
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
	"/etc/security/opasswd",
	"/etc/ssl/private",
	"/etc/ssh/ssh_host_*_key",
	"/etc/krb5.keytab",
	"/etc/NetworkManager/system-connections", "/etc/netplan",
	"/etc/wireguard",
	"/etc/ppp/*-secrets",
	"/etc/ipsec.secrets", "/etc/ipsec.d/private",
	"/etc/letsencrypt/archive", "/etc/letsencrypt/keys",
}

// pseudoFS reports whether guest path p is at or below /dev, /proc or
// /sys, which the guest's init mounts fresh (guest.mountBase).
func pseudoFS(p string) bool {
	for _, d := range []string{"/dev", "/proc", "/sys"} {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

func checkSystemPath(d string) error {
	if !filepath.IsAbs(d) {
		return fmt.Errorf("%q is not absolute", d)
	}
	switch c := filepath.Clean(d); {
	case c == "/":
		return errors.New("cannot share the host's / as a system directory")
	case pseudoFS(c):
		return fmt.Errorf("%s is inside /dev, /proc or /sys, which the guest mounts itself", d)
	case c == "/.srt" || strings.HasPrefix(c, "/.srt/") || c == "/init" || c == "/tmp" || c == "/run":
		return fmt.Errorf("%s is the guest's own (its init mounts it or lives there)", d)
	}
	return nil
}

// DenyReadOf returns what Config.DenyRead must be for p: the resolved
// path of every existing DenyRead entry that p.Readable says stays
// unreadable (an AllowRead at the same path re-opens it; the decision is
// policy's, seed 003). An AllowRead strictly inside a hidden directory
// cannot be shown again through the empty directory that hides it, so it
// is an error wrapping policy.ErrUnenforceable rather than a silently
// weaker or stronger view. A policy with the filesystem rules off hides
// nothing.
func DenyReadOf(p *policy.Policy) ([]string, error) {
	if p == nil || p.FilesystemDisabled {
		return nil, nil
	}
	var out []string
	for _, d := range p.DenyRead {
		if d.Kind == policy.Missing || p.Readable(d.Resolved) || slices.Contains(out, d.Resolved) {
			continue
		}
		out = append(out, d.Resolved)
	}
	for _, a := range p.AllowRead {
		if a.Kind == policy.Missing || !p.Readable(a.Resolved) {
			continue
		}
		for _, h := range out {
			if a.Resolved != h && policy.Within(a.Resolved, h) {
				return nil, fmt.Errorf("%s: %s is inside %s, which the microvm backend hides as a whole (an empty directory); remove the allowRead or use the native backend: %w", a.Rule, a.Literal, h, policy.ErrUnenforceable)
			}
		}
	}
	return out, nil
}
