package settings

import (
	"path/filepath"
)

// MITMProxy is the "network.mitmProxy" object (reference 0.0.83
// "mitmProxy"; issue 17): the connections to Domains that srt's rules
// allow are sent through an HTTP proxy listening on the unix socket
// SocketPath (mitmproxy, a corporate inspection proxy) instead of being
// dialled directly or through parentProxy. srt speaks HTTP proxy to it:
// CONNECT for tunnels and SOCKS5, absolute-URI requests for plain HTTP.
type MITMProxy struct {
	// SocketPath is the proxy's unix socket, absolute and clean (no "~",
	// no "." or ".." component). It need not exist when srt starts: a
	// missing or refusing socket fails the connection that needs it.
	SocketPath string `json:"socketPath"`
	// Domains are the patterns (the allowedDomains grammar,
	// netrule.ParsePattern) whose connections go through the proxy;
	// never empty.
	Domains []string `json:"domains"`
}

// mitmProxy checks the network.mitmProxy object. null means absent
// (nil); both keys are required. The combination with
// allowAllUnixSockets or an allowUnixSockets entry naming the socket is
// checked by mitmUnixSockets, once the whole network object is read.
func (c *checker) mitmProxy(n *node, path string) (*MITMProxy, error) {
	if n.kind == 'n' {
		return nil, nil
	}
	if n.kind != '{' {
		return nil, c.errorAt(n.off, path, nil, "expected an object {\"socketPath\": ..., \"domains\": [...]}, got %s", kindName(n.kind))
	}
	m := &MITMProxy{}
	var haveDomains bool
	for _, mem := range n.members {
		p := joinKey(path, mem.name)
		var err error
		switch mem.name {
		case "socketPath":
			var v string
			if v, err = c.str(mem.val, p, false); err == nil {
				switch {
				case !filepath.IsAbs(v):
					err = c.errorAt(mem.val.off, p, nil, "%q must be an absolute path", v)
				case filepath.Clean(v) != v:
					err = c.errorAt(mem.val.off, p, nil, "%q must be a clean path (no trailing slash, no . or .. component); did you mean %q?", v, filepath.Clean(v))
				}
			}
			m.SocketPath = v
		case "domains":
			if m.Domains, err = c.domains(mem.val, p, false); err == nil && len(m.Domains) == 0 {
				err = c.errorAt(mem.val.off, p, nil, "must list at least one domain pattern")
			}
			haveDomains = true
		default:
			err = c.unknown(mem, path, mitmProxyKeys)
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case m.SocketPath == "":
		return nil, c.errorAt(n.off, joinKey(path, "socketPath"), nil, "is required (the MITM proxy's unix socket, an absolute path)")
	case !haveDomains:
		return nil, c.errorAt(n.off, joinKey(path, "domains"), nil, "is required (the domain patterns sent through the MITM proxy)")
	}
	return m, nil
}

// mitmUnixSockets refuses network.mitmProxy together with a rule that
// lets the sandbox connect to its socket itself: allowAllUnixSockets (the
// socket(AF_UNIX) refusal lifted), or an allowUnixSockets entry that is
// the socket path. The sandbox would then talk to the MITM proxy past
// srt's rules, as srt's own trusted client.
func (c *checker) mitmUnixSockets(n *node, path string, nw *Network) error {
	if nw.MITMProxy == nil {
		return nil
	}
	if nw.AllowAllUnixSockets {
		return c.errorAt(n.off, joinKey(path, "mitmProxy"), nil,
			"cannot be combined with allowAllUnixSockets: the sandbox could connect to the MITM proxy's socket directly, past srt's rules")
	}
	for _, s := range nw.AllowUnixSockets {
		if filepath.Clean(s) == nw.MITMProxy.SocketPath {
			return c.errorAt(n.off, joinKey(path, "mitmProxy"), nil,
				"its socketPath %q is listed in allowUnixSockets: the sandbox could connect to the MITM proxy directly, past srt's rules", s)
		}
	}
	return nil
}
