package inside

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"github.com/srt-go/srt/seccomp"
	"golang.org/x/sys/unix"
)

// backstopChildEnv names the directory the backstop's child process
// (this test binary again) creates in; "unix:" before it allows unix
// sockets.
const backstopChildEnv = "SRT_TEST_BACKSTOP_DIR"

func TestMain(m *testing.M) {
	if dir, ok := os.LookupEnv(backstopChildEnv); ok {
		backstopChild(dir)
		return
	}
	os.Exit(m.Run())
}

// backstopChild applies the backstop to itself, as PID 1 does, with no
// seccomp filter at all: every creating call is one the supervisor never
// sees. It prints one "name=errno" line per call.
func backstopChild(dir string) {
	opts := seccomp.Options{Notify: true, EmulateCreates: true}
	if d, ok := strings.CutPrefix(dir, "unix:"); ok {
		dir, opts.AllowUnixSockets = d, true
	}
	if err := applyBackstop(opts); err != nil {
		os.Stdout.WriteString("apply=" + err.Error() + "\n")
		os.Exit(1)
	}
	at := func(n string) string { return filepath.Join(dir, n) }
	report := func(name string, err error) {
		e := "ok"
		var errno unix.Errno
		if errors.As(err, &errno) {
			e = unix.ErrnoName(errno)
		} else if err != nil {
			e = err.Error()
		}
		os.Stdout.WriteString(name + "=" + e + "\n")
	}
	report("mkdir", unix.Mkdir(at("d"), 0o755))
	fd, err := unix.Open(at("new"), unix.O_CREAT|unix.O_WRONLY, 0o644)
	report("creat", err)
	if err == nil {
		unix.Close(fd)
	}
	report("symlink", unix.Symlink("x", at("sym")))
	report("mkfifo", unix.Mkfifo(at("fifo"), 0o644))
	report("link", unix.Link(at("existing"), at("hard")))
	report("rename", unix.Rename(at("existing"), at("renamed")))
	report("renamedir", unix.Rename(at("existing"), at("sub/moved")))
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err == nil {
		err = unix.Bind(s, &unix.SockaddrUnix{Name: at("sock")})
		unix.Close(s)
	}
	report("bind", err)
	// What needs no right to make a name keeps working.
	fd, err = unix.Open(at("existing"), unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, 0o644)
	report("rewrite", err)
	if err == nil {
		unix.Close(fd)
	}
	report("unlink", unix.Unlink(at("existing")))
}

// TestBackstopRefusesUnnotifiedCreates: under the backstop every call
// that would make a name fails closed (EACCES; a rename into another
// directory needs REFER too) when the supervisor does not perform it, as for a
// creating call missing from the filter; rewriting and removing an
// existing file still work.
func TestBackstopRefusesUnnotifiedCreates(t *testing.T) {
	if v, err := llsys.LandlockGetABIVersion(); err != nil || v < 2 {
		t.Skipf("Landlock ABI ≥ 2 needed (REFER): %v %v", v, err)
	}
	for _, tc := range []struct {
		name, prefix string
		bind         string
	}{{"unix sockets refused", "", "EACCES"}, {"unix sockets allowed", "unix:", "ok"}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "existing"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), backstopChildEnv+"="+tc.prefix+dir)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			want := []string{"mkdir=EACCES", "creat=EACCES", "symlink=EACCES", "mkfifo=EACCES", "link=EACCES",
				"rename=EACCES", "renamedir=EACCES", "bind=" + tc.bind, "rewrite=ok", "unlink=ok"}
			for _, w := range want {
				if !strings.Contains(string(out), w+"\n") {
					t.Errorf("want %s", w)
				}
			}
			if t.Failed() {
				t.Logf("child said:\n%s", out)
			}
			for _, n := range []string{"d", "new", "sym", "fifo", "hard", "renamed"} {
				if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
					t.Errorf("%s was created under the backstop", n)
				}
			}
		})
	}
}

// TestBackstopAccess: nothing without the creation-time rules (the
// command makes its names itself); MAKE_SOCK only where unix sockets
// are refused.
func TestBackstopAccess(t *testing.T) {
	if a := backstopAccess(seccomp.Options{Notify: true}); a != 0 {
		t.Errorf("rules off: %v", a)
	}
	if a := backstopAccess(seccomp.Options{EmulateCreates: true}); a != 0 {
		t.Errorf("no listener (the deny-only filter): %v", a)
	}
	on := backstopAccess(seccomp.Options{Notify: true, EmulateCreates: true})
	all := uint64(llsys.AccessFSMakeChar | llsys.AccessFSMakeDir | llsys.AccessFSMakeReg | llsys.AccessFSMakeSock |
		llsys.AccessFSMakeFifo | llsys.AccessFSMakeBlock | llsys.AccessFSMakeSym | llsys.AccessFSRefer)
	if uint64(on) != all {
		t.Errorf("rules on: %v", on)
	}
	if a := backstopAccess(seccomp.Options{Notify: true, EmulateCreates: true, AllowUnixSockets: true}); uint64(a) != all&^uint64(llsys.AccessFSMakeSock) {
		t.Errorf("unix sockets allowed: %v", a)
	}
	// The in-kernel check: the command makes its names under the BPF
	// program; binds stay the supervisor's.
	kn := seccomp.Options{Notify: true, EmulateCreates: true, KernelNames: true}
	if a := backstopAccess(kn); uint64(a) != uint64(llsys.AccessFSMakeSock) {
		t.Errorf("KernelNames: %v", a)
	}
	kn.AllowUnixSockets = true
	if a := backstopAccess(kn); a != 0 {
		t.Errorf("KernelNames, unix sockets allowed: %v", a)
	}
}
