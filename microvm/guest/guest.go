// Package guest is the microvm guest's PID 1: a static Go program that the
// host puts in the initramfs as /init. It mounts the pseudo filesystems,
// loads the guest kernel's virtio and 9p modules, opens the virtio-serial
// control port and serves the host's requests over yamux (package wire):
// mount the shares, run processes (pipes or a PTY), relay the guest's
// loopback proxy ports to the host, quiesce for a snapshot, power off.
//
// The same binary also holds two small tools for tests and diagnostics
// (Tool): "fetch URL" (an HTTP GET through the proxy environment) and
// "dial HOST:PORT" (a direct TCP connection), because busybox's network
// applets crash in the static Debian build.
//
// Who calls it: a binary that may run as the guest's /init calls IsInit
// first thing in main and, when it reports true, Main, which never
// returns.
package guest

import "os"

// InitEnv is set to "1" on the guest kernel command line. The kernel
// passes an unknown "KEY=value" parameter without a dot to /init as an
// environment variable, which is how Main knows it runs inside a microvm
// and not, say, as PID 1 of some container.
const InitEnv = "SRT_MICROVM"

// marker is in every binary that links this package (IsInit reads it,
// so the linker keeps it). The host looks for it before using an
// executable as /init, so a binary that would not run the agent is
// refused at Launch instead of booting a guest that hangs.
var marker = "srt-microvm-guest-agent/1"

// IsInit reports whether this process is the microvm guest's /init.
func IsInit() bool {
	return os.Getpid() == 1 && os.Getenv(InitEnv) == "1" && marker != ""
}
