package seccomp

import "golang.org/x/sys/unix"

// legacyModeCases are the mode-setting calls amd64 has besides the *at
// forms.
func legacyModeCases() []modeCase {
	return []modeCase{
		{"chmod u+s", call(unix.SYS_CHMOD, 0x1000, 0o4755), true},
		{"chmod o+w", call(unix.SYS_CHMOD, 0x1000, 0o666), true},
		{"chmod 644", call(unix.SYS_CHMOD, 0x1000, 0o644), false},
		{"open O_CREAT 6755", call(unix.SYS_OPEN, 0x1000, unix.O_CREAT|unix.O_WRONLY, 0o6755), true},
		{"open O_CREAT 644", call(unix.SYS_OPEN, 0x1000, unix.O_CREAT|unix.O_WRONLY, 0o644), false},
		{"creat 4700", call(unix.SYS_CREAT, 0x1000, 0o4700), true},
		{"creat 666", call(unix.SYS_CREAT, 0x1000, 0o666), false},
		{"mknod 4644", call(unix.SYS_MKNOD, 0x1000, unix.S_IFREG|0o4644, 0), true},
	}
}
