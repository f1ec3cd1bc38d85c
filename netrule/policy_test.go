package netrule

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	p := MustCompile(Rules{
		Allowed: []string{"allowed.test", "*.github.com", "bedrock.*.amazonaws.com", "127.0.0.1:8000",
			"[::1]", "169.254.169.254", "metadata.google.internal", "denied.test", "api.test:443"},
		Denied: []string{"denied.test", "evil.github.com", "*:25", "10.0.0.1"},
		DeniedReasons: map[string]string{
			"denied.test": "denied.test is blocked; use allowed.test instead",
		},
	})
	tests := []struct {
		name, host string
		port       int
		allowed    bool
		reason     string
		rule       string
	}{
		{"allowed", "allowed.test", 443, true, "", "allowed.test"},
		{"allowed-case", "ALLOWED.test.", 80, true, "", "allowed.test"},
		{"not-listed", "other.test", 443, false, ReasonNotAllowed, ""},
		{"deny-wins-with-reason", "denied.test", 443, false, "denied.test is blocked; use allowed.test instead", "denied.test"},
		{"deny-wins-over-wildcard", "evil.github.com", 443, false, ReasonDenyList, "evil.github.com"},
		{"wildcard-allow", "api.github.com", 443, true, "", "*.github.com"},
		{"wildcard-not-apex", "github.com", 443, false, ReasonNotAllowed, ""},
		{"deny-port", "api.github.com", 25, false, ReasonDenyList, "*:25"},
		{"mid-label", "bedrock.eu-west-3.amazonaws.com", 443, true, "", "bedrock.*.amazonaws.com"},
		{"mid-label-deep", "bedrock.evil.attacker.amazonaws.com", 443, false, ReasonNotAllowed, ""},
		{"ip-port", "127.1", 8000, true, "", "127.0.0.1:8000"},
		{"ip-port-other", "127.0.0.1", 8001, false, ReasonNotAllowed, ""},
		{"ip-mapped", "[::ffff:7f00:1]", 8000, true, "", "127.0.0.1:8000"},
		{"ipv6", "::1", 1, true, "", "[::1]"},
		{"deny-ip-spelling", "10.1", 80, false, ReasonDenyList, "10.0.0.1"}, // inet_aton: 10.1 is 10.0.0.1
		{"metadata-beats-allow", "169.254.169.254", 80, false, ReasonMetadata, ""},
		{"metadata-spelling", "2852039166", 80, false, ReasonMetadata, ""},
		{"metadata-mapped", "[::ffff:a9fe:a9fe]", 80, false, ReasonMetadata, ""},
		{"metadata-name", "metadata.google.internal.", 80, false, ReasonMetadata, ""},
		{"metadata-goog", "METADATA.GOOG", 80, false, ReasonMetadata, ""},
		{"metadata-aws-v6", "[fd00:ec2::254]", 80, false, ReasonMetadata, ""},
		{"metadata-alibaba", "100.100.100.200", 80, false, ReasonMetadata, ""},
		{"metadata-ecs", "169.254.170.2", 80, false, ReasonMetadata, ""},
		{"port-restricted", "api.test", 443, true, "", "api.test:443"},
		{"port-restricted-other", "api.test", 80, false, ReasonNotAllowed, ""},
		{"malformed-crlf", "allowed.test\r\nHost: x", 80, false, ReasonMalformed, ""},
		{"malformed-empty", "", 80, false, ReasonMalformed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.Decide(tt.host, tt.port)
			if d.Allowed != tt.allowed || d.Reason != tt.reason || d.Rule != tt.rule {
				t.Fatalf("Decide(%q, %d) = %+v; want allowed=%v reason=%q rule=%q", tt.host, tt.port, d, tt.allowed, tt.reason, tt.rule)
			}
		})
	}
}

func TestDecideEmptyAndNil(t *testing.T) {
	for _, p := range []*Policy{nil, MustCompile(Rules{}), {}} {
		if d := p.Decide("example.com", 443); d.Allowed || d.Reason != ReasonNotAllowed {
			t.Errorf("%v: Decide = %+v, want refusal", p, d)
		}
	}
	p := MustCompile(Rules{AllowlistDenyReason: "ask the admin"})
	if d := p.Decide("example.com", 443); d.Reason != "ask the admin" {
		t.Errorf("AllowlistDenyReason: got %q", d.Reason)
	}
}

func TestCompileErrors(t *testing.T) {
	_, err := Compile(Rules{Allowed: []string{"ok.test", "*.com"}, Denied: []string{"*", "::1"}})
	var ee *EntryError
	if !errors.As(err, &ee) || ee.List != "allowedDomains" || ee.Index != 1 {
		t.Fatalf("Compile error = %v", err)
	}
	if !strings.Contains(err.Error(), "network.deniedDomains[1]: invalid domain pattern \"::1\"") {
		t.Fatalf("second error missing: %v", err)
	}
	var pe *PatternError
	if !errors.As(err, &pe) {
		t.Fatal("PatternError not reachable with errors.As")
	}
}

func TestCheckResolved(t *testing.T) {
	local := netip.MustParseAddr("192.0.2.7") // pretend interface address
	isLocal := func(a netip.Addr) bool { return a == local }
	p := MustCompile(Rules{
		Allowed:         []string{"allowed.test", "local.test", "localhost", "dev.localhost", "10.9.9.9:443", "10.8.8.8:443", "*.corp.test"},
		Denied:          []string{"203.0.113.66"},
		DeniedReasons:   map[string]string{"203.0.113.66": "known sinkhole"},
		DeniedAddresses: []string{"198.51.100.0/24", "2001:db8::/32", "10.8.8.8"},
	})
	tests := []struct {
		name, host, ip string
		port           int
		allowed        bool
		reason         string
	}{
		{"public", "allowed.test", "93.184.216.34", 443, true, ""},
		{"loopback", "allowed.test", "127.0.0.1", 443, false, "resolved to a loopback address"},
		{"loopback-v6", "allowed.test", "::1", 443, false, "resolved to a loopback address"},
		{"mapped-loopback", "allowed.test", "::ffff:127.0.0.1", 443, false, "resolved to a loopback address"},
		{"nat64-loopback", "allowed.test", "64:ff9b::7f00:1", 443, false, "resolved to a loopback address"},
		{"6to4-private", "allowed.test", "2002:c0a8:101::1", 443, false, "resolved to a private address"},
		{"private", "allowed.test", "10.1.2.3", 443, false, "resolved to a private address"},
		{"ula", "allowed.test", "fd00::1", 443, false, "resolved to a private address"},
		{"link-local", "allowed.test", "169.254.1.1", 443, false, "resolved to a link-local address"},
		{"cgnat", "allowed.test", "100.64.1.1", 443, false, "resolved to a carrier-grade NAT address"},
		{"metadata", "allowed.test", "169.254.169.254", 443, false, ReasonResolvedMetadata},
		{"metadata-alibaba", "allowed.test", "100.100.100.200", 443, false, ReasonResolvedMetadata},
		{"unspecified", "allowed.test", "0.0.0.0", 443, false, "resolved to an unspecified address"},
		{"multicast", "allowed.test", "224.0.0.1", 443, false, "resolved to a multicast address"},
		{"host-interface", "allowed.test", "192.0.2.7", 443, false, ReasonResolvedLocal},
		{"deny-literal", "allowed.test", "203.0.113.66", 443, false, "known sinkhole"},
		{"denied-resolved-v4", "allowed.test", "198.51.100.20", 443, false, ReasonResolvedDenied},
		{"denied-resolved-mapped", "allowed.test", "::ffff:198.51.100.20", 443, false, ReasonResolvedDenied},
		{"denied-resolved-v6", "allowed.test", "2001:db8::5", 443, false, ReasonResolvedDenied},
		{"denied-resolved-wins-over-allowed-literal", "local.test", "10.8.8.8", 443, false, ReasonResolvedDenied},
		{"allowed-literal-exempts", "local.test", "10.9.9.9", 443, true, ""},
		{"denied-resolved-other-public", "allowed.test", "198.51.101.1", 443, true, ""},
		{"allowed-literal-port-only", "local.test", "10.9.9.9", 80, false, "resolved to a private address"},
		{"localhost-loopback", "localhost", "127.0.0.1", 80, true, ""},
		{"localhost-sub-loopback", "dev.localhost", "::1", 80, true, ""},
		{"localhost-not-private", "localhost", "10.0.0.1", 80, false, "resolved to a private address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.CheckResolved(tt.host, tt.port, netip.MustParseAddr(tt.ip), isLocal)
			if d.Allowed != tt.allowed || d.Reason != tt.reason {
				t.Fatalf("CheckResolved(%s, %s) = %+v; want allowed=%v reason=%q", tt.host, tt.ip, d, tt.allowed, tt.reason)
			}
		})
	}
}
