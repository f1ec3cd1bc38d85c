// Package namelsm checks the creation-time name rules of a sandbox in the
// kernel: a BPF LSM program (bpf/namelsm.bpf.c, object generated with
// bpf2go and committed) on the hooks that bring a name into being or
// write a file by name — inode_create, inode_mkdir, inode_mknod,
// inode_symlink, inode_link (the new name, and the old one as a second
// name for a protected file), file_open for writing (FMODE_WRITE or
// O_TRUNC, not a file the same open created) and path_truncate — plus
// inode_rename as a backstop: srt's supervisor performs every rename of
// the sandbox from outside it, so a rename made inside went past the
// seccomp filter and is refused.
//
// Where it runs, srt's seccomp filter no longer notifies creating calls
// (seccomp.Options.KernelNames): only renames (a directory renamed into
// place must bring no protected name; git's config.lock → config needs a
// look at the content) and umask stay with the supervisor. Where it
// cannot run — not root, no BPF LSM in the kernel's lsm= list, a kernel
// that refuses to load or attach it (this project's CI VM refuses every
// BPF program that attaches to a kernel function, tracing and LSM alike,
// with EPERM), a rule it cannot express — srt uses the supervisor, with
// the same rules; `srt --check` and `srt -d` say which path runs.
//
// # Scope
//
// Each srt run loads its own program and maps, and registers one mount
// namespace, its sandbox's, in the scopes map; every hook first looks the
// caller's mount namespace up there, so host processes and other
// sandboxes pass at the cost of one lookup. PID 1 sends its namespace to
// srt (wire.SendNamespace) after its seccomp filter is on and waits for
// srt's answer before it runs anything of the command's. The command
// cannot leave the namespace: the seccomp filter refuses unshare, setns
// and clone with namespace flags, which is why a sandbox that allows
// nested user namespaces uses the supervisor. Nothing is pinned: the
// program goes with srt's descriptors.
//
// # Matching
//
// A name is judged by its dentry chain: d_name up the d_parent links to
// the superblock's root. Bind mounts share dentries, so the chain spells
// the host's names (from the file system's root) whatever the sandbox's
// mounts. Each component is hashed (FNV-1a, 64 bits) and the rules are
// hash-map keys (Compile):
//
//   - "**/a/b" (up to 8 literal components): the last components;
//   - "**/a/b/**": a window of components anywhere (the name itself or
//     an ancestor);
//   - "**/*.ext" (a literal tail of up to 32 bytes): the last name's tail;
//   - "/abs/path" and "/abs/path/**" (literal): the path from its file
//     system's root, found in srt's mount table, and the device;
//   - for symlinks, the directory parts of each rule (names.go's
//     symlinkDenied).
//
// A hash collision can only refuse more. The git exceptions compare the
// bytes: mkdir of .git/hooks and a regular *.sample directly in it pass
// the **/.git/hooks/** rule; a .git that is not a directory, a
// commondir, and HEAD, objects or refs outside a .git tree are refused
// (the last is stricter than the supervisor, which looks into the
// directory to tell a git directory; the kernel path cannot: git init
// --bare fails on it). A chain deeper than 64 components is refused when
// a rule needs the whole chain. A policy with a rule of another shape,
// or whose write roots are on a file system mounted under a name a rule
// uses (the chain does not show mount points above the file system's
// root), gets the supervisor. The file systems of TMPDIR, /dev and /proc
// in the sandbox are exempt, by device, unless a write root shares one.
//
// Refusals are EACCES, as the supervisor's, and each goes through a ring
// buffer to the same violation record (Program.Serve), with the rule
// text the supervisor would give.
//
// # Building
//
// The objects are committed; to regenerate them after changing bpf/*.c
// or bpf/*.h: apt-get install clang-14 libbpf-dev, then go generate
// ./sandbox/linux/namelsm. bpf/core.h declares the few kernel structures
// the program reads, relocated at load time against the running kernel's
// BTF (CO-RE), instead of a generated vmlinux.h. The two test objects
// (matchtest, verifytest) are built into the tests only.
package namelsm
