package credential

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/iotest"
)

func rep(kv ...string) *Replacer {
	var ps []pair
	for i := 0; i < len(kv); i += 2 {
		ps = append(ps, pair{from: []byte(kv[i]), to: []byte(kv[i+1])})
	}
	return newReplacer(ps)
}

func TestReplacerBytes(t *testing.T) {
	for _, tc := range []struct {
		r       *Replacer
		in, out string
	}{
		{rep("abc", "X", "bcd", "Y"), "abcd", "Xd"},         // earliest first
		{rep("ab", "1", "abc", "2"), "abcab", "21"},         // then longest
		{rep("aa", "b"), "aaaaa", "bba"},                    // no overlap, left to right
		{rep("a", "aa"), "aXa", "aaXaa"},                    // output not rescanned
		{rep("x", "1", "xy", "2", "y", "3"), "xyyx", "231"}, // one-byte patterns
		{rep("tok", "TOK"), "", ""},                         // empty
		{rep("tok", "TOK"), "to", "to"},                     // prefix at the end
		{rep("", "oops", "k", "K"), "kk", "KK"},             // empty pattern dropped
		{rep("k", "first", "k", "second"), "k", "first"},    // first of equal patterns wins
		{nil, "abc", "abc"},                                 // nil replaces nothing
	} {
		if got := tc.r.String(tc.in); got != tc.out {
			t.Errorf("%q → %q, want %q", tc.in, got, tc.out)
		}
	}
}

// chunkReader returns its data n bytes at a time.
type chunkReader struct {
	b []byte
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[n:]
	return n, nil
}

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReaderSplitEverywhere(t *testing.T) {
	r := rep("SECRET-one-1234", "sentinel-one-XY", "ab", "Z", "abab", "W", "one", "1", "S", "s")
	in := "xSECRET-one-1234abababSECRET-one-123SECRET-one-1234ababaSone-SECRET-one-1234"
	want := r.String(in)
	if want == in {
		t.Fatal("nothing replaced")
	}
	for n := 1; n <= len(in)+1; n++ {
		if got := readAll(t, r.Reader(&chunkReader{[]byte(in), n})); got != want {
			t.Fatalf("reads of %d: %q, want %q", n, got, want)
		}
	}
	for name, src := range map[string]io.Reader{
		"one byte": iotest.OneByteReader(strings.NewReader(in)),
		"half":     iotest.HalfReader(strings.NewReader(in)),
		"data+err": iotest.DataErrReader(strings.NewReader(in)),
	} {
		if got := readAll(t, r.Reader(src)); got != want {
			t.Fatalf("%s: %q, want %q", name, got, want)
		}
	}
	// The caller reading one byte at a time.
	var got []byte
	rr := r.Reader(strings.NewReader(in))
	for {
		var b [1]byte
		n, err := rr.Read(b[:])
		got = append(got, b[:n]...)
		if err == io.EOF {
			break
		}
	}
	if string(got) != want {
		t.Fatalf("1-byte reads: %q, want %q", got, want)
	}
}

func TestReaderLarge(t *testing.T) {
	r := rep("REALVALUE-0123456789", "sentinel-abcdefghijk", "REAL", "fake")
	rnd := rand.New(rand.NewPCG(1, 2))
	body := make([]byte, 1<<20+7)
	for i := range body {
		body[i] = "REALVALUE-0123456789 xyz"[rnd.IntN(24)]
	}
	// A match across every 64 KiB read boundary and at both ends.
	for off := 0; off+20 < len(body); off += readChunk {
		for _, d := range []int{-19, -10, -1, 0} {
			if off+d >= 0 {
				copy(body[off+d:], "REALVALUE-0123456789")
			}
		}
	}
	copy(body[len(body)-20:], "REALVALUE-0123456789")
	want := string(r.Bytes(body))
	for _, src := range []io.Reader{bytes.NewReader(body), iotest.HalfReader(bytes.NewReader(body)), &chunkReader{body, 4093}} {
		if got := readAll(t, r.Reader(src)); got != want {
			t.Fatal("streamed output differs from Bytes")
		}
	}
	if strings.Contains(want, "REAL") {
		t.Fatal("a match survived")
	}
}

func TestReaderNoProgress(t *testing.T) {
	_, err := io.ReadAll(rep("a", "b").Reader(iotest.ErrReader(nil)))
	if err != io.ErrNoProgress {
		t.Fatalf("err = %v", err)
	}
}

// encSet is a Set with one secret whose real value needs escaping in
// every text form, and its same-shape sentinel.
func encSet(t *testing.T, hosts HostMatcher) (*Set, string, string) {
	t.Helper()
	real := "p@ss/w0rd+Zk3m&Q9v<L2x>R7 pT4w=N8cB\"é\\"
	sent := string(Mint([]byte(real)))
	if len(sent) != len(real) {
		t.Fatalf("sentinel %q not same-shape", sent)
	}
	return NewSet([]Secret{{Name: "env TOKEN", Real: []byte(real), Sentinel: []byte(sent), Hosts: hosts}}, Options{}), real, sent
}

func TestIngressEncodings(t *testing.T) {
	s, real, sent := encSet(t, nil)
	in := s.Ingress()
	for name, f := range map[string]func(string) string{
		"query":       url.QueryEscape,
		"path":        url.PathEscape,
		"query lower": func(x string) string { return string(lowerHex([]byte(url.QueryEscape(x)))) },
		"json":        func(x string) string { b, _ := json.Marshal(x); return string(b) },
		"json slash": func(x string) string {
			b, _ := json.Marshal(x)
			return strings.ReplaceAll(string(b), "/", `\/`)
		},
		"json ascii": func(x string) string { return `"` + string(asciiJSON(jsonEscape([]byte(x), false))) + `"` },
		"hex":        func(x string) string { return hex.EncodeToString([]byte(x)) },
		"HEX":        func(x string) string { return strings.ToUpper(hex.EncodeToString([]byte(x))) },
	} {
		body := "{" + f(real) + "}"
		if got, want := in.String(body), "{"+f(sent)+"}"; got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	var v struct{ A string }
	if err := json.Unmarshal([]byte(in.String(`{"A":`+string(mustJSON(t, real))+`}`)), &v); err != nil || v.A != sent {
		t.Errorf("json round trip: %q %v", v.A, err)
	}
	// Base64 at every alignment inside a longer base64 text, both
	// alphabets, padded or not.
	for pre := range 6 {
		for post := range 4 {
			plain := strings.Repeat("u", pre) + ":" + real + strings.Repeat("v", post)
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
				e := enc.EncodeToString([]byte(plain))
				got := in.String("Basic " + e + "\n")
				dec, err := enc.DecodeString(strings.TrimSuffix(strings.TrimPrefix(got, "Basic "), "\n"))
				if err != nil || len(got) != len(e)+7 {
					t.Fatalf("pre %d post %d: %q no longer decodes: %v", pre, post, got, err)
				}
				if bytes.Contains(dec, []byte(real[2:len(real)-2])) || got == "Basic "+e+"\n" {
					t.Fatalf("pre %d post %d: real value survives in %q", pre, post, dec)
				}
			}
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEgressEncodings(t *testing.T) {
	s, real, sent := encSet(t, func(string, int) bool { return true })
	eg := s.Egress("api.example.com", 443, true)
	for _, f := range []func(string) string{url.QueryEscape, url.PathEscape, func(x string) string { return string(mustJSON(t, x)) }} {
		if got, want := eg.String("x="+f(sent)), "x="+f(real); got != want {
			t.Errorf("%q, want %q", got, want)
		}
	}
}

func TestHeaderBasic(t *testing.T) {
	s, real, sent := encSet(t, func(string, int) bool { return true })
	basic := func(enc *base64.Encoding, cred string) string {
		return "Basic " + enc.EncodeToString([]byte("user:"+cred))
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding} {
		h := http.Header{"Authorization": {basic(enc, sent)}, "Proxy-Authorization": {"basic " + enc.EncodeToString([]byte(sent+":x"))}, "X-Other": {"Bearer " + sent}}
		s.Egress("h", 443, true).Header(h)
		if got, want := h.Get("Authorization"), basic(enc, real); got != want {
			t.Errorf("egress Authorization %q, want %q", got, want)
		}
		if got, want := h.Get("Proxy-Authorization"), "basic "+enc.EncodeToString([]byte(real+":x")); got != want {
			t.Errorf("egress Proxy-Authorization %q, want %q", got, want)
		}
		if got := h.Get("X-Other"); got != "Bearer "+real {
			t.Errorf("egress X-Other %q", got)
		}
		s.Ingress().Header(h)
		if got, want := h.Get("Authorization"), basic(enc, sent); got != want {
			t.Errorf("ingress Authorization %q, want %q", got, want)
		}
	}
	h := http.Header{"Authorization": {"Basic !!notbase64"}}
	s.Ingress().Header(h)
	if h.Get("Authorization") != "Basic !!notbase64" {
		t.Errorf("bad base64 changed: %q", h.Get("Authorization"))
	}
	// A name holding a value is rewritten too.
	h = http.Header{"X-Tok3nvalue": {"a", "Tok3nvalue"}}
	rep("Tok3nvalue", "Sent1value").Header(h)
	if got := h.Values("X-Sent1value"); len(h) != 1 || len(got) != 2 || got[1] != "Sent1value" {
		t.Errorf("header names: %v", h)
	}
}

// TestReaderMatchesBytes streams random texts over a small alphabet,
// full of overlapping matches, through random read sizes.
func TestReaderMatchesBytes(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "abc"[rnd.IntN(3)]
		}
		return string(b)
	}
	for range 300 {
		var kv []string
		for range 1 + rnd.IntN(5) {
			kv = append(kv, word(1+rnd.IntN(6)), word(rnd.IntN(8)))
		}
		r := rep(kv...)
		in := word(rnd.IntN(300))
		want := r.String(in)
		if naive := naiveReplace(kv, in); want != naive {
			t.Fatalf("patterns %q, input %q: Bytes %q, want %q", kv, in, want, naive)
		}
		src := &chunkReader{[]byte(in), 1 + rnd.IntN(9)}
		if got := readAll(t, r.Reader(src)); got != want {
			t.Fatalf("patterns %q, input %q, reads of %d:\n got %q\nwant %q", kv, in, src.n, got, want)
		}
	}
}

// naiveReplace is the Replacer's rule written plainly: at each position
// the longest pattern that matches there (the first of equal ones).
func naiveReplace(kv []string, in string) string {
	var out strings.Builder
	for i := 0; i < len(in); {
		best := -1
		for k := 0; k < len(kv); k += 2 {
			if strings.HasPrefix(in[i:], kv[k]) && (best < 0 || len(kv[k]) > len(kv[best])) {
				best = k
			}
		}
		if best < 0 {
			out.WriteByte(in[i])
			i++
			continue
		}
		out.WriteString(kv[best+1])
		i += len(kv[best])
	}
	return out.String()
}

// TestReaderDoesNotHoldBack checks that bytes that cannot begin a match
// are returned at once, without waiting for the source's next read.
func TestReaderDoesNotHoldBack(t *testing.T) {
	r := newReplacer([]pair{{from: []byte("secret-value-123"), to: []byte("sentinel-abc-456")}})
	pr, pw := io.Pipe()
	rd := r.Reader(pr)
	go pw.Write([]byte("data: first\n"))
	buf := make([]byte, 64)
	n, err := rd.Read(buf)
	if err != nil || string(buf[:n]) != "data: first\n" {
		t.Fatalf("Read = %q, %v; want the whole line at once", buf[:n], err)
	}
	// A tail that may begin the secret is held until it is decided.
	go pw.Write([]byte("x secret-"))
	n, _ = rd.Read(buf)
	if string(buf[:n]) != "x " {
		t.Fatalf("Read = %q; want %q (the possible start of a match held)", buf[:n], "x ")
	}
	go func() { pw.Write([]byte("value-123 y")); pw.Close() }()
	rest, _ := io.ReadAll(rd)
	if string(rest) != "sentinel-abc-456 y" {
		t.Fatalf("rest = %q", rest)
	}
}

// TestHeaderNameAnyCase: a real value in a header name is replaced
// whatever case the name arrives in (HTTP/2 lower-cases names).
func TestHeaderNameAnyCase(t *testing.T) {
	r := newReplacer([]pair{{from: []byte("ghp_AbCdEf0123456789"), to: []byte("ghp_XyZwVu9876543210")}})
	h := http.Header{"X-Ghp_abcdef0123456789": {"1"}, "X-Other": {"2"}}
	r.Header(h)
	for k := range h {
		if strings.Contains(strings.ToLower(k), "abcdef0123456789") {
			t.Fatalf("header name %q still holds the value", k)
		}
	}
	if len(h) != 2 || h.Get("X-Other") != "2" {
		t.Fatalf("headers %v", h)
	}
}
