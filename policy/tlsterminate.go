package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/srt-go/srt/mitm"
	"github.com/srt-go/srt/netrule"
	"github.com/srt-go/srt/proxy"
	"github.com/srt-go/srt/settings"
)

// TLS is the compiled network.tlsTerminate (seed 003 "Terminaison TLS";
// issue 17): what srt's HTTP proxy terminates with and what the sandbox
// is pointed at. Nil in Network means no termination.
type TLS struct {
	// Terminate is the proxy's configuration (proxy.Config.Terminate):
	// the CA, loaded from caCertPath/caKeyPath or made for this
	// compilation only (mitm.NewCA), excludeDomains, the upstream roots
	// (the host's system pool plus extraCaCertPaths), the limits and
	// requireHostMatch.
	Terminate *proxy.Terminate
	// Bundle is the PEM trust bundle shown read-only inside the sandbox
	// (mitm.TrustBundle): the CA, the host's roots, the extra CAs.
	Bundle []byte
	// TrustStore is Bundle as a PKCS#12 trust store for the JVM
	// (mitm.TrustStore), opened with mitm.TrustStorePassword.
	TrustStore []byte
	// CAKeyPath is the resolved caKeyPath, "" for an ephemeral CA:
	// Compile read-denies it inside the sandbox.
	CAKeyPath string
	// TrustFiles are the files srt reads its trust from at start
	// (caCertPath, caKeyPath and every extraCaCertPaths entry, present or
	// not, "~/" expanded): Compile write-denies them inside the sandbox
	// (and the host's roots, hostRootPaths, on every run),
	// so that no run can choose what a later run's proxy verifies
	// upstreams with or mints with, nor change a CA the host itself may
	// trust (the threat model: a run controls its write roots between
	// runs; a missing entry could otherwise be created).
	TrustFiles []string
}

// tlsOf compiles network.tlsTerminate (nil: no termination) with "~/"
// expanded against home. Errors about a key are *KeyError: a CA file srt
// cannot read, or a pair mitm.LoadCA refuses (no PEM block, not a CA,
// expired: caCertPath; a bad key or one that does not match the
// certificate: caKeyPath, as the *mitm.FileError tells).
func tlsOf(n settings.Network, home string) (*TLS, error) {
	t := n.TLSTerminate
	if t == nil {
		return nil, nil
	}
	expand := func(p string) string {
		if rest, ok := strings.CutPrefix(p, "~/"); ok && home != "" {
			return filepath.Join(home, rest)
		}
		return p
	}
	out := &TLS{}
	var ca *mitm.CA
	var err error
	if t.CACertPath != "" {
		cert, key := expand(t.CACertPath), expand(t.CAKeyPath)
		for _, f := range []struct{ key, path string }{{"caCertPath", cert}, {"caKeyPath", key}} {
			fh, err := os.Open(f.path)
			if err != nil {
				return nil, &KeyError{"network.tlsTerminate." + f.key, err}
			}
			fh.Close()
		}
		if ca, err = mitm.LoadCA(cert, key); err != nil {
			k := "network.tlsTerminate.caCertPath"
			if fe := (*mitm.FileError)(nil); errors.As(err, &fe) && fe.Key {
				k = "network.tlsTerminate.caKeyPath"
			}
			return nil, &KeyError{k, err}
		}
		out.CAKeyPath = key
		out.TrustFiles = append(out.TrustFiles, cert, key)
	} else if ca, err = mitm.NewCA(); err != nil {
		return nil, fmt.Errorf("network.tlsTerminate: ephemeral CA: %w", err)
	}
	extra := make([]string, len(t.ExtraCACertPaths))
	for i, p := range t.ExtraCACertPaths {
		extra[i] = expand(p)
	}
	out.TrustFiles = append(out.TrustFiles, extra...)
	roots, err := mitm.UpstreamRoots(extra)
	if err != nil {
		return nil, fmt.Errorf("network.tlsTerminate: %w", err)
	}
	if out.Bundle, err = mitm.TrustBundle(ca, extra); err != nil {
		return nil, fmt.Errorf("network.tlsTerminate: %w", err)
	}
	if out.TrustStore, err = mitm.TrustStore(out.Bundle); err != nil {
		return nil, fmt.Errorf("network.tlsTerminate: %w", err)
	}
	exclude, err := excludeOf(t.ExcludeDomains)
	if err != nil {
		return nil, err
	}
	out.Terminate = &proxy.Terminate{CA: ca, Exclude: exclude, RootCAs: roots, MaxTunnels: t.MaxTunnels,
		HandshakeTimeout: time.Duration(t.HandshakeTimeoutMs) * time.Millisecond, AllowHostMismatch: !n.HostMatch()}
	return out, nil
}

// excludeOf is excludeDomains as proxy.Terminate.Exclude: the
// allowedDomains grammar and matcher (netrule.ParsePattern,
// Pattern.Match), so a pattern means the same in both lists. Nil for an
// empty list.
func excludeOf(list []string) (func(string, int) bool, error) {
	if len(list) == 0 {
		return nil, nil
	}
	pats := make([]netrule.Pattern, len(list))
	for i, e := range list {
		p, err := netrule.ParsePattern(e, false)
		if err != nil {
			return nil, &KeyError{fmt.Sprintf("network.tlsTerminate.excludeDomains[%d]", i), err}
		}
		pats[i] = p
	}
	// A host that does not canonicalise is not excluded: terminated, and
	// judged there.
	return matchAny(pats), nil
}

// hostRootPaths are the host's root certificate files and directories as
// srt's own environment names them (mitm.HostRootPaths: SSL_CERT_FILE,
// SSL_CERT_DIR, else Go's defaults), a relative one made absolute against
// srt's working directory, where Go's crypto/x509 reads it. srt verifies
// upstreams with them (a terminated tunnel's, an https:// parent proxy),
// so Compile write-denies them on every run: a run that could write one
// would choose what a later run's srt trusts.
func hostRootPaths() []string {
	var out []string
	for _, p := range mitm.HostRootPaths(os.Getenv) {
		if abs, err := filepath.Abs(p); err == nil {
			out = append(out, abs)
		}
	}
	return out
}
