package microvm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/srt-go/srt/microvm/internal/wire"
	"github.com/srt-go/srt/policy"
)

// ErrCannotHide is wrapped by Launch's error when a path that must not be
// read (SystemHidden, Config.DenyRead) is visible through a share or a
// system directory and cannot be covered in QEMU's view: QEMU runs
// unconfined, or a symbolic link lies on the way (the workload may have
// left one between runs). The VM does not start (fail closed).
var ErrCannotHide = errors.New("microvm: cannot hide a path the guest must not read")

// sysShare is one System directory exported to the guest.
type sysShare struct {
	path string // host path = guest path
}

// hiddenPath is one path covered in QEMU's bubblewrap view.
type hiddenPath struct {
	view string // the path inside QEMU's view
	dir  bool   // an empty read-only tmpfs, else /dev/null
	why  string // "SystemHidden" or "DenyRead"
}

// planSystem decides the System exports and links and the hidden paths
// (Config.System, SystemHidden, Config.DenyRead). It runs at Launch, so
// every path is looked at as it is now, not as the policy saw it.
func (v *VM) planSystem() error {
	for _, d := range v.cfg.System {
		d = filepath.Clean(d)
		fi, err := os.Lstat(d)
		if err != nil {
			v.sysSkipped = append(v.sysSkipped, d)
			continue
		}
		if r, err := filepath.EvalSymlinks(filepath.Dir(d)); err != nil || r != filepath.Dir(d) {
			v.sysSkipped = append(v.sysSkipped, d) // a link on the way: the guest path would differ
			continue
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			t, err := os.Readlink(d)
			if err != nil {
				return err
			}
			if st, err := os.Stat(d); err != nil || !st.IsDir() {
				v.sysSkipped = append(v.sysSkipped, d)
				continue
			}
			if !slices.ContainsFunc(v.sysLinks, func(l wire.Link) bool { return l.Path == d }) {
				v.sysLinks = append(v.sysLinks, wire.Link{Path: d, Target: t})
			}
		case fi.IsDir():
			if !slices.ContainsFunc(v.sysShares, func(s sysShare) bool { return s.path == d }) {
				v.sysShares = append(v.sysShares, sysShare{path: d})
			}
		default:
			v.sysSkipped = append(v.sysSkipped, d)
		}
	}
	// Parents first, so that a system directory inside another is mounted
	// after it.
	slices.SortStableFunc(v.sysShares, func(a, b sysShare) int { return len(a.path) - len(b.path) })

	var want []string
	for _, pat := range SystemHidden {
		m, _ := filepath.Glob(pat)
		for _, p := range m {
			want = append(want, p+"\x00SystemHidden")
		}
	}
	for _, p := range v.cfg.DenyRead {
		want = append(want, filepath.Clean(p)+"\x00DenyRead")
	}
	for i := 0; i < len(want); i++ {
		p, why, _ := strings.Cut(want[i], "\x00")
		views, err := v.viewPathsOf(p)
		if err != nil {
			return fmt.Errorf("%s %s: %w", why, p, err)
		}
		for _, vp := range views {
			fi, err := os.Lstat(vp.host)
			if errors.Is(err, os.ErrNotExist) {
				continue // nothing to show
			} else if err != nil {
				return fmt.Errorf("%s %s: %v: %w", why, p, err, ErrCannotHide)
			}
			if fi.Mode()&os.ModeSymlink != 0 && why == "SystemHidden" && len(want) < 1024 {
				// /etc is root's: a link there (krb5.keytab -> ...) is
				// the host's set-up, not a workload's doing; hide what
				// it leads to, wherever that is exported.
				if t, err := filepath.EvalSymlinks(vp.host); err == nil {
					want = append(want, t+"\x00SystemHidden")
				}
				continue
			}
			if fi.Mode()&os.ModeSymlink != 0 {
				return fmt.Errorf("%s %s: %s is a symbolic link, and a mount cannot cover a link: %w", why, p, vp.host, ErrCannotHide)
			}
			if v.bwrap == "" {
				return fmt.Errorf("%s %s is visible through a share and QEMU runs without bubblewrap (Confine), which alone can hide it: %w", why, p, ErrCannotHide)
			}
			if vp.writable {
				// Pinned: each directory on the way is a mount point in
				// QEMU's view, so the guest cannot rename or remove it
				// (EBUSY) and have the next run find nothing to cover while
				// the file sits readable under a new name; the native
				// backend pins the same parents (fsplan's pinParents).
				for _, d := range vp.pins {
					if !slices.Contains(v.pins, d) {
						v.pins = append(v.pins, d)
					}
				}
			}
			h := hiddenPath{view: vp.view, dir: fi.IsDir(), why: why}
			if !slices.Contains(v.hidden, h) {
				v.hidden = append(v.hidden, h)
			}
		}
	}
	return nil
}

// viewPath is a host path as QEMU's view spells it.
type viewPath struct {
	host, view string
	// pins are the existing directories of a share strictly between its
	// root and host, as the view spells them, parents first.
	pins []string
	// writable says the share is writable (pins are then writable binds).
	writable bool
}

// viewPathsOf returns where host path p (resolved) is exported: below a
// System directory (at its own path), below a share (at the share's
// spelling, which is how bubblewrap binds it), and, when p contains a
// share or a System directory, that whole export. Every directory from
// the export's root down to p is checked to be no symbolic link: a
// resolved path with a link in it has changed since it was resolved, and
// bubblewrap would follow the link when mounting.
func (v *VM) viewPathsOf(p string) ([]viewPath, error) {
	var out []viewPath
	add := func(root, rootView string, writable bool) error {
		switch {
		case policy.Within(p, root):
			rel, _ := filepath.Rel(root, p)
			vp := viewPath{host: p, view: filepath.Join(rootView, rel), writable: writable}
			cur := root
			for _, c := range strings.Split(rel, "/") {
				if c == "." {
					break
				}
				cur = filepath.Join(cur, c)
				if cur == p {
					break
				}
				fi, err := os.Lstat(cur)
				if err == nil && fi.Mode()&os.ModeSymlink != 0 {
					return fmt.Errorf("%s is a symbolic link: %w", cur, ErrCannotHide)
				}
				if err == nil && fi.IsDir() {
					r, _ := filepath.Rel(root, cur)
					vp.pins = append(vp.pins, filepath.Join(rootView, r))
				}
			}
			out = append(out, vp)
		case policy.Within(root, p):
			out = append(out, viewPath{host: root, view: rootView})
		}
		return nil
	}
	for _, s := range v.sysShares {
		if err := add(s.path, s.path, false); err != nil {
			return nil, err
		}
	}
	for _, s := range v.cfg.Shares {
		r, err := filepath.EvalSymlinks(s.HostPath)
		if err != nil {
			return nil, fmt.Errorf("share %s: %v: %w", s.HostPath, err, ErrCannotHide)
		}
		if err := add(r, s.HostPath, !s.ReadOnly); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// hideArgs are the bubblewrap arguments that cover the hidden paths in
// QEMU's view, after every bind that shows them: an empty tmpfs made
// read-only over a directory, /dev/null bound read-only over anything
// else (the guest's nodev mounts then refuse to open it at all).
func (v *VM) hideArgs() []string {
	var b []string
	for _, h := range v.hidden {
		if h.dir {
			b = append(b, "--perms", "0555", "--tmpfs", h.view, "--remount-ro", h.view)
		} else {
			b = append(b, "--ro-bind", "/dev/null", h.view)
		}
	}
	return b
}

// pinArgs self-bind the pinned directories of writable shares, parents
// first. They come before the protected paths' read-only binds, which
// must not be covered by a writable pin.
func (v *VM) pinArgs() []string {
	var b []string
	// One list for both reasons a directory of a writable share is made a
	// mount point of its own: it holds a hidden path (above) or lies
	// between a write root and a deny under Config.Names (names_linux.go).
	pins := slices.Clone(v.pins)
	for _, p := range v.pinnedHost {
		if !slices.Contains(pins, p) {
			pins = append(pins, p)
		}
	}
	slices.SortStableFunc(pins, func(a, b string) int { return strings.Count(a, "/") - strings.Count(b, "/") })
	for _, p := range pins {
		b = append(b, "--bind", p, p)
	}
	return b
}

// systemBindArgs show the System directories read-only in QEMU's view and
// recreate their links (QEMU's own /usr, /bin... are bound by confine).
func (v *VM) systemBindArgs(done func(string) bool) []string {
	var b []string
	for _, l := range v.sysLinks {
		if !done(l.Path) {
			b = append(b, "--symlink", l.Target, l.Path)
		}
	}
	for _, s := range v.sysShares {
		if !done(s.path) {
			b = append(b, "--ro-bind", s.path, s.path)
		}
	}
	return b
}

// systemGuestConfig is what the guest mounts for System.
func (v *VM) systemGuestConfig() (shares []wire.Share, links []wire.Link) {
	for i, s := range v.sysShares {
		shares = append(shares, wire.Share{Tag: fmt.Sprintf("y%d", i), Path: s.path, ReadOnly: true})
	}
	return shares, v.sysLinks
}

// hiddenUnder reports whether a hidden path lies in the export at view
// path root.
func (v *VM) hiddenUnder(root string) bool {
	return slices.ContainsFunc(v.hidden, func(h hiddenPath) bool { return policy.Within(h.view, root) })
}
