package seccomp

import "github.com/srt-go/srt/seccomp/internal/int80"

// int80Syscall enters the kernel through the i386 gate; nil where the
// instruction does not exist.
var int80Syscall = int80.Syscall
