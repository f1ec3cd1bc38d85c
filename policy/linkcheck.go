package policy

import (
	"fmt"
	"path/filepath"
)

// CheckLinks resolves the absolute path as every rule of a Policy is
// resolved (the link guard, trust.go; SECURITY.md, "Cross-run attacks"),
// with untrusted as the trees a sandbox may have written (Env.Untrusted):
// it returns the path resolved, the part that does not exist kept as
// spelled, or an error wrapping ErrUnenforceable that names the first
// symbolic link on the way a sandbox or another local user could have
// made, and why. A link is refused when its directory lies inside an
// untrusted tree (as spelled, or as resolved now), when it is owned by a
// user other than this process's and root, or when its directory is one
// such a user can change (owned by one, or group- or world-writable
// without the sticky bit); the path itself being such a link counts. A
// component this process cannot look at for a reason a sandbox could
// have made is an error too (uncheckable).
//
// srtd's port runs it on every host path of a launch before anything is
// mounted, with the trees its sessions have had writable; CompileView
// applies the same guard again when it builds the view.
func CheckLinks(path string, untrusted []string) (string, error) {
	g := &linkGuard{euid: euid()}
	for _, u := range untrusted {
		g.roots = append(g.roots, filepath.Clean(u))
		if res, err := filepath.EvalSymlinks(u); err == nil {
			g.roots = append(g.roots, res)
		}
	}
	res, err := g.resolve(filepath.Clean(path))
	if err != nil {
		return "", fmt.Errorf("%s: %w; it must not be reached through it, since a sandbox could re-point it at any directory: name the target instead: %w", path, err, ErrUnenforceable)
	}
	return res, nil
}
