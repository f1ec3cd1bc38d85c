package credential

import (
	"bytes"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestSetEgress(t *testing.T) {
	only := func(h string) HostMatcher { return func(host string, _ int) bool { return host == h } }
	s := NewSet([]Secret{
		{Name: "env A", Real: []byte("realA-0123456789abcdef"), Sentinel: []byte("sentA-9876543210fedcba"), Hosts: only("a.example")},
		{Name: "env B", Real: []byte("realB-0123456789abcdef"), Sentinel: []byte("sentB-9876543210fedcba")}, // no Hosts
	}, Options{})
	body := "sentA-9876543210fedcba sentB-9876543210fedcba"
	if got := s.Egress("a.example", 443, true).String(body); got != "realA-0123456789abcdef sentB-9876543210fedcba" {
		t.Errorf("a.example: %q", got)
	}
	if s.Egress("a.example", 443, true) != s.Egress("a.example", 8443, true) {
		t.Error("the replacer of one subset of secrets is made again")
	}
	for _, tc := range []struct {
		host string
		tls  bool
	}{{"b.example", true}, {"a.example", false}} {
		if r := s.Egress(tc.host, 443, tc.tls); r != nil {
			t.Errorf("Egress(%s, tls %v) = %v, want nil", tc.host, tc.tls, r)
		}
	}
	// A secret without Hosts is injected nowhere, plaintext allowed or not.
	b := NewSet([]Secret{{Name: "env B", Real: []byte("r"), Sentinel: []byte("s")}}, Options{AllowPlaintext: true})
	if r := b.Egress("a.example", 80, false); r != nil {
		t.Errorf("nil Hosts: Egress = %v", r)
	}
	p := NewSet([]Secret{{Name: "x", Real: []byte("realvalue1"), Sentinel: []byte("sentinel01"), Hosts: only("a.example")}}, Options{AllowPlaintext: true})
	if got := p.Egress("a.example", 80, false).String("sentinel01"); got != "realvalue1" {
		t.Errorf("AllowPlaintext: %q", got)
	}
	if got := s.Names(); !slices.Equal(got, []string{"env A", "env B"}) {
		t.Errorf("Names = %q", got)
	}
	if got := s.Scrub("error: realB-0123456789abcdef"); got != "error: sentB-9876543210fedcba" {
		t.Errorf("Scrub = %q", got)
	}
	var nilSet *Set
	if nilSet.Names() != nil || nilSet.Scrub("x") != "x" || nilSet.Egress("a", 1, true) != nil {
		t.Error("nil Set")
	}
}

// benchSet is 5 secrets of typical shapes.
func benchSet() *Set {
	var secrets []Secret
	for _, real := range []string{
		"ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5",
		"glpat-xY3_zW9-aBcDeFgHiJkL",
		"AKIAIOSFODNN7EXAMPLE",
		"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		"xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
	} {
		secrets = append(secrets, Secret{Name: real[:4], Real: []byte(real), Sentinel: Mint([]byte(real))})
	}
	return NewSet(secrets, Options{})
}

// benchBody is n bytes of JSON-like text with base64 in it and a real
// value every 64 KiB.
func benchBody(n int) []byte {
	rnd := rand.New(rand.NewPCG(3, 4))
	const words = `{"id":1234,"name":"build","status":"ok","url":"https://example.com/a/b?c=d","data":"QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3"} `
	var b bytes.Buffer
	for b.Len() < n {
		if rnd.IntN(500) == 0 {
			b.WriteString("AKIAIOSFODNN7EXAMPLE")
		}
		b.WriteString(words[rnd.IntN(40):])
	}
	return b.Bytes()[:n]
}

func TestBenchBodyScrubbed(t *testing.T) {
	body := benchBody(1 << 20)
	in := benchSet().Ingress()
	if !in.LengthPreserving() {
		t.Fatal("same-shape sentinels in every form: the length must be kept")
	}
	out, err := io.ReadAll(in.Reader(bytes.NewReader(body)))
	if err != nil || len(out) != len(body) || strings.Contains(string(out), "AKIAIOSFODNN7EXAMPLE") || !strings.Contains(string(body), "AKIAIOSFODNN7EXAMPLE") {
		t.Fatalf("len %d→%d, err %v", len(body), len(out), err)
	}
}

// BenchmarkIngressReader is the streaming rate of the Ingress replacer
// (5 secrets, all their encoded forms) over a 16 MiB body.
func BenchmarkIngressReader(b *testing.B) {
	body := benchBody(16 << 20)
	in := benchSet().Ingress()
	buf := make([]byte, 32<<10)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := io.CopyBuffer(io.Discard, in.Reader(bytes.NewReader(body)), buf); err != nil {
			b.Fatal(err)
		}
	}
}
