package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// testUser is the account a test runs srt as.
const testUser = "srt-e2e"

var (
	// srtBin is srt built once by TestMain, in a world-readable directory.
	srtBin string
	// baseDir holds every work directory (mode 0755, so that the
	// unprivileged user can reach the directories chowned to it).
	baseDir string
	// sandboxErr is why this host cannot run bwrap with a user namespace.
	sandboxErr error
	// cleanPATH is the PATH of every srt run: system directories only, so
	// that root and the unprivileged user run the same programs.
	cleanPATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

func TestMain(m *testing.M) {
	os.Exit(mainErr(m))
}

func mainErr(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "srt-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if baseDir, err = os.MkdirTemp("", "srt-e2e-work-"); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(baseDir)
	for _, d := range []string{tmp, baseDir} {
		if err := os.Chmod(d, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
	}
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(gomod)) == "" || strings.TrimSpace(string(gomod)) == os.DevNull {
		fmt.Fprintf(os.Stderr, "e2e: go env GOMOD: %v %q\n", err, gomod)
		return 1
	}
	srtBin = filepath.Join(tmp, "srt")
	build := exec.Command("go", "build", "-o", srtBin, "./cmd/srt")
	// Static, as installed: the binary is also the microvm guest's /init.
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: building srt: %v\n%s", err, out)
		return 1
	}
	os.Chmod(srtBin, 0o755)
	sandboxErr = probeBwrap()
	return m.Run()
}

// probeBwrap checks that bwrap exists and may create a user namespace, as
// srt needs, quoting bwrap's own message when it may not.
func probeBwrap() error {
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		return fmt.Errorf("bwrap not installed (apt-get install bubblewrap): %w", err)
	}
	out, err := exec.Command(bw, "--ro-bind", "/", "/", "--unshare-user", "--unshare-pid", "true").CombinedOutput()
	if err != nil {
		return fmt.Errorf("bwrap cannot create a user namespace: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// requireSandbox fails the test when the host cannot run sandboxes; CI
// must not pass by skipping. SRT_E2E_ALLOW_SKIP=1 turns that into a skip.
func requireSandbox(t *testing.T) {
	t.Helper()
	if sandboxErr == nil {
		return
	}
	if os.Getenv("SRT_E2E_ALLOW_SKIP") == "1" {
		t.Skipf("SRT_E2E_ALLOW_SKIP=1 and %v", sandboxErr)
	}
	t.Fatalf("%v (set SRT_E2E_ALLOW_SKIP=1 to skip instead)", sandboxErr)
}

// account is who srt runs as.
type account struct {
	name     string
	uid, gid int
	home     string
	// direct means srt is started without changing user (root, or the
	// current user when the tests do not run as root).
	direct bool
}

var (
	userOnce sync.Once
	userAcct *account
	userErr  error
)

// unprivileged returns the test user, creating it if needed.
func unprivileged() (*account, error) {
	userOnce.Do(func() {
		if _, err := user.Lookup(testUser); err != nil {
			if out, err := exec.Command("useradd", "-m", "-s", "/bin/bash", testUser).CombinedOutput(); err != nil {
				userErr = fmt.Errorf("useradd %s: %v: %s", testUser, err, out)
				return
			}
		}
		u, err := user.Lookup(testUser)
		if err != nil {
			userErr = err
			return
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.MkdirAll(u.HomeDir, 0o755); err == nil {
			os.Chown(u.HomeDir, uid, gid)
		}
		userAcct = &account{name: testUser, uid: uid, gid: gid, home: u.HomeDir}
	})
	return userAcct, userErr
}

// forEachUser runs f as subtests "root" and "user": as root, and as the
// unprivileged test user. When the tests do not run as root, only "user"
// runs, as the current user.
func forEachUser(t *testing.T, f func(t *testing.T, u *account)) {
	t.Helper()
	requireSandbox(t)
	t.Run("root", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("not running as root; the root variant needs root")
		}
		home, _ := os.UserHomeDir()
		f(t, &account{name: "root", uid: 0, gid: 0, home: home, direct: true})
	})
	t.Run("user", func(t *testing.T) {
		if os.Geteuid() != 0 {
			u, err := user.Current()
			if err != nil {
				t.Fatal(err)
			}
			f(t, &account{name: u.Username, uid: os.Getuid(), gid: os.Getgid(), home: u.HomeDir, direct: true})
			return
		}
		u, err := unprivileged()
		if err != nil {
			t.Fatalf("creating the unprivileged user: %v", err)
		}
		f(t, u)
	})
}

// workDir returns a new empty directory owned by u, removed after the test.
func (u *account) workDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp(baseDir, strings.ReplaceAll(t.Name(), "/", "_")+"-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(d, 0o755)
	if err := os.Chown(d, u.uid, u.gid); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// write creates path (and its parents) owned by u with content; a content
// starting with "->" makes a symbolic link to the rest.
func (u *account) write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	u.chownUp(filepath.Dir(path))
	if target, ok := strings.CutPrefix(content, "->"); ok {
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
		os.Lchown(path, u.uid, u.gid)
		return
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chown(path, u.uid, u.gid)
}

// mkdir creates a directory (and parents) owned by u.
func (u *account) mkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
	u.chownUp(path)
}

// chownUp gives u every directory from path up to its work directory.
func (u *account) chownUp(path string) {
	for d := path; strings.HasPrefix(d, baseDir+"/") || strings.HasPrefix(d, u.home+"/"); d = filepath.Dir(d) {
		os.Chown(d, u.uid, u.gid)
		if filepath.Dir(d) == baseDir {
			break
		}
	}
}

// command builds the exec.Cmd that runs argv as u in dir, with a clean
// environment (HOME, USER, PATH, plus env).
func (u *account) command(ctx context.Context, dir string, env []string, argv ...string) *exec.Cmd {
	base := []string{"HOME=" + u.home, "USER=" + u.name, "LOGNAME=" + u.name, "PATH=" + cleanPATH, "SHELL=/bin/sh", "LANG=C"}
	var cmd *exec.Cmd
	if u.direct {
		cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = append(base, env...)
	} else {
		// setpriv --reset-env sets HOME, USER, PATH from the password
		// database; env(1) then pins them to the same clean values.
		a := []string{"--reuid=" + strconv.Itoa(u.uid), "--regid=" + strconv.Itoa(u.gid), "--init-groups", "--reset-env", "--", "env"}
		a = append(append(append(a, base...), env...), argv...)
		cmd = exec.CommandContext(ctx, "setpriv", a...)
	}
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// srtRun is one invocation of srt.
type srtRun struct {
	u        *account
	dir      string
	settings string // JSON written to dir/.srt-e2e.json; "" passes no -s
	env      []string
	stdin    string
	// pre are srt options before "-s FILE --"; args follow "--" unless
	// noDashes is set, in which case they follow the options directly.
	pre      []string
	args     []string
	noDashes bool
	timeout  time.Duration
}

// settingsName is the settings file srtRun writes in the work directory.
const settingsName = ".srt-e2e.json"

func (r srtRun) argv(t *testing.T) []string {
	t.Helper()
	argv := []string{srtBin}
	argv = append(argv, r.pre...)
	if r.settings != "" {
		f := filepath.Join(r.dir, settingsName)
		if err := os.WriteFile(f, []byte(r.settings), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chown(f, r.u.uid, r.u.gid)
		argv = append(argv, "-s", f)
	}
	if !r.noDashes {
		argv = append(argv, "--")
	}
	return append(argv, r.args...)
}

// run runs srt and returns its output and exit status (-1 when it was
// killed by a signal).
func (r srtRun) run(t *testing.T) (stdout, stderr string, code int) {
	t.Helper()
	if r.timeout == 0 {
		r.timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	cmd := r.u.command(ctx, r.dir, r.env, r.argv(t)...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if r.stdin != "" {
		cmd.Stdin = strings.NewReader(r.stdin)
	}
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("running srt: %v\nstderr: %s", err, e.String())
	}
	if ctx.Err() != nil {
		t.Fatalf("srt %q did not finish within %v; stderr: %s", r.args, r.timeout, e.String())
	}
	return o.String(), e.String(), code
}

// runSrt runs `srt -s FILE -- args...` as u in dir, FILE holding settingsJSON.
func runSrt(t *testing.T, u *account, dir, settingsJSON string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return srtRun{u: u, dir: dir, settings: settingsJSON, args: args}.run(t)
}

// sh runs a shell script in the sandbox.
func sh(t *testing.T, u *account, dir, settingsJSON, script string) (stdout, stderr string, code int) {
	t.Helper()
	return runSrt(t, u, dir, settingsJSON, "sh", "-c", script)
}

// entry is what a snapshot records for one path.
type entry struct {
	mode    fs.FileMode
	content string // file content or link target
}

// snapshot records every path under dir with its type and content.
func snapshot(t *testing.T, dir string) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	// A file that vanishes during the walk (a guardian still removing its
	// placeholders) is simply not in the snapshot; waitUnchanged retries.
	gone := func(err error) bool { return errors.Is(err, fs.ErrNotExist) }
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if gone(err) && p != dir {
				return nil
			}
			return err
		}
		fi, err := d.Info()
		if err != nil {
			if gone(err) {
				return nil
			}
			return err
		}
		e := entry{mode: fi.Mode().Type()}
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				if gone(err) {
					return nil
				}
				return err
			}
			e.content = string(b)
		case fi.Mode()&fs.ModeSymlink != 0:
			e.content, _ = os.Readlink(p)
		}
		out[p] = e
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", dir, err)
	}
	return out
}

// diffSnapshots describes how after differs from before, "" if not at all.
// Paths in allowed may differ.
func diffSnapshots(before, after map[string]entry, allowed ...string) string {
	var d []string
	for p, b := range before {
		if slices.Contains(allowed, p) {
			continue
		}
		a, ok := after[p]
		switch {
		case !ok:
			d = append(d, "removed: "+p)
		case a != b:
			d = append(d, fmt.Sprintf("changed: %s (%v %q -> %v %q)", p, b.mode, b.content, a.mode, a.content))
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok && !slices.Contains(allowed, p) {
			d = append(d, "created: "+p)
		}
	}
	slices.Sort(d)
	return strings.Join(d, "\n")
}

// assertUnchanged fails when dir differs from before (except allowed).
func assertUnchanged(t *testing.T, dir string, before map[string]entry, allowed ...string) {
	t.Helper()
	if d := diffSnapshots(before, snapshot(t, dir), allowed...); d != "" {
		t.Errorf("host directory %s changed:\n%s", dir, d)
	}
}

// waitUnchanged is assertUnchanged after waiting up to wait for the
// guardian's cleanup.
func waitUnchanged(t *testing.T, dir string, before map[string]entry, wait time.Duration) {
	t.Helper()
	if d := settledDiff(t, dir, before, wait); d != "" {
		t.Errorf("host directory %s still differs after %v:\n%s", dir, wait, d)
	}
}

// settledDiff is how dir differs from before once it stops differing or
// wait has passed; "" when it is unchanged.
func settledDiff(t *testing.T, dir string, before map[string]entry, wait time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		d := diffSnapshots(before, snapshot(t, dir))
		if d == "" || time.Now().After(deadline) {
			return d
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pgrep reports whether a process whose full command line matches pattern
// exists.
func pgrep(pattern string) bool {
	return exec.Command("pgrep", "-f", pattern).Run() == nil
}

// waitGone waits up to d for no process to match pattern.
func waitGone(pattern string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for pgrep(pattern) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// exitCode returns a finished command's status, 128+N when killed by
// signal N.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// hasAny reports whether s contains one of subs.
func hasAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// Error texts of the errnos a refused write gives.
var (
	errEROFS  = "Read-only file system"
	errEACCES = "Permission denied"
	errEBUSY  = "busy"
	errEPERM  = "Operation not permitted"
	errXDEV   = "cross-device"
	refused   = []string{errEROFS, errEACCES, errEBUSY, errEPERM, errXDEV}
)

// violationReport matches srt's end-of-run report of blocked actions
// ("srt: N actions were blocked by the sandbox:" and its indented lines).
var violationReport = regexp.MustCompile(`(?m)^srt: \d+ actions? (was|were) blocked by the sandbox:\n(  .*\n)*`)

// withoutReport returns stderr without srt's violation report.
func withoutReport(stderr string) string {
	return violationReport.ReplaceAllString(stderr, "")
}

// modeSettings is a settings document whose "filesystem" holds members,
// with the creation-time rules off when mode is "rules-off" (the tests
// that run in both modes).
func modeSettings(mode, members string) string {
	if mode == "rules-off" {
		members += `,"enforceNamesAtCreation":false`
	}
	return `{"filesystem":{` + members + `}}`
}
