package port

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/srt-go/srt/policy"
)

// writtenTrees are the host trees a sandbox of this user may have written:
// every hostPath a session had writable and every runnerStateDirs entry,
// of this Runtime and, through its store, of every earlier or concurrent
// srtd process of the user. A session controls its write roots between
// runs (SECURITY.md, "Cross-run attacks"): a symbolic link it leaves in
// one (ws/sub -> ~/.ssh) must not lead a later session's bind, runner
// state directory or protected path elsewhere. checkLinks refuses a
// launch whose host paths cross such a link; sessionView hands the same
// trees to policy.CompileView, which applies the rule again at the start.
type writtenTrees struct {
	mu sync.Mutex
	// mem are the trees this process recorded, as spelled and resolved.
	mem []string
	// store persists them; nil keeps them in memory only (no per-user
	// state directory on this platform).
	store treeStore
	// err is why the store could not be opened: every launch that needs
	// the trees fails with it (closed, not a weaker check).
	err error
}

// treeStore is the persistent part of writtenTrees (written_linux.go).
type treeStore interface {
	// load returns every tree recorded so far, by any process.
	load() ([]string, error)
	// add records trees.
	add(trees []string) error
}

// newWrittenTrees opens the store at file (written_linux.go's default
// when ""; "-" keeps the set in memory, for tests).
func newWrittenTrees(file string) *writtenTrees {
	w := &writtenTrees{}
	if file == "-" {
		return w
	}
	w.store, w.err = openTreeStore(file)
	return w
}

// list returns every tree known: this process's and the store's.
func (w *writtenTrees) list() ([]string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return nil, w.err
	}
	out := slices.Clone(w.mem)
	if w.store != nil {
		more, err := w.store.load()
		if err != nil {
			return nil, fmt.Errorf("srtd's written trees: %w", err)
		}
		out = append(out, more...)
	}
	return out, nil
}

// record adds the trees spec makes writable (writable binds in chat mode,
// runnerStateDirs), each as spelled and as resolved now, before anything
// of the session runs.
func (w *writtenTrees) record(spec Spec) error {
	var trees []string
	add := func(p string) {
		p = filepath.Clean(p)
		trees = append(trees, p)
		if r := policy.Resolve(p); r != p {
			trees = append(trees, r)
		}
	}
	ro := ReadOnlyMode(spec.Mode)
	for _, b := range spec.BindMounts {
		if !ro && !b.ReadOnly {
			add(b.HostPath)
		}
	}
	for _, d := range spec.RunnerStateDirs {
		add(d)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	var fresh []string
	for _, t := range trees {
		if !slices.Contains(w.mem, t) && !slices.Contains(fresh, t) {
			fresh = append(fresh, t)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	if w.store != nil {
		if err := w.store.add(fresh); err != nil {
			return fmt.Errorf("srtd's written trees: %w", err)
		}
	}
	w.mem = append(w.mem, fresh...)
	return nil
}

// checkLinks refuses spec (a *SpecError naming the field: the server's
// 400) when one of its host paths is reached through a symbolic link a
// sandbox or another local user could have made (policy.CheckLinks): one
// inside a written tree or one of spec's own binds and runner state
// directories, one owned by another user, or one in a directory another
// user can change (a link another user left in /tmp). A bind's hostPath
// and a runnerStateDirs entry must not cross one at all, nor be one; a
// protectedPaths entry may itself be a link (its target is protected as
// well, policy.Policy.LinkedDenies) but not be spelled through one. Links
// elsewhere (a user's own ~/proj -> /data/proj, /var/run -> /run) are
// followed. It runs before Start answers and again when the backend
// starts; the planner's and PID 1's checks then make sure the mounts are
// at the paths resolved here (sandbox/linux/run_linux.go, mountChecks).
func (w *writtenTrees) checkLinks(spec Spec) error {
	trees, err := w.list()
	if err != nil {
		return err
	}
	for _, b := range spec.BindMounts {
		trees = append(trees, b.HostPath)
	}
	trees = append(trees, spec.RunnerStateDirs...)
	refuse := func(field string, err error) error { return &SpecError{field, err.Error()} }
	for i, b := range spec.BindMounts {
		if _, err := policy.CheckLinks(b.HostPath, trees); err != nil {
			return refuse(fmt.Sprintf("bindMounts[%d].hostPath", i), err)
		}
	}
	for i, d := range spec.RunnerStateDirs {
		if _, err := policy.CheckLinks(d, trees); err != nil {
			return refuse(fmt.Sprintf("runnerStateDirs[%d]", i), err)
		}
	}
	for i, p := range spec.ProtectedPaths {
		if strings.ContainsAny(p, globMeta) || filepath.Clean(p) == "/" {
			continue
		}
		if _, err := policy.CheckLinks(filepath.Dir(filepath.Clean(p)), trees); err != nil {
			return refuse(fmt.Sprintf("protectedPaths[%d]", i), err)
		}
	}
	return nil
}
