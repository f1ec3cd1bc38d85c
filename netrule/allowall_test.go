package netrule

import (
	"net/netip"
	"testing"
)

// allowAllRules are an open terminal's rules: AllowAll with a deny list
// of names, IP literals and resolved addresses, and one allowed IP.
func allowAllRules() Rules {
	return Rules{
		AllowAll:        true,
		Allowed:         []string{"203.0.113.9"},
		Denied:          []string{"telemetry.test", "*.sentry.test", "198.51.100.7", "[2001:db8::7]", "*:25"},
		DeniedReasons:   map[string]string{"telemetry.test": "no telemetry"},
		DeniedAddresses: []string{"192.0.2.0/24", "2001:db8:dead::/48"},
	}
}

func TestAllowAllDecide(t *testing.T) {
	p := MustCompile(allowAllRules())
	if !p.AllowsAll() {
		t.Fatal("AllowsAll() = false for Rules.AllowAll")
	}
	tests := []struct {
		name, host string
		port       int
		allowed    bool
		reason     string
		rule       string
	}{
		{"any-name", "unlisted.example.org", 443, true, "", AllowAllRule},
		{"localhost", "localhost", 8080, true, "", AllowAllRule},
		{"deny-name-wins", "telemetry.test", 443, false, "no telemetry", "telemetry.test"},
		{"deny-wildcard-wins", "x.sentry.test", 443, false, ReasonDenyList, "*.sentry.test"},
		{"deny-port-wins", "mail.example.org", 25, false, ReasonDenyList, "*:25"},
		{"metadata-name", "metadata.google.internal", 80, false, ReasonMetadata, ""},
		{"metadata-ip", "169.254.169.254", 80, false, ReasonMetadata, ""},
		{"metadata-ip-spelling", "0xa9fea9fe", 80, false, ReasonMetadata, ""},
		// Like every wildcard, allow-all covers no IP literal: the
		// proxies dial a literal without the resolved-address guard.
		{"ip-literal-loopback", "127.0.0.1", 8080, false, ReasonNotAllowed, ""},
		{"ip-literal-loopback-v6", "[::1]", 8080, false, ReasonNotAllowed, ""},
		{"ip-literal-mapped", "[::ffff:127.0.0.1]", 8080, false, ReasonNotAllowed, ""},
		{"ip-literal-private", "10.0.0.1", 80, false, ReasonNotAllowed, ""},
		{"ip-literal-public", "8.8.8.8", 53, false, ReasonNotAllowed, ""},
		{"ip-literal-listed", "203.0.113.9", 443, true, "", "203.0.113.9"},
		{"ip-literal-denied", "198.51.100.7", 443, false, ReasonDenyList, "198.51.100.7"},
		{"malformed", "a b", 80, false, ReasonMalformed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.Decide(tt.host, tt.port)
			if d.Allowed != tt.allowed || d.Reason != tt.reason || d.Rule != tt.rule {
				t.Fatalf("Decide(%q, %d) = %+v; want allowed=%v reason=%q rule=%q", tt.host, tt.port, d, tt.allowed, tt.reason, tt.rule)
			}
		})
	}

	// Without AllowAll the same lists refuse the unlisted name: the flag,
	// nothing else, opens the network.
	r := allowAllRules()
	r.AllowAll = false
	closed := MustCompile(r)
	if closed.AllowsAll() {
		t.Fatal("AllowsAll() = true without Rules.AllowAll")
	}
	if d := closed.Decide("unlisted.example.org", 443); d.Allowed || d.Reason != ReasonNotAllowed {
		t.Fatalf("without AllowAll: Decide = %+v; want refused, not on the allow list", d)
	}
	var zero *Policy
	if zero.AllowsAll() {
		t.Fatal("nil Policy AllowsAll")
	}
}

// TestAllowAllResolved: every address an allowed-by-all name resolves to
// is still judged (DNS rebinding, srtd-registry-independent guards).
func TestAllowAllResolved(t *testing.T) {
	p := MustCompile(allowAllRules())
	local := netip.MustParseAddr("198.18.0.5")
	isLocal := func(a netip.Addr) bool { return a == local }
	tests := []struct {
		name, host, addr string
		port             int
		allowed          bool
		reason           string
	}{
		{"public", "unlisted.example.org", "93.184.216.34", 443, true, ""},
		{"rebind-loopback", "rebind.example.org", "127.0.0.1", 80, false, "resolved to a loopback address"},
		{"rebind-loopback-v6", "rebind.example.org", "::1", 80, false, "resolved to a loopback address"},
		{"rebind-private", "rebind.example.org", "10.1.2.3", 80, false, "resolved to a private address"},
		{"rebind-nat64-private", "rebind.example.org", "64:ff9b::a01:203", 80, false, "resolved to a private address"},
		{"rebind-metadata", "rebind.example.org", "169.254.169.254", 80, false, ReasonResolvedMetadata},
		{"this-host", "rebind.example.org", "198.18.0.5", 80, false, ReasonResolvedLocal},
		{"denied-ip-literal", "unlisted.example.org", "198.51.100.7", 443, false, ReasonDenyList},
		{"denied-ip-literal-v6", "unlisted.example.org", "2001:db8::7", 443, false, ReasonDenyList},
		{"denied-address", "unlisted.example.org", "192.0.2.44", 443, false, ReasonResolvedDenied},
		{"denied-address-v6", "unlisted.example.org", "2001:db8:dead::1", 443, false, ReasonResolvedDenied},
		{"denied-address-mapped", "unlisted.example.org", "::ffff:192.0.2.44", 443, false, ReasonResolvedDenied},
		{"localhost-loopback", "localhost", "127.0.0.1", 8080, true, ""},
		{"localhost-private", "localhost", "10.0.0.1", 8080, false, "resolved to a private address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := p.Decide(tt.host, tt.port); !d.Allowed {
				t.Fatalf("Decide(%q) refused (%s); the case needs an allowed name", tt.host, d.Reason)
			}
			d := p.CheckResolved(tt.host, tt.port, netip.MustParseAddr(tt.addr), isLocal)
			if d.Allowed != tt.allowed || d.Reason != tt.reason {
				t.Fatalf("CheckResolved(%q, %s) = %+v; want allowed=%v reason=%q", tt.host, tt.addr, d, tt.allowed, tt.reason)
			}
		})
	}
}
