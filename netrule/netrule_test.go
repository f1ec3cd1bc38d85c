package netrule

import (
	"errors"
	"net/netip"
	"testing"
)

func TestParsePattern(t *testing.T) {
	const (
		needDot   = `a host name needs at least one dot (e.g. "example.com"); only "localhost" is accepted without one`
		badPort   = `must be 1-65535 without leading zeros`
		bracket   = `an IPv6 literal must be bracketed, e.g. "[::1]" or "[2001:db8::1]:443"`
		denyOnly  = `"*" matches every host; it is only allowed in deniedDomains`
		tldBroad  = `too broad: the wildcard would match every name under the top-level domain "com"; a wildcard needs at least two labels after it (e.g. "*.example.com")`
		wholeLbl  = `"*" must be a whole label ("*.example.com" or "api.*.example.com"), not part of one`
		numericNm = `not a valid IP address, and a name cannot end in a numeric label`
	)
	tests := []struct {
		name  string
		entry string
		deny  bool
		want  string // canonical String(), when accepted
		kind  Kind
		port  int
		err   string // PatternError.Reason, when refused
	}{
		{name: "exact", entry: "example.com", want: "example.com", kind: KindHost},
		{name: "exact-upper-trailing-dot", entry: "API.Example.COM.", want: "api.example.com", kind: KindHost},
		{name: "exact-port", entry: "api.example.com:443", want: "api.example.com:443", kind: KindHost, port: 443},
		{name: "localhost", entry: "localhost", want: "localhost", kind: KindHost},
		{name: "localhost-port", entry: "localhost:8080", want: "localhost:8080", kind: KindHost, port: 8080},
		{name: "underscore", entry: "_dmarc.example.com", want: "_dmarc.example.com", kind: KindHost},
		{name: "subdomains", entry: "*.example.com", want: "*.example.com", kind: KindSubdomains},
		{name: "subdomains-port", entry: "*.example.com:8443", want: "*.example.com:8443", kind: KindSubdomains, port: 8443},
		{name: "subdomains-private-suffix", entry: "*.github.io", want: "*.github.io", kind: KindSubdomains},
		{name: "mid-label", entry: "bedrock.*.amazonaws.com", want: "bedrock.*.amazonaws.com", kind: KindLabel},
		{name: "mid-label-port", entry: "Bedrock.*.AmazonAWS.com:443", want: "bedrock.*.amazonaws.com:443", kind: KindLabel, port: 443},
		{name: "ipv4", entry: "127.0.0.1", want: "127.0.0.1", kind: KindIP},
		{name: "ipv4-port", entry: "127.0.0.1:8000", want: "127.0.0.1:8000", kind: KindIP, port: 8000},
		{name: "ipv4-short", entry: "127.1", want: "127.0.0.1", kind: KindIP},
		{name: "ipv4-integer", entry: "2130706433", want: "127.0.0.1", kind: KindIP},
		{name: "ipv4-hex", entry: "0x7f.1", want: "127.0.0.1", kind: KindIP},
		{name: "ipv4-octal", entry: "0177.0.0.1", want: "127.0.0.1", kind: KindIP},
		{name: "ipv6", entry: "[::1]", want: "[::1]", kind: KindIP},
		{name: "ipv6-port", entry: "[2001:db8::1]:443", want: "[2001:db8::1]:443", kind: KindIP, port: 443},
		{name: "ipv6-mapped", entry: "[::ffff:127.0.0.1]", want: "127.0.0.1", kind: KindIP},
		{name: "ipv6-upper", entry: "[2001:DB8::A]", want: "[2001:db8::a]", kind: KindIP},
		{name: "star-deny", entry: "*", deny: true, want: "*", kind: KindAny},
		{name: "star-port-deny", entry: "*:22", deny: true, want: "*:22", kind: KindAny, port: 22},
		{name: "broad-ok-in-deny", entry: "*.com", deny: true, want: "*.com", kind: KindSubdomains},
		{name: "port-max", entry: "example.com:65535", want: "example.com:65535", kind: KindHost, port: 65535},

		{name: "empty", entry: "", err: "empty entry"},
		{name: "star-allow", entry: "*", err: denyOnly},
		{name: "star-port-allow", entry: "*:443", err: denyOnly},
		{name: "tld-wildcard", entry: "*.com", err: tldBroad},
		{name: "public-suffix-wildcard", entry: "*.co.uk", err: `too broad: "co.uk" is a public suffix where anyone can register names, so the wildcard would match unrelated sites`},
		{name: "mid-label-over-tld", entry: "foo.*.com", err: tldBroad},
		{name: "last-label-star", entry: "example.*", err: `"*" cannot be the last label: that would match every top-level domain`},
		{name: "partial-label", entry: "ex*.example.com", err: wholeLbl},
		{name: "partial-label-2", entry: "*foo.example.com", err: wholeLbl},
		{name: "two-stars", entry: "*.*.example.com", err: `more than one "*"; a pattern may hold a single wildcard`},
		{name: "wildcard-ip", entry: "*.0.0.1", err: numericNm},
		{name: "no-dot", entry: "intranet", err: needDot},
		{name: "leading-dot", entry: ".example.com", err: "empty label"},
		{name: "double-dot", entry: "a..example.com", err: "empty label"},
		{name: "scheme", entry: "https://example.com", err: `contains a scheme ("://"); write the host only, e.g. "example.com"`},
		{name: "path", entry: "example.com/x", err: `contains "/", "?", "#" or "@"; write the host only, e.g. "example.com"`},
		{name: "userinfo", entry: "u@example.com", err: `contains "/", "?", "#" or "@"; write the host only, e.g. "example.com"`},
		{name: "space", entry: "example .com", err: "contains whitespace or control characters"},
		{name: "nul", entry: "example.com\x00", err: "contains whitespace or control characters"},
		{name: "unicode", entry: "bücher.de", err: "contains non-ASCII characters; write internationalised names in punycode (xn--...)"},
		{name: "port-zero", entry: "example.com:0", err: `invalid port "0": ` + badPort},
		{name: "port-leading-zero", entry: "example.com:0443", err: `invalid port "0443": ` + badPort},
		{name: "port-too-big", entry: "example.com:65536", err: `invalid port "65536": ` + badPort},
		{name: "port-sign", entry: "example.com:+1", err: `invalid port "+1": ` + badPort},
		{name: "port-empty", entry: "example.com:", err: `empty port after ":"`},
		{name: "ipv6-unbracketed", entry: "::1", err: bracket},
		{name: "ipv6-unbracketed-port", entry: "2001:db8::1:443", err: bracket},
		{name: "ipv6-zone", entry: "[fe80::1%eth0]", err: "an IPv6 zone (%...) is not allowed"},
		{name: "ipv6-bad", entry: "[::g]", err: "invalid IPv6 literal inside brackets"},
		{name: "ipv6-v4-in-brackets", entry: "[127.0.0.1]", err: "invalid IPv6 literal inside brackets"},
		{name: "ipv6-unterminated", entry: "[::1", err: "unterminated IPv6 literal"},
		{name: "ipv6-junk-after", entry: "[::1]x", err: "unexpected text after the IPv6 literal"},
		{name: "bad-ipv4", entry: "1.2.3.456", err: numericNm},
		{name: "bad-char", entry: "exa!mple.com", err: `invalid character '!' in host`},
		{name: "long-label", entry: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com", err: "label longer than 63 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePattern(tt.entry, tt.deny)
			if tt.err != "" {
				var pe *PatternError
				if !errors.As(err, &pe) {
					t.Fatalf("ParsePattern(%q) = %v, %v; want PatternError %q", tt.entry, p, err, tt.err)
				}
				if pe.Reason != tt.err || pe.Entry != tt.entry {
					t.Fatalf("ParsePattern(%q) reason\n got %q\nwant %q", tt.entry, pe.Reason, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePattern(%q): %v", tt.entry, err)
			}
			if p.String() != tt.want || p.Kind != tt.kind || p.Port != tt.port || p.Raw != tt.entry {
				t.Fatalf("ParsePattern(%q) = %+v (%s); want %s kind %d port %d", tt.entry, p, p, tt.want, tt.kind, tt.port)
			}
		})
	}
}

func TestPatternMatch(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		host    string
		port    int
		want    bool
	}{
		{"exact", "example.com", "example.com", 443, true},
		{"exact-case", "example.com", "EXAMPLE.COM", 443, true},
		{"exact-trailing-dot", "example.com", "example.com.", 443, true},
		{"exact-not-sub", "example.com", "a.example.com", 443, false},
		{"exact-not-suffix-trick", "example.com", "badexample.com", 443, false},
		{"exact-port-ok", "example.com:443", "example.com", 443, true},
		{"exact-port-other", "example.com:443", "example.com", 80, false},
		{"sub-one", "*.example.com", "a.example.com", 443, true},
		{"sub-deep", "*.example.com", "a.b.c.example.com", 443, true},
		{"sub-not-apex", "*.example.com", "example.com", 443, false},
		{"sub-not-suffix-trick", "*.example.com", "aexample.com", 443, false},
		{"sub-not-other", "*.example.com", "example.com.evil.net", 443, false},
		{"sub-port", "*.example.com:8443", "x.example.com", 8443, true},
		{"sub-port-other", "*.example.com:8443", "x.example.com", 443, false},
		{"sub-not-ip", "*.example.com", "127.0.0.1", 443, false},
		{"mid", "bedrock.*.amazonaws.com", "bedrock.us-east-1.amazonaws.com", 443, true},
		{"mid-case", "bedrock.*.amazonaws.com", "Bedrock.US-EAST-1.amazonaws.com.", 443, true},
		{"mid-two-labels", "bedrock.*.amazonaws.com", "bedrock.evil.attacker.amazonaws.com", 443, false},
		{"mid-empty-label", "bedrock.*.amazonaws.com", "bedrock..amazonaws.com", 443, false},
		{"mid-missing-label", "bedrock.*.amazonaws.com", "bedrock.amazonaws.com", 443, false},
		{"mid-prefix", "bedrock.*.amazonaws.com", "x.bedrock.us-east-1.amazonaws.com", 443, false},
		{"mid-other-prefix", "bedrock.*.amazonaws.com", "s3.us-east-1.amazonaws.com", 443, false},
		{"ip", "127.0.0.1", "127.0.0.1", 80, true},
		{"ip-short", "127.0.0.1", "127.1", 80, true},
		{"ip-integer", "127.0.0.1", "2130706433", 80, true},
		{"ip-hex", "127.0.0.1", "0x7f.1", 80, true},
		{"ip-octal", "127.0.0.1", "0177.0.0.1", 80, true},
		{"ip-mapped", "127.0.0.1", "[::ffff:127.0.0.1]", 80, true},
		{"ip-mapped-unbracketed", "127.0.0.1", "::ffff:7f00:1", 80, true},
		{"ip-trailing-dot", "127.0.0.1", "127.0.0.1.", 80, true},
		{"ip-other", "127.0.0.1", "127.0.0.2", 80, false},
		{"ip-not-name", "127.0.0.1", "localhost", 80, false},
		{"ipv6", "[::1]", "::1", 80, true},
		{"ipv6-bracketed", "[::1]", "[::1]", 80, true},
		{"ipv6-zone", "[fe80::1]", "[fe80::1%lo]", 80, true},
		{"ipv6-long-form", "[2001:db8::1]:443", "[2001:0db8:0:0:0:0:0:1]", 443, true},
		{"ipv6-port-other", "[2001:db8::1]:443", "[2001:db8::1]", 80, false},
		{"any", "*", "anything.example", 1, true},
		{"any-ip", "*", "10.1.2.3", 1, true},
		{"any-port", "*:22", "github.com", 22, true},
		{"any-port-other", "*:22", "github.com", 443, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePattern(tt.pattern, true)
			if err != nil {
				t.Fatal(err)
			}
			canon, ip, err := CanonicalHost(tt.host)
			got := err == nil && p.Match(canon, ip, tt.port) // a malformed host matches nothing
			if got != tt.want {
				t.Fatalf("%q.Match(%q, %d) = %v, want %v", tt.pattern, tt.host, tt.port, got, tt.want)
			}
		})
	}
}

func TestCanonicalHost(t *testing.T) {
	tests := []struct {
		in, want string
		isIP     bool
		bad      bool
	}{
		{in: "Example.COM.", want: "example.com"},
		{in: "127.1", want: "127.0.0.1", isIP: true},
		{in: "2130706433", want: "127.0.0.1", isIP: true},
		{in: "0x7f000001", want: "127.0.0.1", isIP: true},
		{in: "0x7f.0.0.1", want: "127.0.0.1", isIP: true},
		{in: "10.0x10000", want: "10.1.0.0", isIP: true},
		{in: "[::ffff:169.254.169.254]", want: "169.254.169.254", isIP: true},
		{in: "[FD00:EC2::254]", want: "fd00:ec2::254", isIP: true},
		{in: "256.1.1.1", bad: true},
		{in: "4294967296", bad: true},
		{in: "", bad: true},
		{in: ".", bad: true},
		{in: "a b.com", bad: true},
		{in: "evil.com\r\nX: y", bad: true},
		{in: "[::1", bad: true},
		{in: "[1.2.3.4]", bad: true},
	}
	for _, tt := range tests {
		got, ip, err := CanonicalHost(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("CanonicalHost(%q) = %q, want error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want || ip.IsValid() != tt.isIP {
			t.Errorf("CanonicalHost(%q) = %q, %v, %v; want %q ip=%v", tt.in, got, ip, err, tt.want, tt.isIP)
		}
	}
}

func TestCandidatesEmbedded(t *testing.T) {
	for in, want := range map[string]string{
		"::ffff:127.0.0.1":          "loopback",
		"::127.0.0.1":               "loopback",
		"64:ff9b::7f00:1":           "loopback",
		"64:ff9b:1::a00:1":          "private",
		"2002:7f00:1::1":            "loopback",
		"2002:a9fe:a9fe::1":         "cloud metadata",
		"2001:0:a00:1::":            "private",  // Teredo server 10.0.0.1
		"2001:0:808:808::80ff:fffe": "loopback", // Teredo client ^7f000001
		"64:ff9b::a9fe:a9fe":        "cloud metadata",
		"8.8.8.8":                   "",
		"2606:4700::1111":           "",
		"100.64.0.1":                "carrier-grade NAT",
		"fd12::1":                   "private",
		"fe80::1":                   "link-local",
		"ff02::1":                   "multicast",
		"0.0.0.0":                   "unspecified",
		"::":                        "unspecified",
		"255.255.255.255":           "reserved",
		"172.31.255.255":            "private",
		"172.32.0.0":                "",
	} {
		if got := ClassifyAddr(netip.MustParseAddr(in)); got != want {
			t.Errorf("ClassifyAddr(%s) = %q, want %q", in, got, want)
		}
	}
}
