// Package int80 lets the seccomp tests enter the kernel through the i386
// compat gate (int $0x80) from a 64-bit Go process, to check that the
// filter's arch test kills such calls. It is for tests only and exists on
// linux/amd64 only.
package int80
