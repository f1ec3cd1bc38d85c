package settings

import (
	"path/filepath"
	"strings"
)

// TLSTerminate is the "network.tlsTerminate" object (reference 0.0.83
// "tlsTerminate"; seed 003 "Terminaison TLS"; issue 17): when present,
// srt's HTTP proxy terminates TLS in allowed CONNECT tunnels and the
// sandbox is pointed at a trust bundle holding the proxy's CA. As in the
// reference the key takes an object only; {} turns termination on with
// every default (an ephemeral CA made for the run).
type TLSTerminate struct {
	// ExcludeDomains are domain patterns (the allowedDomains grammar,
	// netrule.ParsePattern) whose CONNECTs are tunnelled opaquely: the
	// client inside does its own TLS with the upstream (mTLS, pinning).
	ExcludeDomains []string `json:"excludeDomains,omitempty"`
	// ExtraCACertPaths are PEM files (absolute, or "~/…") whose
	// CERTIFICATE blocks are appended to the sandbox's trust bundle and
	// trusted for the proxy's own upstream connections. A missing or
	// unreadable file is skipped, as in the reference.
	ExtraCACertPaths []string `json:"extraCaCertPaths,omitempty"`
	// CACertPath and CAKeyPath are the operator's CA (absolute, or
	// "~/…"); both or neither. Neither: an ephemeral CA per run. The key
	// is read-denied inside the sandbox (policy.Compile).
	CACertPath string `json:"caCertPath,omitempty"`
	CAKeyPath  string `json:"caKeyPath,omitempty"`
	// MaxTunnels bounds the tunnels terminated at once, 1..65536; 0
	// (absent) means the proxy's default, 256.
	MaxTunnels int `json:"maxTunnels,omitempty"`
	// HandshakeTimeoutMs bounds, in milliseconds, the time from a CONNECT
	// to the end of the client's TLS handshake, 100..600000; 0 (absent)
	// means the proxy's default, 10000.
	HandshakeTimeoutMs int `json:"handshakeTimeoutMs,omitempty"`
}

// tlsTerminate checks the network.tlsTerminate object. null means absent
// (nil); anything but an object, true included, is an error: the
// reference takes an object only, and {} is the short form.
func (c *checker) tlsTerminate(n *node, path string) (*TLSTerminate, error) {
	if n.kind == 'n' {
		return nil, nil
	}
	if n.kind != '{' {
		return nil, c.errorAt(n.off, path, nil, "expected an object ({} for the defaults), got %s", kindName(n.kind))
	}
	t := &TLSTerminate{}
	var certOff, keyOff int64
	for _, m := range n.members {
		p := joinKey(path, m.name)
		var err error
		switch m.name {
		case "excludeDomains":
			t.ExcludeDomains, err = c.domains(m.val, p, false)
		case "extraCaCertPaths":
			t.ExtraCACertPaths, err = c.strList(m.val, p, "paths")
			for i, e := range t.ExtraCACertPaths {
				if err == nil && !hostPath(e) {
					err = c.errorAt(m.val.elems[i].off, joinIndex(p, i), nil, "%q must be an absolute path or start with ~/", e)
				}
			}
		case "caCertPath", "caKeyPath":
			var v string
			if v, err = c.str(m.val, p, true); err == nil && m.val.kind != 'n' && !hostPath(v) {
				err = c.errorAt(m.val.off, p, nil, "%q must be an absolute path or start with ~/", v)
			}
			if m.name == "caCertPath" {
				t.CACertPath, certOff = v, m.keyOff
			} else {
				t.CAKeyPath, keyOff = v, m.keyOff
			}
		case "maxTunnels":
			t.MaxTunnels, err = c.integer(m.val, p, 1, 65536)
		case "handshakeTimeoutMs":
			t.HandshakeTimeoutMs, err = c.integer(m.val, p, 100, 600000)
		default:
			err = c.unknown(m, path, tlsTerminateKeys)
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case t.CACertPath != "" && t.CAKeyPath == "":
		return nil, c.errorAt(certOff, joinKey(path, "caCertPath"), nil, "caCertPath needs caKeyPath (give both, or neither for an ephemeral CA)")
	case t.CAKeyPath != "" && t.CACertPath == "":
		return nil, c.errorAt(keyOff, joinKey(path, "caKeyPath"), nil, "caKeyPath needs caCertPath (give both, or neither for an ephemeral CA)")
	}
	return t, nil
}

// hostPath reports whether p is a path srt can read without guessing a
// base: absolute, or below the home directory ("~/…"). A relative path
// would depend on where srt was started from.
func hostPath(p string) bool {
	return p != "" && (filepath.IsAbs(p) || strings.HasPrefix(p, "~/"))
}
