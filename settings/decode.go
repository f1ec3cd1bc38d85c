package settings

import (
	"net/netip"
	"strings"
	"unicode"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/srt-go/srt/netrule"
)

// checker walks the decoded tree of one file and builds Settings.
type checker struct {
	name string           // file name for messages
	src  []byte           // the user's original bytes, for line:column
	bom  bool             // src starts with a UTF-8 byte order mark
	offs map[string]int64 // value offsets by dotted path (parseTree)
}

// unknown reports key m of the object at path as unknown, suggesting the
// closest of known.
func (c *checker) unknown(m member, path string, known []string) error {
	where := ""
	if path == "" {
		where = " at the top level"
	}
	if s := suggest(m.name, known); s != "" {
		return c.errorAt(m.keyOff, path, nil, "unknown key %s%s; did you mean %q?", quoteKey(m.name), where, s)
	}
	return c.errorAt(m.keyOff, path, nil, "unknown key %s%s; known keys: %s", quoteKey(m.name), where, strings.Join(known, ", "))
}

// unsupported rejects a security setting srt-go does not implement:
// ignoring it would run the command with less protection than asked for.
// null means absent and is accepted.
func (c *checker) unsupported(m member, path string) error {
	if m.val.kind == 'n' {
		return nil
	}
	return c.errorAt(m.keyOff, joinKey(path, m.name), nil,
		"not supported by srt-go; remove it (srt-go refuses to run rather than ignore a security setting)")
}

// object returns the members of an object node; null gives none.
func (c *checker) object(n *node, path string) ([]member, error) {
	switch n.kind {
	case '{':
		return n.members, nil
	case 'n':
		return nil, nil
	}
	return nil, c.errorAt(n.off, path, nil, "expected an object, got %s", kindName(n.kind))
}

// array returns the elements of an array node; null gives none. what
// names the elements for the message ("paths").
func (c *checker) array(n *node, path, what string) ([]*node, error) {
	switch n.kind {
	case '[':
		return n.elems, nil
	case 'n':
		return nil, nil
	}
	return nil, c.errorAt(n.off, path, nil, "expected an array of %s, got %s", what, kindName(n.kind))
}

// boolean returns a JSON boolean; null is false.
func (c *checker) boolean(n *node, path string) (bool, error) {
	switch n.kind {
	case 't':
		return true, nil
	case 'f', 'n':
		return false, nil
	}
	return false, c.errorAt(n.off, path, nil, "expected a boolean (true or false), got %s", kindName(n.kind))
}

// str returns a JSON string; null is "" when nullOK.
func (c *checker) str(n *node, path string, nullOK bool) (string, error) {
	if n.kind == '"' || (n.kind == 'n' && nullOK) {
		return n.str, nil
	}
	return "", c.errorAt(n.off, path, nil, "expected a string, got %s", kindName(n.kind))
}

// strList returns an array of strings; null is an empty list, a null
// element is an error.
func (c *checker) strList(n *node, path, what string) ([]string, error) {
	elems, err := c.array(n, path, what)
	if err != nil || elems == nil {
		return nil, err
	}
	out := make([]string, 0, len(elems))
	for i, e := range elems {
		s, err := c.str(e, joinIndex(path, i), false)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// settings builds Settings from the root node.
func (c *checker) settings(root *node) (*Settings, error) {
	if root.kind != '{' {
		return nil, c.errorAt(root.off, "", nil, "the settings must be a JSON object, got %s", kindName(root.kind))
	}
	s := Default()
	for _, m := range root.members {
		p := joinKey("", m.name)
		var err error
		switch m.name {
		case "network":
			err = c.network(m.val, p, &s.Network)
		case "filesystem":
			err = c.filesystem(m.val, p, &s.Filesystem)
		case "ignoreViolations":
			s.IgnoreViolations, err = c.ignoreViolations(m.val, p)
		case "enableWeakerNestedSandbox":
			s.EnableWeakerNestedSandbox, err = c.boolean(m.val, p)
		case "allowNestedUserNamespaces":
			s.AllowNestedUserNamespaces, err = c.boolean(m.val, p)
		case "enableWeakerNetworkIsolation":
			s.EnableWeakerNetworkIsolation, err = c.boolean(m.val, p)
		case "allowAppleEvents":
			s.AllowAppleEvents, err = c.boolean(m.val, p)
		case "allowPty":
			s.AllowPty, err = c.boolean(m.val, p)
		case "mandatoryDenySearchDepth":
			s.MandatoryDenySearchDepth, err = c.integer(m.val, p, 1, 10)
		case "bwrapPath":
			s.BwrapPath, err = c.str(m.val, p, true)
			// A leading "/", not filepath.IsAbs: bwrap is Linux only, and
			// this must check the same on every GOOS srt-go builds for.
			if err == nil && m.val.kind != 'n' && (!strings.HasPrefix(s.BwrapPath, "/") || strings.IndexByte(s.BwrapPath, 0) >= 0) {
				err = c.errorAt(m.val.off, p, nil, "must be an absolute path, got %q", s.BwrapPath)
			}
		case "git":
			err = c.git(m.val, p, &s.Git)
		case "credentials":
			s.Credentials, err = c.credentials(m.val, p)
		case "$schema":
			// For editors (README "Editor support"): the file's schema.
			_, err = c.str(m.val, p, true)
		case "ripgrep", "socatPath", "seccomp", "javaAgentJarPath", "windows":
			// The reference's own helpers; srt-go has no use for them.
			s.Ignored = append(s.Ignored, p)
		default:
			err = c.unknown(m, "", topKeys)
		}
		if err != nil {
			return nil, err
		}
	}
	// The lists the reference requires are empty, never nil, as in Default,
	// whether the file omits them, sets them to null or to [].
	s.Network.AllowedDomains = nonNil(s.Network.AllowedDomains)
	s.Network.DeniedDomains = nonNil(s.Network.DeniedDomains)
	s.Filesystem.DenyRead = nonNil(s.Filesystem.DenyRead)
	s.Filesystem.AllowRead = nonNil(s.Filesystem.AllowRead)
	s.Filesystem.AllowWrite = nonNil(s.Filesystem.AllowWrite)
	s.Filesystem.DenyWrite = nonNil(s.Filesystem.DenyWrite)
	return s, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (c *checker) network(n *node, path string, nw *Network) error {
	members, err := c.object(n, path)
	if err != nil {
		return err
	}
	var reasons *member
	for i, m := range members {
		p := joinKey(path, m.name)
		switch m.name {
		case "allowedDomains":
			nw.AllowedDomains, err = c.domains(m.val, p, false)
		case "deniedDomains":
			nw.DeniedDomains, err = c.domains(m.val, p, true)
		case "deniedDomainReasons":
			reasons = &members[i] // checked once deniedDomains is known
		case "allowlistDenyReason":
			nw.AllowlistDenyReason, err = c.str(m.val, p, true)
		case "strictAllowlist":
			nw.StrictAllowlist, err = c.boolean(m.val, p)
		case "deniedResolvedAddresses":
			nw.DeniedResolvedAddresses, err = c.addresses(m.val, p)
		case "allowUnixSockets":
			nw.AllowUnixSockets, err = c.strList(m.val, p, "socket paths")
		case "allowAllUnixSockets":
			nw.AllowAllUnixSockets, err = c.boolean(m.val, p)
		case "allowLocalBinding":
			nw.AllowLocalBinding, err = c.boolean(m.val, p)
		case "allowMachLookup":
			nw.AllowMachLookup, err = c.strList(m.val, p, "service names")
		case "httpProxyPort":
			nw.HTTPProxyPort, err = c.integer(m.val, p, 1, 65535)
		case "socksProxyPort":
			nw.SOCKSProxyPort, err = c.integer(m.val, p, 1, 65535)
		case "parentProxy":
			nw.ParentProxy, err = c.parentProxy(m.val, p)
		case "tlsTerminate":
			nw.TLSTerminate, err = c.tlsTerminate(m.val, p)
		case "requireHostMatch":
			if m.val.kind != 'n' {
				var b bool
				b, err = c.boolean(m.val, p)
				nw.RequireHostMatch = &b
			}
		case "httpRules":
			nw.HTTPRules, err = c.httpRules(m.val, p)
		case "refuseOpaqueTunnels":
			nw.RefuseOpaqueTunnels, err = c.boolean(m.val, p)
			nw.RefuseOpaqueTunnelsSet = m.val.kind != 'n'
		case "ambiguousRequestTarget":
			nw.AmbiguousRequestTarget, err = c.oneOf(m.val, p, ambiguousTargetValues)
		case "stripResponseHeaders":
			nw.StripResponseHeaders, err = c.headerNames(m.val, p)
		case "mitmProxy":
			nw.MITMProxy, err = c.mitmProxy(m.val, p)
		case "filterRequest", "allowPlaintextHeaderSet":
			err = c.unsupported(m, path)
		default:
			err = c.unknown(m, path, networkKeys)
		}
		if err != nil {
			return err
		}
	}
	if reasons != nil {
		nw.DeniedDomainReasons, err = c.denyReasons(reasons.val, joinKey(path, reasons.name), nw.DeniedDomains, joinKey(path, "deniedDomains"))
		if err != nil {
			return err
		}
	}
	if err := c.mitmUnixSockets(n, path, nw); err != nil {
		return err
	}
	return c.checkFilterPorts(n, path, nw)
}

// domains checks allowedDomains or deniedDomains entries with the
// netrule grammar.
func (c *checker) domains(n *node, path string, deny bool) ([]string, error) {
	list, err := c.strList(n, path, "domain patterns")
	if err != nil {
		return nil, err
	}
	for i, d := range list {
		if _, err := netrule.ParsePattern(d, deny); err != nil {
			return nil, c.errorAt(n.elems[i].off, joinIndex(path, i), err, "%v", err)
		}
	}
	return list, nil
}

// denyReasons checks that every key of deniedDomainReasons is an exact
// deniedDomains entry: a reason for an entry that does not exist is almost
// always a typo in one of the two.
func (c *checker) denyReasons(n *node, path string, denied []string, deniedPath string) (map[string]string, error) {
	members, err := c.object(n, path)
	if err != nil || members == nil {
		return nil, err
	}
	out := make(map[string]string, len(members))
	for _, m := range members {
		p := joinKey(path, m.name)
		found := false
		for _, d := range denied {
			found = found || d == m.name
		}
		if !found {
			return nil, c.errorAt(m.keyOff, p, nil, "%q is not an entry of %s", m.name, deniedPath)
		}
		if out[m.name], err = c.str(m.val, p, false); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// addresses checks deniedResolvedAddresses: IP addresses or CIDR
// prefixes, IPv6 without brackets.
func (c *checker) addresses(n *node, path string) ([]string, error) {
	list, err := c.strList(n, path, "IP addresses or CIDR prefixes")
	if err != nil {
		return nil, err
	}
	for i, a := range list {
		_, aerr := netip.ParseAddr(a)
		if _, perr := netip.ParsePrefix(a); aerr != nil && perr != nil {
			return nil, c.errorAt(n.elems[i].off, joinIndex(path, i), nil, "%q is not an IP address or CIDR prefix", a)
		}
	}
	return list, nil
}

func (c *checker) filesystem(n *node, path string, fsys *Filesystem) error {
	members, err := c.object(n, path)
	if err != nil {
		return err
	}
	for _, m := range members {
		p := joinKey(path, m.name)
		switch m.name {
		case "denyRead":
			fsys.DenyRead, err = c.pathList(m.val, p, true)
		case "allowRead":
			fsys.AllowRead, err = c.pathList(m.val, p, false)
		case "allowWrite":
			fsys.AllowWrite, err = c.pathList(m.val, p, false)
		case "denyWrite":
			fsys.DenyWrite, err = c.pathList(m.val, p, true)
		case "allowGitConfig":
			fsys.AllowGitConfig, err = c.boolean(m.val, p)
		case "disabled":
			fsys.Disabled, err = c.boolean(m.val, p)
		case "enforceNamesAtCreation":
			// null is absent (on where the host can), as for every
			// other key: never an explicit false that turns it off.
			if m.val.kind != 'n' {
				var b bool
				b, err = c.boolean(m.val, p)
				fsys.EnforceNamesAtCreation = &b
			}
		default:
			err = c.unknown(m, path, filesystemKeys)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// pathList checks a list of PathEntry. deny marks denyRead and denyWrite,
// where a glob ending in "/" is rejected.
func (c *checker) pathList(n *node, path string, deny bool) ([]PathEntry, error) {
	elems, err := c.array(n, path, "paths")
	if err != nil || elems == nil {
		return nil, err
	}
	out := make([]PathEntry, 0, len(elems))
	for i, e := range elems {
		pe, err := c.pathEntry(e, joinIndex(path, i), deny)
		if err != nil {
			return nil, err
		}
		out = append(out, pe)
	}
	return out, nil
}

func (c *checker) pathEntry(n *node, path string, deny bool) (PathEntry, error) {
	var pe PathEntry
	val, valPath := n, path
	switch n.kind {
	case '"':
		pe.Path = n.str
	case '{':
		val = nil
		for _, m := range n.members {
			p := joinKey(path, m.name)
			var err error
			switch m.name {
			case "path":
				val, valPath = m.val, p
				pe.Path, err = c.str(m.val, p, false)
			case "literal":
				pe.Literal, err = c.boolean(m.val, p)
			default:
				err = c.unknown(m, path, pathEntryKeys)
			}
			if err != nil {
				return pe, err
			}
		}
		if val == nil {
			return pe, c.errorAt(n.off, path, nil, `missing key "path"`)
		}
	default:
		return pe, c.errorAt(n.off, path, nil, `expected a path (a string or {"path": ..., "literal": true}), got %s`, kindName(n.kind))
	}
	switch {
	case pe.Path == "":
		return pe, c.errorAt(val.off, valPath, nil, "path cannot be empty")
	case strings.IndexByte(pe.Path, 0) >= 0:
		return pe, c.errorAt(val.off, valPath, nil, "path contains a NUL byte")
	case strings.ContainsFunc(pe.Path, unicode.IsControl):
		return pe, c.errorAt(val.off, valPath, nil, "path contains a control character (a newline?); a rule on a name that does not exist would protect nothing")
	case strings.HasPrefix(pe.Path, "~") && pe.Path != "~" && !strings.HasPrefix(pe.Path, "~/"):
		return pe, c.errorAt(val.off, valPath, nil, "%q: only \"~\" and \"~/...\" are expanded (not ~user); write the absolute path", pe.Path)
	case deny && !pe.Literal && strings.ContainsAny(pe.Path, "*?[{") && strings.HasSuffix(pe.Path, "/"):
		return pe, c.errorAt(val.off, valPath, nil, "a deny glob ending in \"/\" can never match; remove the trailing \"/\"")
	case !pe.Literal && strings.ContainsAny(pe.Path, "*?[{") && !doublestar.ValidatePattern(pe.Path):
		return pe, c.errorAt(val.off, valPath, nil, "%q is not a valid glob (an unclosed [ or {?); use {\"path\": ..., \"literal\": true} for a name with these characters", pe.Path)
	}
	return pe, nil
}

// ignoreViolations checks the {commandPattern: [substring, ...]} map.
func (c *checker) ignoreViolations(n *node, path string) (map[string][]string, error) {
	members, err := c.object(n, path)
	if err != nil || members == nil {
		return nil, err
	}
	out := make(map[string][]string, len(members))
	for _, m := range members {
		if out[m.name], err = c.strList(m.val, joinKey(path, m.name), "strings"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c *checker) git(n *node, path string, g *Git) error {
	members, err := c.object(n, path)
	if err != nil {
		return err
	}
	for _, m := range members {
		p := joinKey(path, m.name)
		switch m.name {
		case "safeDirectories":
			g.SafeDirectories, err = c.strList(m.val, p, "strings")
		default:
			err = c.unknown(m, path, gitKeys)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
