package policy

import (
	"fmt"
	"strings"

	"github.com/srt-go/srt/credential"
	"github.com/srt-go/srt/netrule"
	"github.com/srt-go/srt/settings"
)

// injectHosts compiles a masked entry's injectHosts (nil: the network's
// allowedDomains) into the matcher of where its real value may be sent:
// netrule.ParsePattern and Pattern.Match on the canonical host, as
// excludeOf. Each explicit pattern must be reachable (covered by an
// allowedDomains pattern, not by a deniedDomains one) and, when srt
// terminates TLS, not covered by excludeDomains (such tunnels are never
// opened, so nothing is injected): a host the entry names but the real
// value can never reach is a mistake in the settings. Errors are
// *KeyError at credentials.…[i].injectHosts[j].
func injectHosts(key string, list []string, sn settings.Network, nw Network) (credential.HostMatcher, error) {
	explicit := list != nil
	if !explicit {
		list = sn.AllowedDomains
	}
	parse := func(l []string, deny bool) []netrule.Pattern {
		var out []netrule.Pattern
		for _, e := range l {
			if p, err := netrule.ParsePattern(e, deny); err == nil {
				out = append(out, p)
			}
		}
		return out
	}
	allowed, denied := parse(sn.AllowedDomains, false), parse(sn.DeniedDomains, true)
	var excluded []netrule.Pattern
	if sn.TLSTerminate != nil && nw.TLS != nil {
		excluded = parse(sn.TLSTerminate.ExcludeDomains, false)
	}
	pats := make([]netrule.Pattern, 0, len(list))
	for j, e := range list {
		at := fmt.Sprintf("%s.injectHosts[%d]", key, j)
		p, err := netrule.ParsePattern(e, false)
		if err != nil {
			return nil, &KeyError{at, err}
		}
		if explicit {
			reach := sn.AllowAllDomains
			for _, a := range allowed {
				// Reachable at some port is reachable: "api.example"
				// under an "api.example:443" entry.
				q := p
				if q.Port == 0 {
					q.Port = a.Port
				}
				reach = reach || covers(a, q)
			}
			switch {
			case !reach:
				return nil, &KeyError{at, fmt.Errorf("%q is not reachable: no network.allowedDomains entry covers it, so the real value could never be sent there", e)}
			case anyCovers(denied, p) != "":
				return nil, &KeyError{at, fmt.Errorf("%q is denied by network.deniedDomains entry %q, so the real value could never be sent there", e, anyCovers(denied, p))}
			case anyCovers(excluded, p) != "":
				return nil, &KeyError{at, fmt.Errorf("%q is in network.tlsTerminate.excludeDomains (%q): srt does not see into those tunnels, so it cannot inject there", e, anyCovers(excluded, p))}
			}
		}
		if !explicit && (anyCovers(denied, p) != "" || anyCovers(excluded, p) != "") {
			continue // the default: only the allowed hosts srt can inject at
		}
		pats = append(pats, p)
	}
	if !explicit && len(pats) == 0 {
		// The default reaches nowhere: no allowed host, or each one denied
		// or excluded from termination. The value could never be
		// injected, which is a mistake in the settings, as for an
		// explicit entry.
		return nil, &KeyError{key, fmt.Errorf("a masked value must be able to reach a host: no network.allowedDomains entry can carry it (none, or each is denied or in network.tlsTerminate.excludeDomains); allow a host and name it in injectHosts, or use mode \"deny\": %w", ErrUnenforceable)}
	}
	return matchAny(pats), nil
}

// anyCovers returns the Raw of the first of list covering p, or "".
func anyCovers(list []netrule.Pattern, p netrule.Pattern) string {
	for _, a := range list {
		if covers(a, p) {
			return a.Raw
		}
	}
	return ""
}

// covers reports whether every destination p matches is matched by a:
// the same port or a for any port, and p's hosts equal to or below a's.
func covers(a, p netrule.Pattern) bool {
	if a.Port != 0 && a.Port != p.Port {
		return false
	}
	switch p.Kind {
	case netrule.KindHost, netrule.KindIP:
		return a.Match(p.Host, p.IP, a.Port)
	case netrule.KindSubdomains, netrule.KindLabel:
		switch a.Kind {
		case netrule.KindAny:
			return true
		case netrule.KindSubdomains:
			// "*.a.example" is below "*.example"; a label pattern is when
			// its wildcard lies in the part below a's base.
			return (p.Kind == netrule.KindSubdomains && p.Host == a.Host) || strings.HasSuffix(p.Host, "."+a.Host)
		}
		return a.Kind == p.Kind && a.Host == p.Host
	}
	return a.Kind == netrule.KindAny
}

// maskedTunnels applies what masked credentials demand of the network
// (issue 18): an inject host may store the real value and serve it back,
// and only what srt reads in cleartext (plain HTTP, terminated TLS) is
// scrubbed of real values on its way back; so the tunnels srt cannot see
// into (SOCKS5, CONNECTs it does not terminate, excludeDomains, relayed
// loopback ports) are refused, unless the settings say
// "refuseOpaqueTunnels": false, accepting that. A user-run proxy
// (httpProxyPort, socksProxyPort) takes the traffic past srt's proxies,
// which inject and scrub: refused with masking (*KeyError).
func (nw *Network) maskedTunnels(sn settings.Network) error {
	if nw.Credentials.Len() == 0 {
		return nil
	}
	switch {
	case sn.HTTPProxyPort != 0:
		return &KeyError{"network.httpProxyPort", fmt.Errorf("cannot be used with masked credentials: traffic through your own proxy does not pass srt's, which inject and scrub the real values: %w", ErrUnenforceable)}
	case sn.SOCKSProxyPort != 0:
		return &KeyError{"network.socksProxyPort", fmt.Errorf("cannot be used with masked credentials: traffic through your own proxy does not pass srt's, which inject and scrub the real values: %w", ErrUnenforceable)}
	}
	if !sn.RefuseOpaqueTunnelsSet {
		nw.Filter.RefuseOpaqueTunnels = true
	}
	return nil
}

// matchAny reports whether a destination (host as the proxy names it,
// canonicalised by netrule.CanonicalHost) matches one of pats; a host
// that does not canonicalise matches none. The one matcher of the
// domain patterns policy compiles for the proxy (injectHosts,
// excludeDomains), so a pattern means what it means in allowedDomains.
func matchAny(pats []netrule.Pattern) func(host string, port int) bool {
	return func(host string, port int) bool {
		canon, ip, err := netrule.CanonicalHost(host)
		if err != nil {
			return false
		}
		for _, p := range pats {
			if p.Match(canon, ip, port) {
				return true
			}
		}
		return false
	}
}
