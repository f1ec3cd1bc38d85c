package netrule

import (
	"net/netip"
	"slices"
)

// Host loopback entries (issue 17, "Allow-listed host loopback ports just
// work"): a sandbox has a loopback of its own, so an allowedDomains entry
// naming a port of the host's loopback is served on the sandbox's
// loopback at the same address and port and relayed to the host's. These
// are the entries that count, and the rule each relayed connection is
// judged by.

// Loopback addresses a "localhost" entry stands for: what the name
// resolves to on a usual host (/etc/hosts), and the two addresses the
// sandbox's loopback always has.
var (
	loopback4 = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	loopback6 = netip.IPv6Loopback()
)

// LoopbackPorts returns the sandbox loopback addresses to serve for the
// allowedDomains entries that name a port of this host's loopback, sorted
// and without duplicates:
//
//	localhost:PORT            127.0.0.1:PORT and [::1]:PORT
//	127.0.0.1:PORT, 127.1:PORT  that IPv4 loopback address (any of 127/8)
//	[::1]:PORT                [::1]:PORT
//
// An entry without a port names no port and opens none ("localhost"
// alone would be every port); a wildcard ("*.dev.localhost:3000") names no
// address; with Rules.AllowAll nothing opens either, since it never names
// a port. An address LoopbackTargets refuses (a deniedDomains entry, a
// deniedResolvedAddresses prefix) is left out, and so is one whose port
// is in skip (the sandbox's own proxy ports, which are taken).
func (p *Policy) LoopbackPorts(skip ...int) []netip.AddrPort {
	if p == nil {
		return nil
	}
	var out []netip.AddrPort
	for _, pat := range p.allow {
		if pat.Port == 0 || slices.Contains(skip, pat.Port) {
			continue
		}
		var addrs []netip.Addr
		switch {
		case pat.Kind == KindHost && pat.Host == "localhost":
			addrs = []netip.Addr{loopback4, loopback6}
		case pat.Kind == KindIP && (pat.IP.Is4() && pat.IP.IsLoopback() || pat.IP == loopback6):
			addrs = []netip.Addr{pat.IP}
		}
		for _, a := range addrs {
			ap := netip.AddrPortFrom(a, uint16(pat.Port))
			if targets, _ := p.LoopbackTargets(ap); len(targets) > 0 && !slices.Contains(out, ap) {
				out = append(out, ap)
			}
		}
	}
	slices.SortFunc(out, func(a, b netip.AddrPort) int { return a.Compare(b) })
	return out
}

// LoopbackTargets judges a connection to the sandbox's loopback address
// ap, which the host side relays to this host's loopback. It returns the
// host addresses it may be relayed to, in the order to try them, or none
// and the Decision that refused it:
//
//   - ap itself when Decide allows ap's address as an IP literal (an
//     allowedDomains "127.0.0.1:PORT" or "[::1]:PORT"), as the proxies
//     dial an allowed literal;
//   - when ap is 127.0.0.1 or [::1] and Decide allows "localhost" at its
//     port, ap and then the other one, each passing CheckResolved as an
//     address "localhost" resolved to, as the proxies dial an allowed
//     name: a client that reaches the sandbox's [::1] reaches a host
//     server that listens on 127.0.0.1 only, and the other way round.
//
// Decide's order holds: a deniedDomains entry that matches refuses.
// Every target must still pass the caller's own guard (srtd's addresses)
// before it is dialled.
func (p *Policy) LoopbackTargets(ap netip.AddrPort) ([]netip.AddrPort, Decision) {
	port := int(ap.Port())
	addr := ap.Addr().Unmap()
	d := p.Decide(addr.String(), port)
	var out []netip.AddrPort
	if d.Allowed {
		out = append(out, netip.AddrPortFrom(addr, ap.Port()))
	}
	if addr != loopback4 && addr != loopback6 {
		return out, d
	}
	nd := p.Decide("localhost", port)
	if !nd.Allowed {
		if len(out) == 0 && d.Rule == "" {
			d = nd // a deny entry naming "localhost" says more than "not allowed"
		}
		return out, d
	}
	other := loopback6
	if addr == loopback6 {
		other = loopback4
	}
	var refused *Decision
	for _, a := range []netip.Addr{addr, other} {
		t := netip.AddrPortFrom(a, ap.Port())
		if slices.Contains(out, t) {
			continue
		}
		if rd := p.CheckResolved("localhost", port, a, nil); rd.Allowed {
			out = append(out, t)
		} else if refused == nil {
			refused = &rd
		}
	}
	if len(out) == 0 && refused != nil {
		return nil, *refused // the first refusal, as the proxies report
	}
	return out, nd
}
