package policy

import (
	"fmt"

	"github.com/srt-go/srt/netrule"
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
// name the bad entry (netrule.EntryError) under "network.".
func NetworkOf(s *settings.Settings) (Network, error) {
	if s == nil {
		s = settings.Default()
	}
	rules, err := netrule.Compile(NetworkRules(s.Network))
	if err != nil {
		return Network{}, fmt.Errorf("network: %w", err)
	}
	n := s.Network
	return Network{Rules: rules, HTTPProxyPort: n.HTTPProxyPort, SOCKSProxyPort: n.SOCKSProxyPort,
		AllowUnixSockets: n.AllowUnixSockets, AllowAllUnixSockets: n.AllowAllUnixSockets,
		AllowLocalBinding: n.AllowLocalBinding, AllowMachLookup: n.AllowMachLookup}, nil
}

// ProcessOf is the process half of s (nil: the defaults).
func ProcessOf(s *settings.Settings) Process {
	if s == nil {
		s = settings.Default()
	}
	return Process{AllowNestedUserNamespaces: s.AllowNestedUserNamespaces, AllowPty: s.AllowPty,
		AllowAppleEvents: s.AllowAppleEvents, EnableWeakerNetworkIsolation: s.EnableWeakerNetworkIsolation}
}
