// Package netrule parses and matches the egress rules of the settings file:
// allowedDomains / deniedDomains entries (seed 003 "Configuration réseau",
// seed 000 "Sortie réseau", srt-notes §1.2 and §4.9).
//
// ParsePattern parses one entry; Compile builds an immutable Policy from
// the lists; Policy.Decide answers "may this host:port be reached, and if
// not, why". A Policy never changes after Compile, so it is safe for
// concurrent use; a proxy swaps whole Policies (atomic.Pointer) when
// --control-fd delivers new lists.
package netrule

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// Kind says which form of entry a Pattern is.
type Kind uint8

const (
	// KindHost is an exact host name ("example.com", "localhost").
	KindHost Kind = iota + 1
	// KindSubdomains is "*.example.com": every name strictly below the
	// base, at any depth, never the base itself (srt-notes §4.9).
	KindSubdomains
	// KindLabel is seed 000's mid-label form "bedrock.*.amazonaws.com":
	// exactly one "*" label matching exactly one non-empty label.
	KindLabel
	// KindIP is an IPv4 literal or a bracketed IPv6 literal.
	KindIP
	// KindAny is "*" (deniedDomains only): every host.
	KindAny
)

// Pattern is one parsed allowedDomains or deniedDomains entry. The zero
// Pattern matches nothing. Patterns are comparable; two entries that mean
// the same thing ("Example.COM." and "example.com") differ only in Raw.
type Pattern struct {
	// Raw is the entry as written in the settings file. deniedDomainReasons
	// is keyed by it.
	Raw string
	// Kind is the form of the entry.
	Kind Kind
	// Host is the canonical host part: a lower-case name without trailing
	// dot (KindHost), the base after "*." (KindSubdomains), the name with
	// its "*" label (KindLabel), the canonical IP text (KindIP), or ""
	// (KindAny).
	Host string
	// IP is the address of a KindIP pattern, IPv4-mapped IPv6 unmapped.
	IP netip.Addr
	// Port restricts the entry to one destination port. Zero means any port.
	Port int
}

// PatternError is returned by ParsePattern. Reason says in words why the
// entry was refused.
type PatternError struct {
	Entry  string
	Reason string
}

func (e *PatternError) Error() string {
	return fmt.Sprintf("invalid domain pattern %q: %s", e.Entry, e.Reason)
}

// ParsePattern parses one entry (grammar: srt-notes §1.2, plus seed 000's
// mid-label wildcard). deny reports whether the entry comes from
// deniedDomains, where a bare "*" and "*:port" are also accepted, and
// where broad wildcards ("*.com") are accepted because denying more is
// never a weakening.
//
// Accepted forms, each with an optional ":port" (1..65535, no leading
// zeros; without it the entry matches every port):
//
//	example.com  localhost          exact host (a name needs a dot)
//	*.example.com                   any subdomain, never the apex
//	bedrock.*.amazonaws.com         one "*" label = exactly one label
//	127.0.0.1  127.1  [::1]         IP literals (IPv6 bracketed)
//	*                               deny list only
//
// Matching is case-insensitive and ignores one trailing dot. Errors are
// *PatternError.
func ParsePattern(entry string, deny bool) (Pattern, error) {
	p, reason := parse(entry, deny)
	if reason != "" {
		return Pattern{}, &PatternError{Entry: entry, Reason: reason}
	}
	p.Raw = entry
	return p, nil
}

func parse(entry string, deny bool) (Pattern, string) {
	if entry == "" {
		return Pattern{}, "empty entry"
	}
	for _, r := range entry {
		if r <= ' ' || r == 0x7f {
			return Pattern{}, "contains whitespace or control characters"
		}
		if r >= 0x80 {
			return Pattern{}, "contains non-ASCII characters; write internationalised names in punycode (xn--...)"
		}
	}
	if strings.Contains(entry, "://") {
		return Pattern{}, `contains a scheme ("://"); write the host only, e.g. "example.com"`
	}
	if strings.ContainsAny(entry, "/?#@") {
		return Pattern{}, `contains "/", "?", "#" or "@"; write the host only, e.g. "example.com"`
	}

	host, port, reason := splitPort(entry)
	if reason != "" {
		return Pattern{}, reason
	}
	p := Pattern{Port: port}

	if strings.HasPrefix(host, "[") {
		if !strings.HasSuffix(host, "]") {
			return Pattern{}, "unterminated IPv6 literal"
		}
		inner := host[1 : len(host)-1]
		if strings.Contains(inner, "%") {
			return Pattern{}, "an IPv6 zone (%...) is not allowed"
		}
		a, err := netip.ParseAddr(inner)
		if err != nil || !a.Is6() {
			return Pattern{}, "invalid IPv6 literal inside brackets"
		}
		p.Kind, p.IP = KindIP, a.Unmap()
		p.Host = p.IP.String()
		return p, ""
	}
	if strings.Contains(host, ":") {
		return Pattern{}, `an IPv6 literal must be bracketed, e.g. "[::1]" or "[2001:db8::1]:443"`
	}
	host = strings.TrimSuffix(host, ".")
	if host == "" {
		return Pattern{}, "empty host"
	}
	if host == "*" {
		if !deny {
			return Pattern{}, `"*" matches every host; it is only allowed in deniedDomains`
		}
		p.Kind = KindAny
		return p, ""
	}
	if strings.Contains(host, "*") {
		return parseWildcard(strings.ToLower(host), p, deny)
	}
	if a, ok := parseInetAton(host); ok {
		p.Kind, p.IP, p.Host = KindIP, a, a.String()
		return p, ""
	}
	host = strings.ToLower(host)
	if err := checkName(host); err != nil {
		return Pattern{}, err.Error()
	}
	if !strings.Contains(host, ".") && host != "localhost" {
		return Pattern{}, `a host name needs at least one dot (e.g. "example.com"); only "localhost" is accepted without one`
	}
	p.Kind, p.Host = KindHost, host
	return p, ""
}

// splitPort splits an optional ":port" suffix off entry. It leaves
// unbracketed multi-colon text (an IPv6 literal without brackets) whole so
// the caller can name the mistake.
func splitPort(entry string) (host string, port int, reason string) {
	var ps string
	switch {
	case strings.HasPrefix(entry, "["):
		i := strings.LastIndex(entry, "]")
		if i < 0 {
			return "", 0, "unterminated IPv6 literal"
		}
		host, ps = entry[:i+1], entry[i+1:]
		if ps != "" {
			if ps[0] != ':' {
				return "", 0, "unexpected text after the IPv6 literal"
			}
			ps = ps[1:]
			if ps == "" {
				return "", 0, "empty port after \":\""
			}
		}
	case strings.Count(entry, ":") == 1:
		i := strings.IndexByte(entry, ':')
		host, ps = entry[:i], entry[i+1:]
		if ps == "" {
			return "", 0, "empty port after \":\""
		}
	default:
		return entry, 0, ""
	}
	if ps == "" {
		return host, 0, ""
	}
	n, ok := parsePort(ps)
	if !ok {
		return "", 0, fmt.Sprintf("invalid port %q: must be 1-65535 without leading zeros", ps)
	}
	return host, n, ""
}

func parsePort(s string) (int, bool) {
	if s == "" || len(s) > 5 || s[0] == '0' || !allDigits(s) {
		return 0, false
	}
	n, _ := strconv.Atoi(s)
	return n, n >= 1 && n <= 65535
}

// parseWildcard handles every entry that contains "*" other than a bare "*".
func parseWildcard(host string, p Pattern, deny bool) (Pattern, string) {
	if strings.Count(host, "*") > 1 {
		return Pattern{}, `more than one "*"; a pattern may hold a single wildcard`
	}
	labels := strings.Split(host, ".")
	star := -1
	for i, l := range labels {
		if strings.Contains(l, "*") {
			if l != "*" {
				return Pattern{}, `"*" must be a whole label ("*.example.com" or "api.*.example.com"), not part of one`
			}
			star = i
		}
	}
	if star == len(labels)-1 {
		return Pattern{}, `"*" cannot be the last label: that would match every top-level domain`
	}
	rest := strings.Join(labels[star+1:], ".")
	if err := checkName(rest); err != nil {
		return Pattern{}, err.Error()
	}
	if _, ok := parseInetAton(rest); ok {
		return Pattern{}, "a wildcard cannot cover IP addresses"
	}
	if star > 0 {
		if err := checkName(strings.Join(labels[:star], ".")); err != nil {
			return Pattern{}, err.Error()
		}
	}
	if !deny {
		if reason := tooBroad(rest); reason != "" {
			return Pattern{}, reason
		}
	}
	if star == 0 {
		p.Kind, p.Host = KindSubdomains, rest
	} else {
		p.Kind, p.Host = KindLabel, host
	}
	return p, ""
}

// tooBroad explains why a wildcard whose fixed part after the "*" label is
// base would match too many unrelated sites, or returns "".
//
// A single label ("com") covers a whole top-level domain (srt-notes §1.2:
// "*.com" is rejected). An ICANN public suffix such as "co.uk" is just as
// broad, because every registrant gets names under it; the Public Suffix
// List (golang.org/x/net/publicsuffix) tells us which ones those are.
// Private-section suffixes ("github.io") are accepted: they belong to
// one operator, and allowing them is a deliberate choice about that
// operator's users.
func tooBroad(base string) string {
	if !strings.Contains(base, ".") {
		return fmt.Sprintf("too broad: the wildcard would match every name under the top-level domain %q; a wildcard needs at least two labels after it (e.g. \"*.example.com\")", base)
	}
	if ps, icann := publicsuffix.PublicSuffix(base); icann && ps == base {
		return fmt.Sprintf("too broad: %q is a public suffix where anyone can register names, so the wildcard would match unrelated sites", base)
	}
	return ""
}

// String returns the canonical text of p. ParsePattern(p.String(), deny)
// yields p again (apart from Raw) for every accepted p.
func (p Pattern) String() string {
	var h string
	switch p.Kind {
	case KindAny:
		h = "*"
	case KindSubdomains:
		h = "*." + p.Host
	case KindIP:
		if p.IP.Is6() {
			h = "[" + p.IP.String() + "]"
		} else {
			h = p.IP.String()
		}
	default:
		h = p.Host
	}
	if p.Port != 0 {
		h += ":" + strconv.Itoa(p.Port)
	}
	return h
}

// Match reports whether p covers a destination. host must already be
// canonical (CanonicalHost), with ip set when host is an IP literal.
// Wildcards never match IP literals (srt-notes §4.9 "Matching").
func (p Pattern) Match(host string, ip netip.Addr, port int) bool {
	if p.Port != 0 && p.Port != port {
		return false
	}
	switch p.Kind {
	case KindAny:
		return true
	case KindIP:
		return ip.IsValid() && ip == p.IP
	case KindHost:
		return !ip.IsValid() && host == p.Host
	case KindSubdomains:
		return !ip.IsValid() && len(host) > len(p.Host)+1 &&
			strings.HasSuffix(host, p.Host) && host[len(host)-len(p.Host)-1] == '.'
	case KindLabel:
		return !ip.IsValid() && matchLabel(p.Host, host)
	}
	return false
}

// matchLabel matches a KindLabel pattern label by label: "*" takes exactly
// one non-empty label, so "bedrock.*.amazonaws.com" does not match
// "bedrock.evil.attacker.amazonaws.com".
func matchLabel(pattern, host string) bool {
	for {
		pi := strings.IndexByte(pattern, '.')
		hi := strings.IndexByte(host, '.')
		if (pi < 0) != (hi < 0) {
			return false
		}
		if pi < 0 {
			return pattern == host || (pattern == "*" && host != "")
		}
		pl, hl := pattern[:pi], host[:hi]
		if hl == "" || (pl != "*" && pl != hl) {
			return false
		}
		pattern, host = pattern[pi+1:], host[hi+1:]
	}
}
