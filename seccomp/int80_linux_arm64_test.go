package seccomp

// int80Syscall is nil: arm64 has no int $0x80 (its compat ABI needs an
// AArch32 binary), so the arch check is tested in bpf.VM only.
var int80Syscall func(nr, a1, a2, a3 uintptr) uintptr
