package int80

// Syscall makes i386 system call nr with up to three arguments through
// int $0x80 and returns eax. The arguments are truncated to 32 bits by
// the kernel. On a kernel without IA-32 emulation (CONFIG_IA32_EMULATION=n,
// or ia32_emulation=false on the command line) the instruction faults and
// the Go runtime dies with SIGSEGV, so call it only in a disposable child.
func Syscall(nr, a1, a2, a3 uintptr) uintptr
