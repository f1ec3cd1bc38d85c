package netrule

import (
	"strings"
	"testing"
)

var fuzzSeeds = []string{
	"example.com", "*.example.com", "bedrock.*.amazonaws.com", "127.0.0.1:8000", "[::1]:443",
	"*", "*:22", "*.com", "localhost", "2130706433", "0x7f.1", "[::ffff:127.0.0.1]", "a.b.c:65535",
	"EXAMPLE.COM.", "*.", "[", "]:1", "0x", "0x.0x", "::1", "1.2.3.4.5", "x.*.y.z", "*.co.uk",
}

// FuzzParsePattern checks that ParsePattern never panics and that every
// accepted pattern re-parses from its String() form to the same Pattern.
func FuzzParsePattern(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, entry string, deny bool) {
		p, err := ParsePattern(entry, deny)
		if err != nil {
			if p != (Pattern{}) {
				t.Fatalf("error %v with non-zero pattern %+v", err, p)
			}
			return
		}
		s := p.String()
		q, err := ParsePattern(s, deny)
		if err != nil {
			t.Fatalf("%q parsed to %q, which does not re-parse: %v", entry, s, err)
		}
		q.Raw = p.Raw
		if q != p {
			t.Fatalf("%q: round trip through %q gives %+v, want %+v", entry, s, q, p)
		}
		if q.String() != s {
			t.Fatalf("String not stable: %q then %q", s, q.String())
		}
		if p.Kind != KindAny && p.Kind != KindIP && p.Host != strings.ToLower(p.Host) {
			t.Fatalf("host not lower-case: %q", p.Host)
		}
	})
}

// FuzzDecide checks that Decide never panics, that a deny entry always
// beats an allow entry for the same host, and that the host each pattern
// is built from matches it.
func FuzzDecide(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, "example.com", uint16(443))
	}
	f.Add("*.example.com", "a.b.example.com", uint16(80))
	f.Add("127.0.0.1", "127.1", uint16(80))
	f.Add("169.254.169.254", "2852039166", uint16(80))
	f.Fuzz(func(t *testing.T, entry, host string, port uint16) {
		allowOnly, err := Compile(Rules{Allowed: []string{entry}})
		if err != nil {
			return
		}
		d := allowOnly.Decide(host, int(port))
		if d.Allowed && d.Reason != "" {
			t.Fatalf("allowed with reason %q", d.Reason)
		}
		if !d.Allowed && d.Reason == "" {
			t.Fatalf("refused without reason: %+v", d)
		}
		if d.Allowed {
			if _, ip, err := CanonicalHost(host); err != nil || isMetadataHost(d.Host, ip) {
				t.Fatalf("allowed a malformed or metadata host %q: %+v", host, d)
			}
		}
		both := MustCompile(Rules{Allowed: []string{entry}, Denied: []string{entry}})
		if bd := both.Decide(host, int(port)); bd.Allowed {
			t.Fatalf("deny entry %q did not beat the same allow entry for %q: %+v", entry, host, bd)
		}
	})
}
