package supervisor

// What srt reads about a notifying caller while it waits: its identity,
// umask, IDs and terminal in /proc, and the arguments in its memory.

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

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

// pathArg reads a string argument; "" with an error.
func pathArg(pid int, addr uint64) (string, unix.Errno) {
	if addr == 0 {
		return "", unix.EFAULT
	}
	s, err := readString(pid, uintptr(addr))
	if err != nil {
		if e, ok := err.(unix.Errno); ok && e == unix.ENAMETOOLONG {
			return "", e
		}
		return "", unix.EFAULT
	}
	return s, 0
}

// callPath returns the absolute path a call names: its path argument
// joined to the directory of its dirfd argument (or the caller's working
// directory). A NULL path (utimensat on a descriptor) names the
// descriptor's own file. "" when it cannot be read.
func callPath(pid int, args [6]uint64, dirfdArg, pathArg int) string {
	var p string
	if addr := uintptr(args[pathArg]); addr != 0 {
		s, err := readString(pid, addr)
		if err != nil {
			return ""
		}
		p = s
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	dirfd := int32(unix.AT_FDCWD)
	if dirfdArg >= 0 {
		dirfd = int32(uint32(args[dirfdArg]))
	}
	link := "/proc/" + strconv.Itoa(pid) + "/cwd"
	if dirfd != unix.AT_FDCWD {
		link = "/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(int(dirfd))
	}
	dir, err := os.Readlink(link)
	if err != nil || !filepath.IsAbs(dir) {
		return ""
	}
	return filepath.Join(dir, p)
}

// statusField returns the value of a "Name:\tvalue" line of a
// /proc/PID/status file, trimmed.
func statusField(b []byte, name string) (string, bool) {
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte(name)); ok {
			return strings.TrimSpace(string(rest)), true
		}
	}
	return "", false
}

// nsIDs returns thread pid's thread-group and thread IDs in the sandbox's
// PID namespace (the last NStgid and NSpid of /proc/PID/status): what
// /proc/self and /proc/thread-self name for it there.
func nsIDs(pid int) (tgid, tid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, false
	}
	last := func(name string) int {
		v, _ := statusField(b, name)
		f := strings.Fields(v)
		if len(f) == 0 {
			return 0
		}
		n, _ := strconv.Atoi(f[len(f)-1])
		return n
	}
	tgid, tid = last("NStgid:"), last("NSpid:")
	return tgid, tid, tgid > 0 && tid > 0
}

// callerTTY opens the controlling terminal of thread pid (tty_nr of
// /proc/PID/stat): the pty srt gave the command, or one the command made
// in the sandbox's /dev/pts. ENXIO when it has none, as open(/dev/tty)
// gives. ctty is srt's O_PATH descriptor of its pty (-1: none), root the
// sandbox's root.
func callerTTY(pid, ctty, root int) (int, unix.Errno) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1, unix.ENXIO
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1, unix.ENXIO
	}
	f := strings.Fields(string(b[i+1:])) // state ppid pgrp session tty_nr …
	if len(f) < 5 {
		return -1, unix.ENXIO
	}
	nr, _ := strconv.ParseUint(f[4], 10, 64)
	if nr == 0 {
		return -1, unix.ENXIO
	}
	dev := unix.Mkdev(unix.Major(nr), unix.Minor(nr))
	var st unix.Stat_t
	if ctty >= 0 && unix.Fstat(ctty, &st) == nil && st.Rdev == dev {
		t, err := unix.FcntlInt(uintptr(ctty), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return -1, errnoOf(err)
		}
		return t, 0
	}
	if maj := unix.Major(dev); maj >= 136 && maj < 144 && root >= 0 {
		n := (maj-136)<<8 | unix.Minor(dev)
		t, err := unix.Openat2(root, "/dev/pts/"+strconv.Itoa(int(n)), &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS,
		})
		if err == nil {
			if unix.Fstat(t, &st) == nil && st.Rdev == dev {
				return t, 0
			}
			unix.Close(t)
		}
	}
	return -1, unix.ENXIO
}

// ProcInfo returns host process hostPID's PID in the sandbox's PID
// namespace and its executable, as the supervisor records them (for the
// in-kernel name rules' records, sandbox/linux/namelsm).
func ProcInfo(hostPID int) (nsPID int, exe string) { return procInfo(hostPID) }
