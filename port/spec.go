package port

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/srt-go/srt/netrule"
	"github.com/srt-go/srt/policy"
)

// Limits on a Spec, so that one request cannot make the port do unbounded
// work.
const (
	MaxBindMounts = 64
	MaxListLen    = 256 // egressAllowlist, protectedPaths, runnerStateDirs, execGrantRoots
	MaxIDLen      = 128 // sessionId, workspaceId, agentId
	MaxPathLen    = 4096
)

// Validate checks spec and returns the first problem as a *SpecError naming
// the field (the server's 400). It does not modify spec; see normalize for
// the defaults Launch applies (mode "" → chat, guestPath "" → hostPath).
//
// Rules: sessionId is 1..128 characters of [A-Za-z0-9._-] starting with a
// letter or digit (it names files and log lines, and srtd's URL paths
// carry it as it is); workspaceId and agentId, when set, 1..128 of the
// same characters, not "." or ".."; every path is absolute, clean of ".." elements and NUL, at
// most 4096 bytes; each bind's hostPath exists; guestPaths are unique and
// neither "/" nor below /proc or /dev (the sandbox's own); mode is one of
// the four; each egressAllowlist entry parses as a domain pattern (both
// wildcard forms, netrule.ParsePattern); runnerStateDirs exist as
// directories. execGrantRoots are checked for form only: they matter on
// macOS and Linux ignores them (seed 000: bwrap has no $HOME exec block
// to reopen). memoryLimitBytes is absent or at least MinMemoryLimit
// (Launch checks it against the server's limit). credentials: see
// policy.CheckSessionCredentials.
func Validate(spec Spec) error {
	if err := checkID("sessionId", spec.SessionID, true); err != nil {
		return err
	}
	if c := spec.SessionID[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
		return &SpecError{"sessionId", fmt.Sprintf("%q: must start with a letter or digit", spec.SessionID)}
	}
	if err := checkID("workspaceId", spec.WorkspaceID, false); err != nil {
		return err
	}
	if err := checkID("agentId", spec.AgentID, false); err != nil {
		return err
	}
	switch spec.Mode {
	case "", ModeChat, ModeReview, ModePlan, ModeOrchestrate:
	default:
		return &SpecError{"mode", fmt.Sprintf("unknown mode %q; one of chat, review, plan, orchestrate", spec.Mode)}
	}
	if len(spec.BindMounts) > MaxBindMounts {
		return &SpecError{"bindMounts", fmt.Sprintf("%d entries, at most %d", len(spec.BindMounts), MaxBindMounts)}
	}
	guests := map[string]int{}
	for i, b := range spec.BindMounts {
		f := fmt.Sprintf("bindMounts[%d]", i)
		if err := checkPath(f+".hostPath", b.HostPath, true); err != nil {
			return err
		}
		if _, err := os.Stat(b.HostPath); err != nil {
			return &SpecError{f + ".hostPath", fmt.Sprintf("%s: %v", b.HostPath, unwrapPathErr(err))}
		}
		g := b.GuestPath
		if g == "" {
			g = b.HostPath
		} else if err := checkPath(f+".guestPath", g, true); err != nil {
			return err
		}
		g = filepath.Clean(g)
		switch {
		case g == "/":
			return &SpecError{f + ".guestPath", `"/" would hide the system directories`}
		case within(g, "/proc"), within(g, "/dev"):
			return &SpecError{f + ".guestPath", g + " is the sandbox's own /proc or /dev"}
		}
		if j, ok := guests[g]; ok {
			return &SpecError{f + ".guestPath", fmt.Sprintf("%s is also bindMounts[%d]'s guestPath", g, j)}
		}
		guests[g] = i
	}
	if spec.GuestWorkdir != "" {
		if err := checkPath("guestWorkdir", spec.GuestWorkdir, true); err != nil {
			return err
		}
	}
	lists := []struct {
		name string
		l    []string
	}{{"egressAllowlist", spec.EgressAllowlist}, {"protectedPaths", spec.ProtectedPaths}, {"runnerStateDirs", spec.RunnerStateDirs}, {"execGrantRoots", spec.ExecGrantRoots}}
	for _, l := range lists {
		if len(l.l) > MaxListLen {
			return &SpecError{l.name, fmt.Sprintf("%d entries, at most %d", len(l.l), MaxListLen)}
		}
	}
	for i, e := range spec.EgressAllowlist {
		if _, err := netrule.ParsePattern(e, false); err != nil {
			return &SpecError{fmt.Sprintf("egressAllowlist[%d]", i), err.Error()}
		}
	}
	for i, p := range spec.ProtectedPaths {
		f := fmt.Sprintf("protectedPaths[%d]", i)
		if err := checkPath(f, p, false); err != nil {
			return err
		}
		if err := checkProtectedShown(f, p, spec); err != nil {
			return err
		}
	}
	for i, p := range spec.RunnerStateDirs {
		f := fmt.Sprintf("runnerStateDirs[%d]", i)
		if err := checkPath(f, p, true); err != nil {
			return err
		}
		if fi, err := os.Stat(p); err != nil {
			return &SpecError{f, fmt.Sprintf("%s: %v", p, unwrapPathErr(err))}
		} else if !fi.IsDir() {
			return &SpecError{f, p + " is not a directory"}
		}
	}
	for i, p := range spec.ExecGrantRoots {
		if err := checkPath(fmt.Sprintf("execGrantRoots[%d]", i), p, false); err != nil {
			return err
		}
	}
	if err := checkMemoryField(spec.MemoryLimitBytes); err != nil {
		return err
	}
	if err := checkCredentials(spec.Credentials); err != nil {
		return err
	}
	return checkReadOnlyOverlap(spec)
}

// checkReadOnlyOverlap refuses a read-only bind whose host files are also
// writable through a writable bind or a runner state directory: write
// access is decided per host file, so the read-only view would be
// writable too (found by an adversarial review). A writable directory
// inside a read-only bind (a runner state directory) is fine: it is a
// hole, and the rest stays read-only.
func checkReadOnlyOverlap(spec Spec) error {
	resolved := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return filepath.Clean(p)
	}
	within := func(p, root string) bool {
		return p == root || root == "/" || strings.HasPrefix(p, root+"/")
	}
	type writable struct{ field, path string }
	var ws []writable
	if !ReadOnlyMode(spec.Mode) {
		for i, b := range spec.BindMounts {
			if !b.ReadOnly {
				ws = append(ws, writable{fmt.Sprintf("bindMounts[%d]", i), resolved(b.HostPath)})
			}
		}
	}
	for i, d := range spec.RunnerStateDirs {
		ws = append(ws, writable{fmt.Sprintf("runnerStateDirs[%d]", i), resolved(d)})
	}
	for i, b := range spec.BindMounts {
		// Only an explicit readOnly: in review, plan and orchestrate a
		// bind is read-only by mode, and runner state directories are meant
		// to stay writable through it.
		if !b.ReadOnly {
			continue
		}
		h := resolved(b.HostPath)
		for _, w := range ws {
			if within(h, w.path) {
				return &SpecError{fmt.Sprintf("bindMounts[%d].readOnly", i), fmt.Sprintf("%s would be read-only here but writable through %s (%s); the same host files cannot be both", b.HostPath, w.field, w.path)}
			}
		}
	}
	return nil
}

// normalize returns spec with Launch's defaults applied: mode chat,
// guestPath = hostPath, paths cleaned.
func normalize(spec Spec) Spec {
	if spec.Mode == "" {
		spec.Mode = ModeChat
	}
	b := make([]BindMount, len(spec.BindMounts))
	for i, m := range spec.BindMounts {
		m.HostPath = filepath.Clean(m.HostPath)
		if m.GuestPath == "" {
			m.GuestPath = m.HostPath
		}
		m.GuestPath = filepath.Clean(m.GuestPath)
		b[i] = m
	}
	spec.BindMounts = b
	return spec
}

// ReadOnlyMode reports whether mode makes every bind read-only (seed 000:
// review, plan and orchestrate; chat keeps writable binds writable).
func ReadOnlyMode(m Mode) bool { return m != ModeChat && m != "" }

func checkID(field, id string, required bool) error {
	if id == "" {
		if required {
			return &SpecError{field, "must not be empty"}
		}
		return nil
	}
	if len(id) > MaxIDLen {
		return &SpecError{field, fmt.Sprintf("%d characters, at most %d", len(id), MaxIDLen)}
	}
	if id == "." || id == ".." {
		return &SpecError{field, fmt.Sprintf("%q is not allowed", id)}
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return &SpecError{field, fmt.Sprintf("character %q not allowed; use letters, digits, '.', '_' and '-'", r)}
		}
	}
	return nil
}

// checkPath checks the form of a path; glob says whether * and ? are
// allowed (protectedPaths entries holding them are globs, seed 000).
func checkPath(field, p string, strict bool) error {
	switch {
	case p == "":
		return &SpecError{field, "must not be empty"}
	case strings.ContainsRune(p, 0):
		return &SpecError{field, "contains a NUL byte"}
	case len(p) > MaxPathLen:
		return &SpecError{field, fmt.Sprintf("%d bytes, at most %d", len(p), MaxPathLen)}
	case !filepath.IsAbs(p):
		return &SpecError{field, fmt.Sprintf("%q is not an absolute path", p)}
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return &SpecError{field, fmt.Sprintf("%q has a \"..\" element", p)}
		}
	}
	if strict && strings.ContainsAny(p, "\n") {
		return &SpecError{field, "contains a newline"}
	}
	return nil
}

func unwrapPathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

func within(path, root string) bool {
	return path == root || strings.HasPrefix(path, root+"/")
}

// CheckExec validates an ExecRequest (Exec's *SpecError, the server's
// 400): argv holds at least the program, no argument holds NUL; env names
// are non-empty without '=' or NUL, values without NUL; cwd, when set, is
// an absolute clean path; the timeout is not negative (its field is named
// as on the wire, timeoutMs).
func CheckExec(req ExecRequest) error {
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return &SpecError{"argv", "must hold at least the program"}
	}
	for i, a := range req.Argv {
		if strings.ContainsRune(a, 0) {
			return &SpecError{fmt.Sprintf("argv[%d]", i), "contains a NUL byte"}
		}
	}
	for k, v := range req.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return &SpecError{"env." + k, "a name must be non-empty without '=' or NUL, a value without NUL"}
		}
	}
	if req.Cwd != "" {
		if err := checkPath("cwd", req.Cwd, true); err != nil {
			return err
		}
	}
	if req.Timeout < 0 {
		return &SpecError{"timeoutMs", "must not be negative"}
	}
	return nil
}

// checkProtectedShown refuses a protectedPaths entry that no bind or
// runner state directory shows: it would protect nothing, silently, and
// the likely mistake is a guest path where a host path belongs (seed 000,
// "SandboxSpec": protectedPaths are host paths). Globs are left alone.
func checkProtectedShown(field, p string, spec Spec) error {
	if strings.ContainsAny(p, "*?[") {
		return nil
	}
	clean := filepath.Clean(p)
	shows := func(root string) bool {
		return within(clean, filepath.Clean(root)) || within(policy.Resolve(clean), policy.Resolve(root))
	}
	for _, b := range spec.BindMounts {
		if shows(b.HostPath) {
			return nil
		}
	}
	for _, d := range spec.RunnerStateDirs {
		if shows(d) {
			return nil
		}
	}
	for _, b := range spec.BindMounts {
		if within(clean, filepath.Clean(b.GuestPath)) {
			return &SpecError{field, fmt.Sprintf("%s is a guest path (inside bindMounts guestPath %s); protectedPaths are host paths: %s", p, b.GuestPath, filepath.Join(b.HostPath, strings.TrimPrefix(clean, filepath.Clean(b.GuestPath))))}
		}
	}
	return &SpecError{field, p + " is not inside any bindMounts hostPath or runnerStateDirs entry, so it would protect nothing"}
}
