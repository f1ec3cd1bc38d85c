package netrule

import (
	"errors"
	"fmt"
	"net/netip"
)

// Reasons reported by Decide and CheckResolved when no settings text
// applies. They are part of the wire format (the CONNECT 403 status text,
// srt-notes §4.9) and of the violation records, so they are constants.
const (
	ReasonNotAllowed = "host is not on the allow list"
	ReasonDenyList   = "host is on the deny list"
	ReasonMetadata   = "cloud metadata endpoint"
	ReasonMalformed  = "malformed host"
)

// Rules are the network lists of the settings file (srt-notes §1.2).
type Rules struct {
	// Allowed is network.allowedDomains. Empty means no host is allowed.
	Allowed []string
	// Denied is network.deniedDomains; it wins over Allowed.
	Denied []string
	// DeniedReasons is network.deniedDomainReasons, keyed by the exact
	// Denied entry. Nil means every deny reports ReasonDenyList.
	DeniedReasons map[string]string
	// AllowlistDenyReason replaces ReasonNotAllowed when not empty.
	AllowlistDenyReason string
	// DeniedAddresses is network.deniedResolvedAddresses: IP addresses
	// and CIDR prefixes a host name must not resolve to (CheckResolved),
	// whatever the lists allow.
	DeniedAddresses []string
	// AllowAll allows every host name, as if the allow-list held the
	// broadest wildcard: Allowed is then redundant. Everything else
	// still refuses first, in Decide's order: a malformed host, the
	// built-in metadata list, every Denied entry; and every address a
	// name resolves to still passes CheckResolved (metadata,
	// Denied IP literals, DeniedAddresses, the guarded classes and this
	// host's own addresses). Like every wildcard it never covers an IP
	// literal, which the proxies dial without that guard: an IP literal
	// is reached only through an Allowed entry naming it.
	//
	// Only a library caller sets it (srtd's terminal profile, seed 000
	// "Terminal hébergé par le serveur": "network open"); no settings
	// key reaches it, so no settings file widens a sandbox to every host.
	AllowAll bool
}

// EntryError names a bad entry of a list. It wraps the *PatternError.
type EntryError struct {
	// List is "allowedDomains" or "deniedDomains".
	List string
	// Index is the entry's position in the list, from 0.
	Index int
	Err   error
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("network.%s[%d]: %v", e.List, e.Index, e.Err)
}

func (e *EntryError) Unwrap() error { return e.Err }

// Policy is a compiled, immutable set of rules. The zero Policy (and a nil
// *Policy) denies every host. It is safe for concurrent use.
type Policy struct {
	allow   []Pattern
	deny    []Pattern
	reasons map[string]string
	notOn   string
	// allowAll is Rules.AllowAll.
	allowAll bool
	// deniedAddrs are Rules.DeniedAddresses, parsed.
	deniedAddrs []netip.Prefix
}

// Compile parses every entry of r. All bad entries are reported together,
// joined with errors.Join, each as an *EntryError; on error the returned
// Policy is nil.
func Compile(r Rules) (*Policy, error) {
	p := &Policy{notOn: r.AllowlistDenyReason, allowAll: r.AllowAll}
	if p.notOn == "" {
		p.notOn = ReasonNotAllowed
	}
	var errs []error
	for i, e := range r.Allowed {
		pat, err := ParsePattern(e, false)
		if err != nil {
			errs = append(errs, &EntryError{List: "allowedDomains", Index: i, Err: err})
			continue
		}
		p.allow = append(p.allow, pat)
	}
	for i, e := range r.Denied {
		pat, err := ParsePattern(e, true)
		if err != nil {
			errs = append(errs, &EntryError{List: "deniedDomains", Index: i, Err: err})
			continue
		}
		p.deny = append(p.deny, pat)
	}
	for i, a := range r.DeniedAddresses {
		pfx, err := netip.ParsePrefix(a)
		if ip, aerr := netip.ParseAddr(a); aerr == nil {
			pfx, err = ip.Unmap().Prefix(ip.Unmap().BitLen())
		}
		if err != nil {
			errs = append(errs, &EntryError{List: "deniedResolvedAddresses", Index: i, Err: err})
			continue
		}
		p.deniedAddrs = append(p.deniedAddrs, pfx.Masked())
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(r.DeniedReasons) > 0 {
		p.reasons = make(map[string]string, len(r.DeniedReasons))
		for k, v := range r.DeniedReasons {
			p.reasons[k] = v
		}
	}
	return p, nil
}

// MustCompile is Compile for tests and fixed tables; it panics on error.
func MustCompile(r Rules) *Policy {
	p, err := Compile(r)
	if err != nil {
		panic(err)
	}
	return p
}

// Decision is the answer of Decide and CheckResolved.
type Decision struct {
	// Allowed is true when the connection may proceed.
	Allowed bool
	// Reason is the refusal text shown to the user (empty when allowed):
	// a deniedDomainReasons value, ReasonDenyList, the allow-list reason,
	// ReasonMetadata, ReasonMalformed, or "resolved to a ... address".
	Reason string
	// Host is the canonical host (CanonicalHost), or the raw host when it
	// was malformed.
	Host string
	// Rule is the Raw entry that decided, AllowAllRule when Rules.AllowAll
	// did, or "" when none did (built-in metadata list, not on the allow
	// list, malformed host).
	Rule string
}

// Decide says whether host:port may be reached, in the reference's order
// (srt-notes §4.9 "Decision order"):
//
//  1. a malformed host is refused (ReasonMalformed);
//  2. the built-in cloud metadata endpoints (MetadataHosts,
//     MetadataPrefixes) are refused, whatever the lists say;
//  3. the first matching deniedDomains entry refuses, with its reason;
//  4. a matching allowedDomains entry allows;
//  5. with Rules.AllowAll, any host name (not an IP literal) allows;
//  6. anything else is refused with the allow-list reason.
//
// host may be a name, an IPv4 literal in any inet_aton spelling, or an
// IPv6 literal with or without brackets. port is 1..65535. Decide does no
// I/O; a name that it allows must still pass CheckResolved for every
// address it resolves to.
func (p *Policy) Decide(host string, port int) Decision {
	canon, ip, err := CanonicalHost(host)
	if err != nil {
		return Decision{Reason: ReasonMalformed, Host: host}
	}
	d := Decision{Host: canon}
	if isMetadataHost(canon, ip) {
		d.Reason = ReasonMetadata
		return d
	}
	if p == nil {
		d.Reason = ReasonNotAllowed
		return d
	}
	for _, pat := range p.deny {
		if pat.Match(canon, ip, port) {
			d.Rule, d.Reason = pat.Raw, p.denyReason(pat)
			return d
		}
	}
	for _, pat := range p.allow {
		if pat.Match(canon, ip, port) {
			d.Allowed, d.Rule = true, pat.Raw
			return d
		}
	}
	if p.allowAll && !ip.IsValid() {
		d.Allowed, d.Rule = true, AllowAllRule
		return d
	}
	d.Reason = p.notOn
	if d.Reason == "" { // zero Policy
		d.Reason = ReasonNotAllowed
	}
	return d
}

func (p *Policy) denyReason(pat Pattern) string {
	if r, ok := p.reasons[pat.Raw]; ok && r != "" {
		return r
	}
	return ReasonDenyList
}

// AllowAllRule is Decision.Rule when Rules.AllowAll allowed a host.
const AllowAllRule = "(every host name: network open)"

// AllowsAll reports whether p was compiled with Rules.AllowAll.
func (p *Policy) AllowsAll() bool { return p != nil && p.allowAll }

// Allowed returns the parsed allowedDomains entries, in list order.
func (p *Policy) Allowed() []Pattern {
	if p == nil {
		return nil
	}
	return append([]Pattern(nil), p.allow...)
}

// Denied returns the parsed deniedDomains entries, in list order.
func (p *Policy) Denied() []Pattern {
	if p == nil {
		return nil
	}
	return append([]Pattern(nil), p.deny...)
}

// MetadataHosts and MetadataPrefixes are the built-in deny list of cloud
// instance-metadata endpoints (seed 000 "Sortie réseau"; srt-notes §4.9
// lists the addresses the reference guards). They beat every allow entry,
// including an allowed IP literal, in Decide and in CheckResolved: the
// credentials those endpoints hand out belong to the host, not to the
// sandboxed command. This is the one place the list is kept.
var (
	MetadataHosts = []string{
		"metadata.google.internal", // GCP
		"metadata.goog",            // GCP
	}
	MetadataPrefixes = []netip.Prefix{
		netip.MustParsePrefix("169.254.169.254/32"), // AWS, GCP, Azure, OpenStack, DigitalOcean IMDS
		netip.MustParsePrefix("169.254.170.2/32"),   // AWS ECS task metadata and credentials
		netip.MustParsePrefix("100.100.100.200/32"), // Alibaba Cloud
		netip.MustParsePrefix("168.63.129.16/32"),   // Azure WireServer
		netip.MustParsePrefix("192.0.0.192/32"),     // Oracle Cloud (OCI) IMDS
		netip.MustParsePrefix("fd00:ec2::/32"),      // AWS IPv6 IMDS (fd00:ec2::254) and its neighbours
	}
)

func isMetadataHost(canon string, ip netip.Addr) bool {
	if ip.IsValid() {
		return isMetadataIP(ip)
	}
	for _, h := range MetadataHosts {
		if canon == h {
			return true
		}
	}
	return false
}

func isMetadataIP(ip netip.Addr) bool {
	for _, a := range candidates(ip) {
		for _, pf := range MetadataPrefixes {
			if pf.Contains(a) {
				return true
			}
		}
	}
	return false
}
