package policy

import (
	"fmt"
	"github.com/srt-go/srt/credential"
	"github.com/srt-go/srt/netrule"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/srt-go/srt/settings"
)

// View confines what a sandbox sees of the host to a few read-only system
// directories and the listed mounts (seed 000, "Backend natif", Linux:
// "seuls les chemins liés sont visibles"). A Policy without a View sees
// the whole host read-only, as the srt command line does.
//
// Writability inside the View is still decided by the Policy's lists: a
// mount is writable where Writable(host path) is true, so a protected path
// (DenyWrite) is read-only in every mount that shows it, and a writable
// root (AllowWrite) inside a read-only mount is a writable hole.
type View struct {
	// System are the system directories visible read-only at their own
	// path: clean absolute host paths, literal (a symbolic link such as
	// /bin -> usr/bin stays a link inside the sandbox). Each exists.
	System []string
	// Mounts are the host trees the sandbox sees, each at its Guest path.
	Mounts []ViewMount
}

// ViewMount shows one host path inside the sandbox.
type ViewMount struct {
	// Host is the source. Mounts use Host.Resolved, so the sandbox sees
	// the file the spelling leads to, and every rule keyed by a resolved
	// path applies inside it.
	Host Path
	// Guest is where the sandbox sees it: clean and absolute. It may
	// differ from Host.Literal.
	Guest string
}

// Visible reports whether host path (absolute, resolved) can be seen at
// all inside the View: below a system directory or a mount's host path.
func (v *View) Visible(path string) bool {
	for _, s := range v.System {
		if Within(path, Resolve(s)) {
			return true
		}
	}
	for _, m := range v.Mounts {
		if Within(path, m.Host.Resolved) {
			return true
		}
	}
	return false
}

// Guests returns every path inside the sandbox at which host path
// (absolute, resolved) appears, one per mount that contains it, shallowest
// mount first. A path below a system directory and outside every mount is
// not returned: system directories are read-only and carry no rules.
func (v *View) Guests(path string) []string {
	var out []string
	for _, m := range v.Mounts {
		if Within(path, m.Host.Resolved) {
			rel := strings.TrimPrefix(path, m.Host.Resolved)
			if m.Host.Resolved == "/" {
				rel = path
			}
			out = append(out, filepath.Clean(m.Guest+"/"+rel))
		}
	}
	return out
}

// DefaultSystemDirs are the read-only system directories a confined
// sandbox sees so that programs run: binaries, libraries and /etc. Those
// that do not exist on this host are skipped by SystemDirs.
var DefaultSystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// SystemDirs returns the dirs that exist, plus what the symbolic links
// directly in /etc and one level below point to outside them (for
// example /etc/resolv.conf -> /run/systemd/resolve/stub-resolv.conf), so
// that the files /etc promises are there. Targets below /proc and /dev,
// which the sandbox gets fresh, are left out. The result is sorted.
func SystemDirs(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if _, err := os.Lstat(d); err == nil {
			out = append(out, filepath.Clean(d))
		}
	}
	covered := func(path string) bool {
		for _, d := range out {
			if Within(path, Resolve(d)) || Within(path, d) {
				return true
			}
		}
		return Within(path, "/proc") || Within(path, "/dev")
	}
	var extra []string
	if slices.Contains(out, "/etc") {
		filepath.WalkDir("/etc", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() && strings.Count(p, "/") > 2 {
				return filepath.SkipDir
			}
			if d.Type()&fs.ModeSymlink == 0 {
				return nil
			}
			t, err := filepath.EvalSymlinks(p)
			if err != nil || covered(t) || slices.Contains(extra, t) {
				return nil
			}
			extra = append(extra, t)
			return nil
		})
	}
	out = append(out, extra...)
	slices.Sort(out)
	return out
}

// ViewBind is one host path a confined sandbox sees (seed 000's
// SandboxBindMount, after the mode's rules).
type ViewBind struct {
	// Host is an absolute host path that exists.
	Host string
	// Guest is the absolute path inside the sandbox; empty means Host.
	Guest string
	// Writable says the mount is writable (chat mode and not readOnly).
	// Protected paths and the mandatory denies stay read-only inside it.
	Writable bool
}

// ViewRules are the inputs of CompileView.
type ViewRules struct {
	Binds []ViewBind
	// Protected are host paths never writable, whatever Binds say (seed
	// 000, protectedPaths). They join the mandatory denies.
	Protected []string
	// Writable are host directories writable in every mode (seed 000,
	// runnerStateDirs), unless Protected covers them. One that no bind
	// shows is added as a mount at its own path.
	Writable []string
	// System are the read-only system directories; nil means
	// SystemDirs(DefaultSystemDirs).
	System []string
	// Home is what "~" means in a rule; empty means os.UserHomeDir.
	Home string
	// DenyRead are host paths never readable (settings'
	// filesystem.denyRead, each literal): srtd's terminal profile hides
	// its secret directories and token file with them.
	DenyRead []string
	// Network are the session's egress rules; the zero value allows no
	// host.
	Network netrule.Rules
	// Untrusted are host trees other sandboxes may have written (srtd's
	// written trees: every path any of its sessions had writable), judged
	// as the binds are: no symbolic link inside one is followed for a
	// rule or a mount (Env.Untrusted).
	Untrusted []string
	// Credentials are the session's masked secrets
	// (CompileSessionCredentials); nil or empty for none. A Set with
	// secrets makes the session's proxy terminate TLS with a CA made for
	// this compilation only (Network.TLS, as network.tlsTerminate {}
	// would), so that it can put the real values back into requests to
	// their hosts.
	Credentials *credential.Set
}

// CompileView builds the Policy of a confined sandbox: the View holds
// System and Binds, AllowWrite the writable binds and r.Writable,
// DenyWrite r.Protected plus the mandatory write-denies found in every
// writable tree (seed 003). Each deny covers its literal and its
// symlink-resolved spelling (Path.Resolved). The srt command line's
// default write paths (/tmp/claude, ~/.npm/_logs, ~/.claude/debug) are not
// added: a confined sandbox writes only where the rules say.
//
// With r.Credentials holding secrets, Network.Credentials is that Set and
// Network.TLS an ephemeral termination (see ViewRules.Credentials).
//
// Errors wrap ErrUnenforceable when a rule cannot be enforced (a protected
// name that is a symbolic link inside a writable tree).
func CompileView(r ViewRules) (*Policy, error) {
	s := settings.Default()
	entry := func(p string) settings.PathEntry { return settings.PathEntry{Path: p, Literal: true} }
	for _, b := range r.Binds {
		if !filepath.IsAbs(b.Host) {
			return nil, fmt.Errorf("bind %q: host path must be absolute", b.Host)
		}
		if b.Writable {
			s.Filesystem.AllowWrite = append(s.Filesystem.AllowWrite, entry(b.Host))
		}
	}
	for _, w := range r.Writable {
		s.Filesystem.AllowWrite = append(s.Filesystem.AllowWrite, entry(w))
	}
	for _, d := range r.DenyRead {
		s.Filesystem.DenyRead = append(s.Filesystem.DenyRead, entry(d))
	}
	for _, d := range r.Protected {
		// Entries holding * or ? are globs and left as they are (seed
		// 000, "SandboxSpec").
		s.Filesystem.DenyWrite = append(s.Filesystem.DenyWrite, settings.PathEntry{Path: d, Literal: !isGlob(d)})
	}
	// Every bind's tree, writable here or not, may have been written by
	// another session (or this one in chat mode): no link in it is the
	// user's own, so none is followed for a rule (runnerStateDirs, other
	// binds, protectedPaths).
	untrusted := slices.Clone(r.Untrusted)
	for _, b := range r.Binds {
		untrusted = append(untrusted, b.Host)
	}
	p, err := Compile(s, Env{Cwd: "/", Home: r.Home, Untrusted: untrusted})
	if err != nil {
		return nil, err
	}
	if p.Network.Rules, err = netrule.Compile(r.Network); err != nil {
		return nil, fmt.Errorf("egress rules: %w", err)
	}
	if r.Credentials.Len() > 0 {
		p.Network.Credentials = r.Credentials
		// What comes back through a tunnel srt cannot see into is not
		// scrubbed of the real values (maskedTunnels).
		p.Network.Filter.RefuseOpaqueTunnels = true
		if p.Network.TLS, err = tlsOf(settings.Network{TLSTerminate: &settings.TLSTerminate{}}, ""); err != nil {
			return nil, fmt.Errorf("credentials: %w", err)
		}
	}
	p.AllowWrite = slices.DeleteFunc(p.AllowWrite, func(w Path) bool { return w.Origin == OriginDefault })
	// The settings above hold only the session's own lists: its write
	// roots are binds and runner state directories, its write-denies
	// protectedPaths.
	for i := range p.AllowWrite {
		if p.AllowWrite[i].Origin == OriginUser {
			p.AllowWrite[i].Origin = OriginBind
		}
	}
	for i := range p.DenyWrite {
		if p.DenyWrite[i].Origin == OriginUser {
			p.DenyWrite[i].Origin = OriginProtected
		}
	}
	v := &View{System: r.System}
	if v.System == nil {
		v.System = SystemDirs(DefaultSystemDirs)
	}
	for i, b := range r.Binds {
		g := b.Guest
		if g == "" {
			g = b.Host
		}
		h, err := p.guarded(makePath(filepath.Clean(b.Host), OriginBind, fmt.Sprintf("bindMounts[%d]", i)))
		if err != nil {
			return nil, err
		}
		if h.Kind == Missing {
			return nil, fmt.Errorf("bindMounts[%d]: %s: %w", i, b.Host, fs.ErrNotExist)
		}
		v.Mounts = append(v.Mounts, ViewMount{Host: h, Guest: filepath.Clean(g)})
	}
	for i, w := range r.Writable {
		h, err := p.guarded(makePath(filepath.Clean(w), OriginBind, fmt.Sprintf("runnerStateDirs[%d]", i)))
		if err != nil {
			return nil, err
		}
		if h.Kind == Missing {
			return nil, fmt.Errorf("runnerStateDirs[%d]: %s: %w", i, w, fs.ErrNotExist)
		}
		if !v.Visible(h.Resolved) || slices.ContainsFunc(v.System, func(s string) bool { return Within(h.Resolved, Resolve(s)) }) && len(v.Guests(h.Resolved)) == 0 {
			v.Mounts = append(v.Mounts, ViewMount{Host: h, Guest: h.Literal})
		}
	}
	p.View = v
	return p, nil
}
