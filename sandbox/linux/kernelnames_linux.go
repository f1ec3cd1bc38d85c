//go:build srt_bpflsm

package linux

// This file runs in srt: the in-kernel path of the creation-time name
// rules (sandbox/linux/namelsm), where it can run, instead of the
// supervisor's emulation of every creating call.

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/srt-go/srt/sandbox/linux/fsplan"
	"github.com/srt-go/srt/sandbox/linux/namelsm"
	"github.com/srt-go/srt/sandbox/linux/supervisor"
	"github.com/srt-go/srt/sandbox/linux/wire"
	"github.com/srt-go/srt/violation"
	"golang.org/x/sys/unix"
)

// kernelNamesEligible says why this run cannot use the in-kernel rules
// before anything is loaded, nil when it may try.
func kernelNamesEligible(cfg Config, spec *wire.InitSpec, m fsplan.Mapping) error {
	switch {
	case os.Getenv(NameRulesEnv) != "kernel":
		return errNotChosen
	case os.Geteuid() != 0:
		return errNoKernelPath{"srt is not root (loading a BPF LSM program needs CAP_BPF, CAP_PERFMON and CAP_MAC_ADMIN)"}
	case spec.Seccomp.AllowNestedUserNamespaces:
		return errNoKernelPath{"nested user namespaces are allowed (the command could leave the mount namespace the program watches)"}
	case m.Confined:
		return errNoKernelPath{"a confined view (its private trees are not told apart by file system)"}
	}
	return nil
}

// kernelNames sets spec up for the in-kernel rules and returns the
// loaded program, or nil and why the supervisor is used (spec
// untouched then). The caller closes the program when the sandbox ends.
func kernelNames(cfg Config, spec *wire.InitSpec, tmpdir string, m fsplan.Mapping, addFD func(*os.File) int, on func(violation.Violation), lg *slog.Logger) (io.Closer, error) {
	if err := kernelNamesEligible(cfg, spec, m); err != nil {
		return nil, err
	}
	mounts, err := namelsm.ReadMounts()
	if err != nil {
		return nil, err
	}
	patterns, texts := supervisor.NewKernelRules(cfg.Policy, tmpdir, m).Patterns()
	rules := make([]namelsm.Rule, len(patterns))
	for i := range patterns {
		rules[i] = namelsm.Rule{Pattern: patterns[i], Rule: texts[i]}
	}
	var writable []string
	var devs []uint64
	for _, w := range cfg.Policy.AllowWrite {
		writable = append(writable, w.Resolved)
		var st unix.Stat_t
		if unix.Stat(w.Resolved, &st) == nil {
			devs = append(devs, uint64(st.Dev))
		}
	}
	c, err := namelsm.Compile(rules, mounts, writable)
	if err != nil {
		return nil, err
	}
	// A kernel that refused the program refuses it for the whole boot.
	refusedFile := ""
	if sd, err := StateDir(); err == nil {
		refusedFile = filepath.Join(sd, "namelsm-refused")
		if why := namelsm.Refused(refusedFile); why != "" {
			return nil, errNoKernelPath{why + " (earlier in this boot)"}
		}
	}
	start := time.Now()
	prog, err := namelsm.Load(c, mounts)
	if err != nil {
		if refusedFile != "" && errors.Is(err, namelsm.ErrRefused) {
			namelsm.NoteRefused(refusedFile, err)
		}
		return nil, err
	}
	lg.Debug("namelsm", "loaded", time.Since(start), "keys", len(c.Keys))
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		prog.Close()
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), "kernel-names")
	spec.KernelNamesFD = addFD(os.NewFile(uintptr(fds[1]), "kernel-names"))
	spec.KernelNamesPrivate = []string{tmpdir, "/dev", "/dev/shm", "/dev/pts", "/dev/mqueue", "/proc"}
	spec.Seccomp.KernelNames = true
	prog.Serve(func(e namelsm.Event) {
		nsPID, exe := supervisor.ProcInfo(e.PID)
		action := violation.FileWriteCreate
		if e.Data {
			action = violation.FileWriteData
		}
		on(violation.Violation{Time: time.Now(), Action: action, Target: e.Path, Reason: e.Rule, PID: nsPID, Exe: exe})
	})
	// PID 1 waits for the answer before the command runs; without it
	// (the namespace could not be registered) it refuses to run.
	go func() {
		defer ours.Close()
		fds, err := wire.RecvNamespace(ours)
		if err == nil {
			err = prog.Register(fds[0], fds[1:], devs)
			for _, fd := range fds {
				unix.Close(fd)
			}
		}
		if err != nil {
			lg.Debug("namelsm", "register", err)
			return
		}
		unix.Write(int(ours.Fd()), []byte{wire.AckKernelNames})
	}()
	return prog, nil
}

// KernelNamesPath returns the path of the creation-time rules a run as
// this process would take on this host, and why (for `srt --check`):
// the in-kernel one where the program loads and attaches here.
func KernelNamesPath() (string, error) {
	if os.Getenv(NameRulesEnv) != "kernel" {
		return NamePathSupervisor, errNotChosen
	}
	if os.Geteuid() != 0 {
		return NamePathSupervisor, errNoKernelPath{"srt is not root"}
	}
	if err := namelsm.Probe(); err != nil {
		return NamePathSupervisor, err
	}
	return NamePathKernel, nil
}
