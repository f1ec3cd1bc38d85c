package policy

import (
	"context"
	"fmt"
	"github.com/srt-go/srt/credential"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/srt-go/srt/netrule"
	"github.com/srt-go/srt/proxy"
	"github.com/srt-go/srt/settings"
)

// Network is the network half of the policy: what the proxies outside the
// sandbox let through and what the sandbox may reach without them
// (settings' "network" object, seed 001).
type Network struct {
	// Rules judges every destination the proxies see (Decide, then
	// CheckResolved on each address a name resolves to). Compiled once,
	// from allowedDomains, deniedDomains, deniedDomainReasons,
	// allowlistDenyReason and deniedResolvedAddresses. Never nil in a
	// compiled Policy.
	Rules *netrule.Policy
	// HTTPProxyPort and SOCKSProxyPort are the user's own proxies on the
	// host's loopback that the sandbox's proxy ports forward to instead of
	// srt's; 0 means srt's.
	HTTPProxyPort, SOCKSProxyPort int
	// MaxConns bounds the client connections srt's proxies serve at once
	// for this sandbox (proxy.Config.MaxConns); 0 means
	// proxy.DefaultMaxConns. No settings key sets it: srtd does, per
	// session (--max-conns-per-session).
	MaxConns int
	// AllowUnixSockets are the unix socket paths the sandbox may connect
	// to (macOS); AllowAllUnixSockets lifts the socket(AF_UNIX) refusal.
	AllowUnixSockets    []string
	AllowAllUnixSockets bool
	// AllowLocalBinding lets the sandbox listen on its loopback (macOS;
	// Linux's network namespace has its own loopback either way).
	AllowLocalBinding bool
	// AllowMachLookup are extra Mach services the sandbox may look up
	// (macOS), a trailing * matching a prefix.
	AllowMachLookup []string
	// Parent is the upstream proxy srt's proxies connect through
	// (proxy.Config.Parent), nil for none: settings'
	// network.parentProxy, each key it leaves out taken from srt's own
	// HTTP_PROXY / HTTPS_PROXY / NO_PROXY (either case, upper first), as
	// the reference 0.0.83 does. Read once, when the policy is compiled.
	// network.mitmProxy is its MITM route (Parent.WithMITM), which wins
	// over the parents for its domains.
	Parent *proxy.Parent
	// MITMSocket is network.mitmProxy.socketPath, "" without one:
	// Compile read-denies it inside the sandbox and refuses it inside a
	// write root (mitmSocketRules).
	MITMSocket string
	// TLS is network.tlsTerminate compiled (tlsterminate.go), nil when
	// srt's proxy does not terminate TLS.
	TLS *TLS
	// Filter is request filtering (proxy.Config's Filtering): settings'
	// network.httpRules, refuseOpaqueTunnels, ambiguousRequestTarget and
	// stripResponseHeaders (policy/filter.go).
	Filter proxy.Filtering
	// Credentials are the masked secrets (settings' credentials,
	// policy/credentials.go): the proxy's substitutions
	// (proxy.Config.Credentials) and the sandbox's environment
	// (credential.Set.Environ, applied by every runtime). Nil for none.
	Credentials *credential.Set
}

// Process are the rules about what the sandboxed processes may do
// besides files and network (settings' top-level switches).
type Process struct {
	// AllowNestedUserNamespaces lets the command make user namespaces of
	// its own (Linux: no --disable-userns, unshare allowed by seccomp).
	AllowNestedUserNamespaces bool
	// AllowPty lets the command open pseudo-terminals (macOS).
	AllowPty bool
	// AllowAppleEvents and EnableWeakerNetworkIsolation open the Mach
	// services they name (macOS): Apple Events, trustd.
	AllowAppleEvents, EnableWeakerNetworkIsolation bool
}

// NetworkRules are the netrule inputs of a settings value's network
// object.
func NetworkRules(n settings.Network) netrule.Rules {
	return netrule.Rules{
		Allowed:             n.AllowedDomains,
		Denied:              n.DeniedDomains,
		DeniedReasons:       n.DeniedDomainReasons,
		AllowlistDenyReason: n.AllowlistDenyReason,
		DeniedAddresses:     n.DeniedResolvedAddresses,
		AllowAll:            n.AllowAllDomains,
	}
}

// NetworkOf compiles the network half of s (nil: the defaults). Errors
// name the bad entry (netrule.EntryError) under "network.". "~/" in
// network.tlsTerminate's paths is the user's home directory.
func NetworkOf(s *settings.Settings) (Network, error) {
	home, _ := os.UserHomeDir()
	return networkOf(s, home)
}

// networkOf is NetworkOf with the home directory given.
func networkOf(s *settings.Settings, home string) (Network, error) {
	if s == nil {
		s = settings.Default()
	}
	rules, err := netrule.Compile(NetworkRules(s.Network))
	if err != nil {
		return Network{}, fmt.Errorf("network: %w", err)
	}
	n := s.Network
	parent, err := parentProxy(n.ParentProxy, os.Getenv)
	if err != nil {
		return Network{}, err
	}
	mitm, err := mitmOf(n.MITMProxy)
	if err != nil {
		return Network{}, err
	}
	parent = parent.WithMITM(mitm)
	tls, err := tlsOf(n, home)
	if err != nil {
		return Network{}, err
	}
	filter, err := filterOf(n)
	if err != nil {
		return Network{}, err
	}
	return Network{Rules: rules, HTTPProxyPort: n.HTTPProxyPort, SOCKSProxyPort: n.SOCKSProxyPort,
		AllowUnixSockets: n.AllowUnixSockets, AllowAllUnixSockets: n.AllowAllUnixSockets,
		AllowLocalBinding: n.AllowLocalBinding, AllowMachLookup: n.AllowMachLookup, Parent: parent, TLS: tls, Filter: filter,
		MITMSocket: mitmSocket(n.MITMProxy)}, nil
}

// parentProxy compiles network.parentProxy, each of its keys absent
// (or nil pp) taking the proxy variable of getenv instead. An empty value
// counts as unset. A URL that does not pass settings.ParseProxyURL is an
// *EnvError naming the variable (a *KeyError for a settings key, which
// settings has checked already when it read a file): srt would otherwise
// try to reach the network directly where the operator said it cannot.
func parentProxy(pp *settings.ParentProxy, getenv func(string) string) (*proxy.Parent, error) {
	// env is set for a value from getenv, whose error is an *EnvError
	// rather than a *KeyError of the settings file.
	type src struct {
		name, val string
		env       bool
	}
	first := func(names ...string) src {
		for _, n := range names {
			if v := getenv(n); v != "" {
				return src{n, v, true}
			}
		}
		return src{}
	}
	// Key by key, as the reference does: a key the object leaves out
	// still comes from the environment.
	h, hs, np := first("HTTP_PROXY", "http_proxy"), first("HTTPS_PROXY", "https_proxy"), first("NO_PROXY", "no_proxy")
	if pp != nil && pp.HTTP != "" {
		h = src{"network.parentProxy.http", pp.HTTP, false}
	}
	if pp != nil && pp.HTTPS != "" {
		hs = src{"network.parentProxy.https", pp.HTTPS, false}
	}
	if pp != nil && pp.NoProxy != "" {
		np = src{"network.parentProxy.noProxy", pp.NoProxy, false}
	}
	parse := func(s src) (*url.URL, error) {
		if s.val == "" {
			return nil, nil
		}
		u, err := settings.ParseProxyURL(s.val)
		if err != nil && s.env {
			return nil, &EnvError{s.name, err}
		}
		if err != nil {
			return nil, &KeyError{s.name, err}
		}
		return u, nil
	}
	hu, err := parse(h)
	if err != nil {
		return nil, err
	}
	hsu, err := parse(hs)
	if err != nil {
		return nil, err
	}
	p := proxy.NewParent(hu, hsu, np.val)
	// The parent's addresses are refused to the sandbox (Parent.Forbidden);
	// a name is looked up now, bounded, and its failure is not an error:
	// the proxies learn the addresses they dial it at too.
	ctx, cancel := context.WithTimeout(context.Background(), parentResolveTimeout)
	defer cancel()
	p.Resolve(ctx, net.DefaultResolver)
	return p, nil
}

// parentResolveTimeout bounds the parent proxy's name lookup when the
// policy is compiled.
const parentResolveTimeout = 3 * time.Second

// mitmOf compiles network.mitmProxy (nil: none) into the proxies' MITM
// route. Its domains use the allowedDomains grammar and matcher
// (netrule.ParsePattern, Pattern.Match), as excludeDomains does.
func mitmOf(m *settings.MITMProxy) (*proxy.MITMProxy, error) {
	if m == nil {
		return nil, nil
	}
	pats := make([]netrule.Pattern, len(m.Domains))
	for i, e := range m.Domains {
		p, err := netrule.ParsePattern(e, false)
		if err != nil {
			return nil, &KeyError{fmt.Sprintf("network.mitmProxy.domains[%d]", i), err}
		}
		pats[i] = p
	}
	match := func(host string, port int) bool {
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
	return &proxy.MITMProxy{SocketPath: m.SocketPath, Match: match}, nil
}

func mitmSocket(m *settings.MITMProxy) string {
	if m == nil {
		return ""
	}
	return m.SocketPath
}

// ruleMITMSocket is the Rule of the read-deny of the MITM proxy's socket.
const ruleMITMSocket = "mandatory: network.mitmProxy.socketPath"

// mitmSocketRules checks network.mitmProxy's socket against p, whose
// write roots are final. Compile has read-denied the socket (the sandbox
// connecting to it itself would be srt's trusted client, past its rules;
// socket(AF_UNIX) is refused by seccomp as well, and allowAllUnixSockets
// was refused beside mitmProxy by settings), and its directory must lie
// outside every write root, as spelled and resolved, else the sandbox,
// which runs as srt's user, could put a link or another of that user's
// sockets at the path between runs (ErrUnenforceable). With
// filesystem.disabled everything srt's user owns is writable, so the
// combination is refused.
func (p *Policy) mitmSocketRules() error {
	sock := p.Network.MITMSocket
	if sock == "" {
		return nil
	}
	if p.FilesystemDisabled {
		return &KeyError{"network.mitmProxy.socketPath", fmt.Errorf("with filesystem.disabled the sandbox could replace the MITM proxy's socket %s: %w", sock, ErrUnenforceable)}
	}
	dir := filepath.Dir(sock)
	for _, d := range []string{dir, Resolve(dir)} {
		if i := longestPrefix(p.AllowWrite, d); i >= 0 {
			return &KeyError{"network.mitmProxy.socketPath", fmt.Errorf("%s lies in a write root; the sandbox could replace the socket between runs; move the socket elsewhere: %w", sock, ErrUnenforceable)}
		}
	}
	return nil
}

// ProcessOf is the process half of s (nil: the defaults).
func ProcessOf(s *settings.Settings) Process {
	if s == nil {
		s = settings.Default()
	}
	return Process{AllowNestedUserNamespaces: s.AllowNestedUserNamespaces, AllowPty: s.AllowPty,
		AllowAppleEvents: s.AllowAppleEvents, EnableWeakerNetworkIsolation: s.EnableWeakerNetworkIsolation}
}
