package cgroup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Dir is the cgroup's directory in the cgroup file system.
func (g *Group) Dir() string { return g.dir }

// Version is the cgroup's hierarchy, V1 or V2.
func (g *Group) Version() Version { return g.version }

// Limit is the memory limit set by Parent.New, in bytes.
func (g *Group) Limit() int64 { return g.limit }

// OOMKills is how many processes of the cgroup the kernel's OOM killer
// has killed: oom_kill of memory.events on v2 (cgroup-v2.rst, which
// counts those of descendants too) or of memory.oom_control on v1
// (cgroup-v1/memory.rst, 10; kernels since 4.13).
func (g *Group) OOMKills() (uint64, error) {
	if g.version == V2 {
		return readKey(filepath.Join(g.dir, "memory.events"), "oom_kill")
	}
	return readKey(filepath.Join(g.dir, "memory.oom_control"), "oom_kill")
}

// Procs are the pids of the cgroup's processes (cgroup.procs), as this
// process's PID namespace numbers them.
func (g *Group) Procs() ([]int, error) { return readInts(filepath.Join(g.dir, "cgroup.procs")) }

// Prepare makes cmd, not started yet, start in the cgroup: its process
// is in it before it runs an instruction of the program, so nothing it
// forks can start outside. Call release once cmd has started (or failed
// to).
//
// On v2 the process is cloned into the cgroup (clone3 with
// CLONE_INTO_CGROUP, SysProcAttr.UseCgroupFD; cgroup-v2.rst,
// "Delegation Containment" applies to it as to a write to cgroup.procs).
// v1 has no such flag, and a parent writing the child's pid after the
// fork leaves a window in which the child runs outside. So on v1 cmd
// becomes a trampoline: this same binary (/proc/self/exe, which must call
// sandbox.Main first) with EnterArg, a descriptor of the cgroup's
// cgroup.procs and cmd's own path and arguments; RunEnter writes its own
// pid there and, only once that has succeeded, executes cmd's program
// with the same pid, descriptors and environment. The descriptor is
// appended to cmd.ExtraFiles, so the numbers of those already there stay
// the same, and RunEnter closes it before the exec.
func (g *Group) Prepare(cmd *exec.Cmd) (release func(), err error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if g.version == V2 {
		fd, err := unix.Open(g.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", g.dir, err)
		}
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = fd
		return func() { unix.Close(fd) }, nil
	}
	f, err := os.OpenFile(filepath.Join(g.dir, "cgroup.procs"), os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", g.dir, err)
	}
	fd := 3 + len(cmd.ExtraFiles)
	cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	cmd.Args = append([]string{"srt-cgroup-enter", EnterArg, strconv.Itoa(fd), cmd.Path}, cmd.Args...)
	cmd.Path = "/proc/self/exe"
	return func() { f.Close() }, nil
}

// Remove kills every process left in the cgroup and removes it; ctx
// bounds the wait (the kernel refuses rmdir while a process, even a
// dying one, is in the cgroup). A cgroup already gone is no error.
func (g *Group) Remove(ctx context.Context) error {
	for {
		err := unix.Rmdir(g.dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("removing %s: %w", g.dir, err)
		}
		g.kill()
		select {
		case <-ctx.Done():
			return fmt.Errorf("removing %s: %w (%w)", g.dir, err, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// remove is Remove within a few seconds.
func (g *Group) remove() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return g.Remove(ctx)
}

// kill sends SIGKILL to every process in the cgroup: cgroup.kill on v2
// where the kernel has it (5.14), else to each pid of cgroup.procs
// through a pidfd, checked to be in the cgroup once opened, so that a pid
// reused meanwhile by a process elsewhere is not killed.
func (g *Group) kill() {
	if g.version == V2 && writeFile(filepath.Join(g.dir, "cgroup.kill"), "1") == nil {
		return
	}
	procs, _ := g.Procs()
	for _, pid := range procs {
		pfd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		if now, _ := g.Procs(); slices.Contains(now, pid) {
			unix.PidfdSendSignal(pfd, unix.SIGKILL, nil, 0)
		}
		unix.Close(pfd)
	}
}

// tryStart starts /bin/true in g on v2 (a seccomp filter that refuses
// clone3, as some container runtimes install, makes CLONE_INTO_CGROUP
// fail: better known now than at the first launch). v1 starts through
// this binary's own trampoline, which Find cannot run on a caller's
// behalf.
func (g *Group) tryStart() error {
	if g.version != V2 {
		return nil
	}
	if _, err := os.Stat("/bin/true"); err != nil {
		return nil
	}
	cmd := exec.Command("/bin/true")
	release, err := g.Prepare(cmd)
	if err != nil {
		return err
	}
	defer release()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("starting a process in the probe cgroup (clone3 CLONE_INTO_CGROUP): %w", err)
	}
	return nil
}
