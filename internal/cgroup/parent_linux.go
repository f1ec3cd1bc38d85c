package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The mount points looked at when no parent is given: /sys/fs/cgroup is
// the unified hierarchy on a pure v2 host; on a hybrid one it is a tmpfs
// holding the v1 hierarchies, one directory each, and the v2 one at
// unified (the layout systemd mounts).
const (
	sysCgroup = "/sys/fs/cgroup"
	hybridV2  = "/sys/fs/cgroup/unified"
	v1Memory  = "/sys/fs/cgroup/memory"
)

// leafName is the cgroup Find moves this process into when the v2 "no
// internal processes" rule keeps it from enabling the memory controller
// for the children of its own cgroup (cgroup-v2.rst, "No Internal Process
// Constraint").
const leafName = "srtd"

// Find returns the parent under which session cgroups are made, or an
// error saying why none can be used (the caller then runs sessions
// without a memory limit, or refuses those that ask for one).
//
// given, when not empty, is the operator's choice (srtd's --cgroup-parent):
// a directory of a v2 hierarchy with the memory controller, or of the v1
// memory hierarchy, writable by this process (delegated to its user).
// Otherwise Find takes this process's own cgroup: first in the v2
// hierarchy, when the memory controller is available there, else in the
// v1 memory hierarchy.
//
// On v2 Find enables the memory controller in the parent's
// cgroup.subtree_control when it is not. The kernel refuses that while
// the parent holds processes (EBUSY, "no internal processes"); when the
// only one is this process, Find moves it into a leaf child, "srtd", and
// enables the controller then. It never moves other processes.
//
// Before it returns, Find makes a probe child with a limit and removes it,
// so that a parent whose files this process cannot write is found now and
// not at the first launch.
func Find(given string) (*Parent, error) {
	if given != "" {
		return probed(atGiven(given))
	}
	p, e2 := probed(ownV2())
	if e2 == nil {
		return p, nil
	}
	p, e1 := probed(ownV1())
	if e1 == nil {
		return p, nil
	}
	return nil, fmt.Errorf("cgroup v2: %w; cgroup v1: %w", e2, e1)
}

// probed returns p once a probe child made in it with a limit, and on
// v2 a process started in that child, have worked; the child is removed.
func probed(p *Parent, err error) (*Parent, error) {
	if err != nil {
		return nil, err
	}
	probe, err := p.New(fmt.Sprintf("srtd-probe-%d", os.Getpid()), 64<<20)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.dir, err)
	}
	err = probe.tryStart()
	if rerr := probe.remove(); rerr != nil && err == nil {
		err = fmt.Errorf("removing the probe cgroup: %w", rerr)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.dir, err)
	}
	return p, nil
}

// Version is the parent's hierarchy, V1 or V2.
func (p *Parent) Version() Version { return p.version }

// Dir is the parent's directory in the cgroup file system.
func (p *Parent) Dir() string { return p.dir }

// String says which mechanism and where, for srtd's start-up log line:
// "cgroup v2 at DIR (NOTE)".
func (p *Parent) String() string {
	return fmt.Sprintf("cgroup v%d at %s (%s)", p.version, p.dir, p.note)
}

// New makes the cgroup name below the parent with a memory limit of limit
// bytes and no swap beyond it where the hierarchy offers the knob:
// memory.max and memory.swap.max=0 on v2 (cgroup-v2.rst, "Memory
// Interface Files"), memory.limit_in_bytes and then
// memory.memsw.limit_in_bytes=limit on v1 (cgroup-v1/memory.rst, 2.4 and
// 2.5; memsw must not be below the limit, hence the order), and
// memory.kmem.tcp.limit_in_bytes=limit so that socket buffers count (2.7.3). A leftover
// empty cgroup of the same name is removed first; a populated one is an
// error. On any error nothing is left behind.
func (p *Parent) New(name string, limit int64) (*Group, error) {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return nil, fmt.Errorf("cgroup name %q", name)
	}
	if limit <= 0 {
		return nil, fmt.Errorf("memory limit %d: want > 0 bytes", limit)
	}
	g := &Group{version: p.version, dir: filepath.Join(p.dir, name), limit: limit}
	err := unix.Mkdir(g.dir, 0o755)
	if errors.Is(err, unix.EEXIST) {
		// A crashed srtd's: rmdir only succeeds when it is empty.
		if err = unix.Rmdir(g.dir); err == nil {
			err = unix.Mkdir(g.dir, 0o755)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", g.dir, err)
	}
	v := strconv.FormatInt(limit, 10)
	var files [][2]string
	if p.version == V2 {
		files = [][2]string{{"memory.max", v}, {"memory.swap.max", "0"}}
	} else {
		// v1 charges a socket's buffers to the cgroup only once
		// memory.kmem.tcp.limit_in_bytes is set (cgroup-v1/memory.rst,
		// 2.7.3; v2 always charges them): without it a session queues
		// gigabytes in loopback TCP buffers past its limit and exhausts
		// the host's tcp_mem (found by a review).
		files = [][2]string{{"memory.limit_in_bytes", v}, {"memory.memsw.limit_in_bytes", v}, {"memory.kmem.tcp.limit_in_bytes", v}}
	}
	for i, f := range files {
		err := writeFile(filepath.Join(g.dir, f[0]), f[1])
		if i > 0 && errors.Is(err, os.ErrNotExist) {
			continue // no swap (or TCP) accounting on this kernel: nothing to cap
		}
		if err != nil {
			unix.Rmdir(g.dir)
			return nil, fmt.Errorf("setting %s: %w", f[0], err)
		}
	}
	return g, nil
}

// atGiven checks an operator-given parent.
func atGiven(dir string) (*Parent, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("--cgroup-parent %q: not an absolute path", dir)
	}
	dir = filepath.Clean(dir)
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil, fmt.Errorf("--cgroup-parent %s: %w", dir, err)
	}
	switch st.Type {
	case unix.CGROUP2_SUPER_MAGIC:
		return setupV2(dir, "--cgroup-parent")
	case unix.CGROUP_SUPER_MAGIC:
		return checkV1(dir, "--cgroup-parent")
	}
	return nil, fmt.Errorf("--cgroup-parent %s is not a directory of a cgroup file system", dir)
}

// ownV2 is this process's cgroup in the v2 hierarchy, made a parent.
func ownV2() (*Parent, error) {
	mount := ""
	for _, m := range []string{sysCgroup, hybridV2} {
		if isFS(m, unix.CGROUP2_SUPER_MAGIC) {
			mount = m
			break
		}
	}
	if mount == "" {
		return nil, fmt.Errorf("no cgroup2 file system at %s or %s", sysCgroup, hybridV2)
	}
	rel, err := ownPath(func(ctrls string) bool { return ctrls == "" })
	if err != nil {
		return nil, err
	}
	return setupV2(filepath.Join(mount, rel), "this process's cgroup")
}

// ownV1 is this process's cgroup in the v1 memory hierarchy.
func ownV1() (*Parent, error) {
	if !isFS(v1Memory, unix.CGROUP_SUPER_MAGIC) {
		return nil, fmt.Errorf("no v1 memory hierarchy at %s", v1Memory)
	}
	rel, err := ownPath(func(ctrls string) bool { return slices.Contains(strings.Split(ctrls, ","), "memory") })
	if err != nil {
		return nil, err
	}
	return checkV1(filepath.Join(v1Memory, rel), "this process's memory cgroup")
}

// setupV2 makes dir, a v2 cgroup, a parent: the memory controller
// available to it and enabled for its children, its directory writable.
func setupV2(dir, note string) (*Parent, error) {
	ctrls, err := readWords(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, err
	}
	if !slices.Contains(ctrls, "memory") {
		return nil, fmt.Errorf("the memory controller is not available in %s (cgroup.controllers: %q)", dir, strings.Join(ctrls, " "))
	}
	if err := writable(dir); err != nil {
		return nil, err
	}
	sub := filepath.Join(dir, "cgroup.subtree_control")
	on, err := readWords(sub)
	if err != nil {
		return nil, err
	}
	if slices.Contains(on, "memory") {
		return &Parent{version: V2, dir: dir, note: note}, nil
	}
	err = writeFile(sub, "+memory")
	if errors.Is(err, unix.EBUSY) {
		// Processes in dir: the "no internal processes" rule. Only this
		// one may be moved, into a leaf of its own.
		procs, perr := readInts(filepath.Join(dir, "cgroup.procs"))
		if perr != nil {
			return nil, perr
		}
		if len(procs) != 1 || procs[0] != os.Getpid() {
			return nil, fmt.Errorf("%s holds %d other processes, so the memory controller cannot be enabled for its children (cgroup v2 \"no internal processes\" rule); run srtd in a cgroup of its own (systemd-run --user --scope -p Delegate=yes) or pass --cgroup-parent", dir, len(procs)-1)
		}
		leaf := filepath.Join(dir, leafName)
		if err := unix.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("creating %s for srtd itself: %w", leaf, err)
		}
		if err := writeFile(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(os.Getpid())); err != nil {
			return nil, fmt.Errorf("moving srtd into %s: %w", leaf, err)
		}
		note += ", srtd moved into " + leafName
		err = writeFile(sub, "+memory")
	}
	if err != nil {
		return nil, fmt.Errorf("enabling the memory controller in %s: %w", sub, err)
	}
	return &Parent{version: V2, dir: dir, note: note}, nil
}

// checkV1 makes dir, a v1 cgroup, a parent: of the memory hierarchy, its
// directory writable.
func checkV1(dir, note string) (*Parent, error) {
	if _, err := os.Stat(filepath.Join(dir, "memory.limit_in_bytes")); err != nil {
		return nil, fmt.Errorf("%s is not in the v1 memory hierarchy: %w", dir, err)
	}
	if err := writable(dir); err != nil {
		return nil, err
	}
	return &Parent{version: V1, dir: dir, note: note}, nil
}

// ownPath is the path of this process's cgroup, relative to its
// hierarchy's root, from the /proc/self/cgroup line whose controller list
// ctrls matches ("hierarchy-ID:controller-list:cgroup-path", cgroups(7)).
func ownPath(match func(ctrls string) bool) (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 && match(f[1]) {
			return f[2], nil
		}
	}
	return "", errors.New("this process's cgroup is not in /proc/self/cgroup")
}

func writable(dir string) error {
	for _, p := range []string{dir, filepath.Join(dir, "cgroup.procs")} {
		if err := unix.Access(p, unix.W_OK); err != nil {
			return fmt.Errorf("%s is not writable by uid %d (not delegated to it): %w", p, os.Geteuid(), err)
		}
	}
	return nil
}

func isFS(path string, magic int64) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && st.Type == magic
}

// writeFile writes v to a cgroup file in one write(2), as the kernel
// wants it; the file must exist.
func writeFile(path, v string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(v)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func readWords(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(b)), nil
}

func readInts(path string) ([]int, error) {
	words, err := readWords(path)
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(words))
	for _, w := range words {
		n, err := strconv.Atoi(w)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// readKey is the value of key in a flat keyed file ("key value" lines,
// cgroup-v2.rst "Interface Files"; memory.oom_control has the same form).
func readKey(path, key string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s has no %s", path, key)
}
