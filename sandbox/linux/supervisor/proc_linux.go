package supervisor

import (
	"bytes"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// What the seccomp listener reads about a notifying process: its identity
// and the path arguments in its memory (notify_linux.go).

// procInfo returns the PID inside the sandbox of the process a host
// thread belongs to (the last NStgid field: notifications name threads)
// and its executable; zero and "" when it is gone.
func procInfo(hostPID int) (int, string) {
	base := "/proc/" + strconv.Itoa(hostPID)
	exe, _ := os.Readlink(base + "/exe")
	b, err := os.ReadFile(base + "/status")
	if err != nil {
		return 0, exe
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte("NStgid:")); ok {
			f := strings.Fields(string(rest))
			if len(f) > 0 {
				pid, _ := strconv.Atoi(f[len(f)-1])
				return pid, exe
			}
		}
	}
	return 0, exe
}

// readString copies a NUL-terminated string of at most PATH_MAX bytes out
// of process pid, a page at a time so that a string ending just before an
// unmapped page is still read.
func readString(pid int, addr uintptr) (string, error) {
	const pathMax = 4096
	var out []byte
	buf := make([]byte, pathMax)
	for len(out) < pathMax {
		chunk := int(pageSize - addr%pageSize)
		chunk = min(chunk, pathMax-len(out))
		if err := readMem(pid, addr, buf[:chunk]); err != nil {
			return "", err
		}
		if i := bytes.IndexByte(buf[:chunk], 0); i >= 0 {
			return string(append(out, buf[:i]...)), nil
		}
		out = append(out, buf[:chunk]...)
		addr += uintptr(chunk)
	}
	return "", unix.ENAMETOOLONG
}

var pageSize = uintptr(os.Getpagesize())

// readMem copies len(b) bytes at addr in process pid.
func readMem(pid int, addr uintptr, b []byte) error {
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(len(b))
	remote := []unix.RemoteIovec{{Base: addr, Len: len(b)}}
	n, err := unix.ProcessVMReadv(pid, local, remote, 0)
	if err != nil {
		return err
	}
	if n != len(b) {
		return unix.EFAULT
	}
	return nil
}
