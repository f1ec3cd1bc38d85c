package netrule

import (
	"net/netip"
	"strings"
)

// An addrClass is a range of addresses that an allowed host name must not
// resolve to (escape-classes.md item 9, DNS rebinding and SSRF;
// srt-notes §4.9 "Resolved-address guard").
type addrClass struct {
	name     string // completes "resolved to a ... address"
	prefixes []netip.Prefix
}

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// guardedClasses in the order they are reported. Sources: RFC 6890
// (special-purpose registries), RFC 1918 (private IPv4), RFC 4193 (ULA),
// RFC 3879 (deprecated site-local), RFC 3927 / RFC 4291 §2.5.6
// (link-local), RFC 6598 (shared address space, CGNAT), RFC 1112 §4 /
// RFC 4291 §2.7 (multicast), RFC 1122 §3.2.1.3 ("this network").
var guardedClasses = []addrClass{
	{"unspecified", prefixes("0.0.0.0/8", "::/128")},
	{"loopback", prefixes("127.0.0.0/8", "::1/128")},
	{"private", prefixes("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7", "fec0::/10")},
	{"link-local", prefixes("169.254.0.0/16", "fe80::/10")},
	{"carrier-grade NAT", prefixes("100.64.0.0/10")},
	{"multicast", prefixes("224.0.0.0/4", "ff00::/8")},
	{"reserved", prefixes("240.0.0.0/4")}, // includes 255.255.255.255 broadcast
}

// Reasons given by CheckResolved, beyond "resolved to a <class> address".
const (
	ReasonResolvedMetadata = "resolved to a cloud metadata address"
	ReasonResolvedLocal    = "resolved to an address of this host"
	// ReasonResolvedDenied is the reason for an address in
	// network.deniedResolvedAddresses.
	ReasonResolvedDenied = "resolved to an address network.deniedResolvedAddresses denies"
)

// candidates returns ip (IPv4-mapped unmapped) and every IPv4 address an
// IPv6 address embeds, so that each form is judged by the IPv4 address it
// reaches: IPv4-compatible ::a.b.c.d (RFC 4291 §2.5.5.1), NAT64
// 64:ff9b::/96 (RFC 6052) and 64:ff9b:1::/48 (RFC 8215), 6to4 2002::/16
// (RFC 3056 §2) and Teredo 2001::/32 (RFC 4380 §4: server in bits 32-63,
// client in the last 32 bits, inverted).
func candidates(ip netip.Addr) []netip.Addr {
	ip = ip.Unmap()
	out := []netip.Addr{ip}
	if !ip.Is6() {
		return out
	}
	b := ip.As16()
	v4 := func(o int) netip.Addr { return netip.AddrFrom4([4]byte{b[o], b[o+1], b[o+2], b[o+3]}) }
	zero12 := true
	for _, x := range b[:12] {
		if x != 0 {
			zero12 = false
		}
	}
	switch {
	case zero12:
		out = append(out, v4(12))
	case b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && (b[4] == 0 && b[5] == 0 || b[4] == 0 && b[5] == 1):
		out = append(out, v4(12))
	case b[0] == 0x20 && b[1] == 0x02:
		out = append(out, v4(2))
	case b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0:
		out = append(out, v4(4), netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}))
	}
	return out
}

// Candidates is candidates for other packages: ip (IPv4-mapped
// unmapped) and every IPv4 address an IPv6 form of it embeds, each to be
// judged (the parent proxy's addresses, proxy.Parent.Forbidden).
func Candidates(ip netip.Addr) []netip.Addr { return candidates(ip) }

// ClassifyAddr returns the guarded class ip belongs to ("loopback",
// "private", "link-local", "carrier-grade NAT", "multicast",
// "unspecified", "reserved", "cloud metadata"), judging IPv6 forms that
// embed an IPv4 address by that address too, or "" for an ordinary
// public address.
func ClassifyAddr(ip netip.Addr) string {
	if isMetadataIP(ip) {
		return "cloud metadata"
	}
	for _, a := range candidates(ip) {
		for _, c := range guardedClasses {
			for _, pf := range c.prefixes {
				if pf.Contains(a) {
					return c.name
				}
			}
		}
	}
	return ""
}

// CheckResolved judges one address that host (already allowed by Decide)
// resolved to, before the proxy dials it (srt-notes §4.9 "Resolved-address
// guard"). isLocal reports whether an address belongs to one of this
// host's interfaces; nil means none does.
//
//  1. A cloud metadata address is refused, whatever the lists say.
//  2. An address matching a deniedDomains IP literal is refused with that
//     entry's reason, and one in deniedResolvedAddresses with
//     ReasonResolvedDenied.
//  3. An address in a guarded class (ClassifyAddr) or local to this host
//     is refused ("resolved to a loopback address", ...) unless an
//     allowedDomains IP literal covers it and port, or the class is
//     loopback and host is "localhost" or ends in ".localhost".
//  4. Anything else is allowed.
//
// When host is itself an IP literal, Decide has already judged it and
// CheckResolved is not needed.
func (p *Policy) CheckResolved(host string, port int, ip netip.Addr, isLocal func(netip.Addr) bool) Decision {
	canon, _, err := CanonicalHost(host)
	if err != nil {
		canon = host
	}
	d := Decision{Host: canon}
	ip = ip.Unmap()
	class := ClassifyAddr(ip)
	if class == "cloud metadata" {
		d.Reason = ReasonResolvedMetadata
		return d
	}
	cands := candidates(ip)
	if p != nil {
		for _, pat := range p.deny {
			if pat.Kind != KindIP {
				continue
			}
			for _, a := range cands {
				if pat.Match(a.String(), a, port) {
					d.Rule, d.Reason = pat.Raw, p.denyReason(pat)
					return d
				}
			}
		}
		for _, pfx := range p.deniedAddrs {
			for _, a := range cands {
				if pfx.Contains(a) {
					d.Rule, d.Reason = pfx.String(), ReasonResolvedDenied
					return d
				}
			}
		}
	}
	local := false
	if isLocal != nil {
		for _, a := range cands {
			if isLocal(a) {
				local = true
			}
		}
	}
	if class == "" && !local {
		d.Allowed = true
		return d
	}
	if p != nil {
		for _, pat := range p.allow {
			if pat.Kind != KindIP {
				continue
			}
			for _, a := range cands {
				if pat.Match(a.String(), a, port) {
					d.Allowed, d.Rule = true, pat.Raw
					return d
				}
			}
		}
	}
	if class == "loopback" && (canon == "localhost" || strings.HasSuffix(canon, ".localhost")) {
		d.Allowed = true
		return d
	}
	if class == "" {
		d.Reason = ReasonResolvedLocal
		return d
	}
	d.Reason = "resolved to " + article(class) + " " + class + " address"
	return d
}

func article(w string) string {
	switch w[0] {
	case 'a', 'e', 'i', 'o', 'u':
		return "an"
	}
	return "a"
}
