// Package microvm is the backend with a kernel boundary (seed 000,
// "microvm"; issue 7): each sandbox is a QEMU virtual machine with its own
// Linux kernel, so the workload never makes a host system call.
//
//	vm, err := microvm.Launch(ctx, microvm.Config{
//		Shares: []microvm.Share{{HostPath: wd, GuestPath: wd}},
//		Policy: pol, // *netrule.Policy, served by this VM's own proxies
//	})
//	if err != nil { ... }   // *UnavailableError: never fall back to the host
//	defer vm.Close()
//	p, err := vm.Exec(ctx, microvm.ExecRequest{Argv: argv, Dir: wd, Stdout: os.Stdout})
//	code, err := p.Wait()
//
// # Machine
//
// QEMU's "microvm" machine, TCG or KVM (Config.Accel; "auto" proves KVM
// with a test boot and caches the verdict), no default devices, no
// network card, one virtio-serial port, one virtio-9p device per share,
// a serial console for the kernel's last words, and QMP for stop, cont
// and migration (microvm-recipe.md §4). KVM is not usable on the
// development machines (nested PVM), so everything here was measured
// under TCG.
//
// # Guest kernel and /init
//
// Prepare fetches Debian's linux-image-amd64 with apt-get download,
// extracts the ELF vmlinux from its bzImage (booted through PVH: no
// in-guest decompression) and the virtio/9p modules, and caches them in
// /var/cache/srt-microvm. SRT_MICROVM_KERNEL selects a kernel with the
// drivers built in instead (kernel/build-mini.sh builds one from Debian's
// linux-source-6.1, twice as fast to boot).
//
// The initramfs is generated at run time and cached by content hash: /init
// is a static Go binary that calls guest.Main (package guest), plus the
// modules, a static busybox for a shell and tools, and the host's CA
// bundle. The default /init is the running executable itself when it is
// static (srt built with CGO_ENABLED=0, its main calling guest.IsInit
// first), so no second binary has to be built or shipped; Config.InitPath
// or SRT_MICROVM_INIT name another (microvm/guest/cmd/srt-guest).
//
// # Control channel
//
// yamux (github.com/hashicorp/yamux) over the virtio-serial port carries
// everything (package internal/wire): the guest configuration (shares,
// protected paths) once per boot or restore, one stream per process
// (stdin, stdout, stderr, exit status, signals, PTY resize), VM-wide
// control requests, and one stream per egress connection opened by the
// guest. Keep-alives are off so a suspended guest is not declared dead.
//
// # Egress
//
// No NIC: the guest's only way out is its loopback relays on
// 127.0.0.1:3128 (HTTP) and :1080 (SOCKS5), whose connections become
// streams served by this VM's proxy.Server under Config.Policy; every
// process gets proxy.Env. Refusals are violation events.
//
// # Defence in depth around QEMU
//
// QEMU runs with -sandbox on (its seccomp filter: no exec, no privilege
// changes), under bubblewrap when installed (Config.Confine): new user,
// PID, network, IPC and UTS namespaces, every capability dropped, and a
// filesystem of /usr read-only, the kernel, the initramfs, the run
// directory and the shares (read-only shares and protected paths bound
// read-only, so the host enforces them even against a subverted guest
// kernel). Run by root, QEMU keeps uid 0 so that files it creates in a
// share belong to the share's owner, but holds no capability on the host.
// In the guest, workloads run without CAP_SYS_ADMIN and friends (bounding
// set), so they cannot unmount a read-only bind.
//
// # Creation-time name rules in the guest
//
// With Config.Names, every process the guest starts runs under the
// policy's filesystem rules as a native sandbox does: the supervisor of
// sandbox/linux/supervisor performs its creation calls under the name
// rules (mandatory names at any depth, denyWrite globs, the git rules),
// judging each guest path at the host path its share shows there
// (fsplan.Mapping.GuestRoot: what no share shows is the guest's own); the
// thread that forks the process carries the notifying filter, the Landlock
// backstop (where the guest kernel has it; Details()["guestLandlock"]) and
// the set-id filter. A process whose rules cannot be set up does not
// start. On the host side, the policy's existing denies inside writable
// shares are bound read-only in QEMU's view and their parent directories
// bound on themselves (fsplan.PinnedParents), so neither can be changed
// or moved through QEMU whatever the guest kernel does.
//
// # Lifecycle and leftovers
//
// created → warm (agent ready) → active (an Exec runs) → suspended → warm
// … → destroyed; error when the boot fails or QEMU dies. QEMU gets
// PR_SET_PDEATHSIG (through bwrap's --die-with-parent), so it dies with
// its parent even on SIGKILL. The run directory holds only the sockets
// QEMU connects to at start-up and is removed as soon as it has
// connected; a disk snapshot is an unlinked file. So nothing is left on
// disk after any kind of exit except the cache.
package microvm
