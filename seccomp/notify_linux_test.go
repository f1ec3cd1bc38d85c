//go:build amd64 || arm64

package seccomp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// notifyVictimEnv makes the test binary a notification victim: it
// installs the Notify filter on itself (irreversible, hence a child
// process) and reports what its calls returned.
const notifyVictimEnv = "SRT_SECCOMP_NOTIFY_VICTIM"

func init() {
	if mode := os.Getenv(notifyVictimEnv); mode != "" {
		os.Exit(notifyVictim(mode, os.Getenv("SRT_NOTIFY_DIR")))
	}
}

func notifyVictim(mode, dir string) int {
	opts := Options{Notify: true, ObserveWrites: true}
	prog, err := Build(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "victim:", err)
		return 3
	}
	table, _ := Table(opts)
	fd, err := InstallListener(prog)
	if err != nil {
		fmt.Fprintln(os.Stderr, "victim:", err)
		return 3
	}
	seen := make(chan string, 16)
	switch mode {
	case "served":
		// The listener runs on a thread of this same process: it makes no
		// notified call itself, so it cannot wait on itself.
		go func() {
			for {
				n, err := Receive(fd)
				if err != nil {
					continue
				}
				c, ok := table[uint32(n.Data.Nr)]
				if !ok {
					Respond(fd, n.ID, unix.EPERM) // unknown: refuse
					continue
				}
				Respond(fd, n.ID, c.Errno)
				select {
				case seen <- c.Name:
				default:
				}
			}
		}()
	case "orphan":
		// Nobody serves: the kernel must fail every notified call.
		unix.Close(fd)
	}
	out := map[string]string{}
	_, err = unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	out["socket-unix"] = errName(err)
	_, _, e := unix.RawSyscall(unix.SYS_CLONE3, 0, 0, 0)
	out["clone3"] = errName(e)
	_, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	out["socket-inet"] = errName(err)
	f := filepath.Join(dir, "created")
	wfd, err := unix.Open(f, unix.O_WRONLY|unix.O_CREAT, 0o644)
	out["open-create"] = errName(err)
	if err == nil {
		unix.Close(wfd)
	}
	_, err = os.Stat(f)
	out["created"] = fmt.Sprint(err == nil)
	rfd, err := unix.Open("/etc/hostname", unix.O_RDONLY, 0)
	out["open-read"] = errName(err)
	if err == nil {
		unix.Close(rfd)
	}
	if mode == "served" {
		var names []string
		for len(names) < 2 {
			names = append(names, <-seen)
		}
		out["seen"] = fmt.Sprint(names)
	}
	json.NewEncoder(os.Stdout).Encode(out)
	return 0
}

func errName(err error) string {
	if err == nil {
		return "OK"
	}
	if e, ok := err.(unix.Errno); ok {
		if e == 0 {
			return "OK"
		}
		return unix.ErrnoName(e)
	}
	return err.Error()
}

func runNotifyVictim(t *testing.T, mode string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), notifyVictimEnv+"="+mode, "SRT_NOTIFY_DIR="+dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("victim %s: %v\n%s", mode, err, stderr.String())
	}
	out := map[string]string{}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("victim output %q: %v", stdout.String(), err)
	}
	return out
}

// TestNotifyServed: with a listener answering from Table, refused calls
// fail with the deny-only filter's errno, observed calls run, and calls
// the filter does not name (nor clone3, which keeps its plain ENOSYS)
// never reach the listener.
func TestNotifyServed(t *testing.T) {
	got := runNotifyVictim(t, "served")
	want := map[string]string{
		"socket-unix": "EPERM", "clone3": "ENOSYS", "socket-inet": "OK",
		"open-create": "OK", "created": "true", "open-read": "OK",
		"seen": "[socket openat]",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %q, want %q", k, got[k], w)
		}
	}
}

// TestNotifyFailClosed: without a listener (srt died, or closed it) every
// notified call fails with ENOSYS and does not run; an observed create
// creates nothing. Other calls are unaffected.
func TestNotifyFailClosed(t *testing.T) {
	got := runNotifyVictim(t, "orphan")
	want := map[string]string{
		"socket-unix": "ENOSYS", "clone3": "ENOSYS", "socket-inet": "OK",
		"open-create": "ENOSYS", "created": "false", "open-read": "OK",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %q, want %q", k, got[k], w)
		}
	}
}

func TestNotifyTable(t *testing.T) {
	if tb, _ := Table(Options{}); len(tb) != 0 {
		t.Errorf("Table without Notify has %d entries", len(tb))
	}
	tb, err := Table(Options{Notify: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		nr    uint32
		name  string
		errno unix.Errno
	}{
		{unix.SYS_SOCKET, "socket", unix.EPERM},
		{unix.SYS_UNSHARE, "unshare", unix.EPERM},
		{unix.SYS_IO_URING_SETUP, "io_uring_setup", unix.EPERM},
	} {
		c, ok := tb[tc.nr]
		if !ok || c.Name != tc.name || c.Errno != tc.errno || c.FS != nil {
			t.Errorf("Table[%s] = %+v, want errno %v", tc.name, c, tc.errno)
		}
	}
	if _, ok := tb[unix.SYS_CLONE3]; ok {
		t.Error("clone3 notified: its ENOSYS is a fallback signal, not a refusal")
	}
	if c, ok := tb[unix.SYS_OPENAT]; ok && (c.FS != nil || c.Mode == nil) {
		t.Errorf("Table[openat] = %+v without ObserveWrites, want its mode check only", c)
	}
	tb, _ = Table(Options{Notify: true, ObserveWrites: true})
	if c := tb[unix.SYS_OPENAT]; c.FS == nil || c.Errno != 0 || c.FS.Flags != 2 {
		t.Errorf("Table[openat] = %+v", c)
	}
	if _, err := Build(Options{ObserveWrites: true}); err == nil {
		t.Error("Build accepted ObserveWrites without Notify")
	}
	if _, err := Build(Options{EmulateCreates: true}); err == nil {
		t.Error("Build accepted EmulateCreates without Notify")
	}
	// EmulateCreates: the calls that can bring a name into being, and
	// umask; not the ones that only change or remove existing names.
	tb, _ = Table(Options{Notify: true, EmulateCreates: true})
	for _, nr := range []uint32{unix.SYS_OPENAT, unix.SYS_OPENAT2, unix.SYS_MKDIRAT, unix.SYS_MKNODAT, unix.SYS_SYMLINKAT,
		unix.SYS_LINKAT, unix.SYS_RENAMEAT, unix.SYS_RENAMEAT2, unix.SYS_TRUNCATE} {
		if c, ok := tb[nr]; !ok || c.FS == nil || c.Errno != 0 {
			t.Errorf("EmulateCreates: Table[%d] = %+v, want a filesystem call", nr, c)
		}
	}
	if c, ok := tb[unix.SYS_UMASK]; !ok || c.FS == nil || c.FS.Op != OpUmask {
		t.Errorf("EmulateCreates: Table[umask] = %+v", c)
	}
	for _, nr := range []uint32{unix.SYS_UNLINKAT, unix.SYS_FCHMODAT, unix.SYS_UTIMENSAT, unix.SYS_FCHOWNAT, unix.SYS_SETXATTR} {
		if c, ok := tb[nr]; ok && c.FS != nil {
			t.Errorf("EmulateCreates notifies %s, which creates no name", c.Name)
		}
	}
	if _, err := Build(Options{Notify: true, EmulateCreates: true}); err != nil {
		t.Errorf("Build(EmulateCreates): %v", err)
	}
	// KernelNames: the kernel checks the names; only renames (and
	// umask) stay with the listener.
	kn := Options{Notify: true, EmulateCreates: true, KernelNames: true}
	tb, _ = Table(kn)
	for _, nr := range []uint32{unix.SYS_RENAMEAT, unix.SYS_RENAMEAT2, unix.SYS_RENAME, unix.SYS_UMASK} {
		if c, ok := tb[nr]; !ok || c.FS == nil || c.Errno != 0 {
			t.Errorf("KernelNames: Table[%d] = %+v, want a filesystem call", nr, c)
		}
	}
	for _, nr := range []uint32{unix.SYS_OPENAT, unix.SYS_OPENAT2, unix.SYS_OPEN, unix.SYS_CREAT, unix.SYS_MKDIRAT,
		unix.SYS_MKNODAT, unix.SYS_SYMLINKAT, unix.SYS_LINKAT, unix.SYS_LINK, unix.SYS_TRUNCATE} {
		if c, ok := tb[nr]; ok && c.FS != nil {
			t.Errorf("KernelNames notifies %s, which the kernel checks", c.Name)
		}
	}
	if _, err := Build(kn); err != nil {
		t.Errorf("Build(KernelNames): %v", err)
	}
	if _, err := Build(Options{Notify: true, KernelNames: true}); err == nil {
		t.Error("Build accepted KernelNames without EmulateCreates")
	}
}
