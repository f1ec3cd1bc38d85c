package port

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/srt-go/srt/sandbox/darwin"
)

// The native backend on macOS (port/native_darwin.go) runs each exec under
// sandbox-exec with seed 000's agent profile (darwin.AgentProfile). This
// file is its Spec → profile translation; it has no build tag, so the
// Linux tests check it against the profile evaluator (sandbox/darwin/sbpl).

// globMeta are the characters that make a protectedPaths entry a glob.
const globMeta = "*?[{"

// seatbeltBinds refuses a bind Seatbelt cannot show: a guestPath other
// than its hostPath (ErrUnenforceable), since macOS has no mount
// namespace and Seatbelt confines host paths.
func seatbeltBinds(spec Spec) error {
	for i, b := range spec.BindMounts {
		if filepath.Clean(b.GuestPath) != filepath.Clean(b.HostPath) {
			return fmt.Errorf("%w: bindMounts[%d]: guestPath %s differs from hostPath %s, and macOS has no mount namespace to show a host directory elsewhere (Seatbelt confines host paths); use guestPath = hostPath on macOS",
				ErrUnenforceable, i, b.GuestPath, b.HostPath)
		}
	}
	return nil
}

// seatbeltSpec translates spec into the agent profile's input: binds at
// their host paths (writable in chat mode unless readOnly), protectedPaths
// and the launch policy's name globs (nameGlobs) never writable,
// runnerStateDirs and tmpDir always writable, egress to the session's
// proxy pair only. home is the user's home directory (the secret paths
// under it are unreadable), tag the log tag (darwin.NewTag).
//
// What Seatbelt cannot do is refused, never approximated: a guestPath
// other than its hostPath is ErrUnenforceable (macOS has no mount
// namespace: the command sees host paths), and so is a guestWorkdir
// outside every bind (*SpecError, as on Linux).
func seatbeltSpec(spec Spec, nameGlobs []string, home, tmpDir, tag string, eg darwin.Egress) (darwin.Spec, error) {
	ds := darwin.Spec{
		Mode:            string(spec.Mode),
		RunnerStateDirs: append([]string{}, spec.RunnerStateDirs...),
		ExecGrantRoots:  append([]string{}, spec.ExecGrantRoots...),
		Egress:          eg,
		DenyWriteNames:  append([]string{}, nameGlobs...),
		Home:            home,
		TmpDir:          tmpDir,
		Tag:             tag,
	}
	if err := seatbeltBinds(spec); err != nil {
		return darwin.Spec{}, err
	}
	for _, b := range spec.BindMounts {
		host := filepath.Clean(b.HostPath)
		ds.BindMounts = append(ds.BindMounts, darwin.BindMount{HostPath: host, GuestPath: host, ReadOnly: b.ReadOnly})
	}
	if spec.GuestWorkdir != "" {
		ok := false
		for _, b := range ds.BindMounts {
			ok = ok || within(filepath.Clean(spec.GuestWorkdir), b.HostPath)
		}
		if !ok {
			return darwin.Spec{}, &SpecError{"guestWorkdir", spec.GuestWorkdir + " is not inside any bindMounts guestPath"}
		}
	}
	// A protected path is a subtree; a protected glob is a path pattern,
	// denied with what it matches below it, at the host path (guest paths
	// are host paths here).
	for _, p := range spec.ProtectedPaths {
		if strings.ContainsAny(p, globMeta) {
			ds.DenyWriteNames = append(ds.DenyWriteNames, p, strings.TrimSuffix(p, "/")+"/**")
			continue
		}
		ds.ProtectedPaths = append(ds.ProtectedPaths, filepath.Clean(p))
	}
	// Generated once here so that a Spec the profile refuses fails the
	// launch, not its first exec.
	if _, err := darwin.AgentProfile(ds); err != nil {
		return darwin.Spec{}, fmt.Errorf("%w: seatbelt profile: %v", ErrUnenforceable, err)
	}
	return ds, nil
}
