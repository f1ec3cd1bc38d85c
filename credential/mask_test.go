package credential

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
)

func b64json(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// realJWT is a token as an issuer would make it (the signature is not
// checked by anything here).
func realJWT(t *testing.T, payload map[string]any) string {
	return b64json(t, map[string]any{"alg": "RS256", "typ": "JWT", "kid": "k1"}) + "." + b64json(t, payload) + ".c2lnbmF0dXJlLWJ5dGVzLW9mLXRoZS1pc3N1ZXI"
}

func decodePart(t *testing.T, tok string, i int) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q has %d segments", tok, len(parts))
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		t.Fatalf("segment %d of %q: %v", i, tok, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("segment %d of %q: %v", i, tok, err)
	}
	return m
}

func TestMaskWhole(t *testing.T) {
	real := []byte("ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5")
	m, err := MaskValue(real, Mask{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Values) != 1 || !bytes.Equal(m.Values[0].Real, real) || !bytes.Equal(m.Values[0].Sentinel, m.Shown) || bytes.Equal(m.Shown, real) {
		t.Fatalf("MaskValue = %+v", m)
	}
}

// TestMaskWholeTrimsSpace: a token file's trailing newline is not part of
// the secret, so the sentinel a reader sends without it still matches.
func TestMaskWholeTrimsSpace(t *testing.T) {
	m, err := MaskValue([]byte("  glpat-aB3dE5fG7hI9jK1lM3nO\n"), Mask{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Values) != 1 || string(m.Values[0].Real) != "glpat-aB3dE5fG7hI9jK1lM3nO" {
		t.Fatalf("Values = %+v, want the token without the white space", m.Values)
	}
	if want := "  " + string(m.Values[0].Sentinel) + "\n"; string(m.Shown) != want {
		t.Fatalf("Shown = %q, want %q", m.Shown, want)
	}
	if m, _ := MaskValue([]byte(" \n"), Mask{}); len(m.Values) != 0 {
		t.Fatalf("white space alone masked: %+v", m)
	}
}

func TestMaskExtract(t *testing.T) {
	in := "host=db1 password=s3cr3t-Value-One1 user=a\nhost=db2 password=An0ther-Secret-Two2\nhost=db3 password=s3cr3t-Value-One1\npassword=\nnote: s3cr3t-Value-One1 again"
	re := regexp.MustCompile(`password=(\S*)`)
	m, err := MaskValue([]byte(in), Mask{Extract: re})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Values) != 2 {
		t.Fatalf("Values = %d, want 2 (distinct captures; the empty one skipped)", len(m.Values))
	}
	s1, s2 := string(m.Values[0].Sentinel), string(m.Values[1].Sentinel)
	want := "host=db1 password=" + s1 + " user=a\nhost=db2 password=" + s2 + "\nhost=db3 password=" + s1 + "\npassword=\nnote: s3cr3t-Value-One1 again"
	if string(m.Shown) != want {
		t.Fatalf("Shown = %q\nwant    %q", m.Shown, want)
	}
	d, err := MaskValue([]byte(in), Mask{Extract: re, MaskDuplicates: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(d.Shown), "s3cr3t") || !strings.HasSuffix(string(d.Shown), string(d.Values[0].Sentinel)+" again") {
		t.Fatalf("MaskDuplicates: Shown = %q", d.Shown)
	}
}

func TestMaskExtractLongestDuplicateFirst(t *testing.T) {
	in := "a=(abc12345XYZ) b=(abc12345) c: abc12345XYZ"
	d, err := MaskValue([]byte(in), Mask{Extract: regexp.MustCompile(`\((\w+)\)`), MaskDuplicates: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(d.Shown), "XYZ") || strings.Contains(string(d.Shown), "abc12345") {
		t.Fatalf("Shown = %q", d.Shown)
	}
}

func TestMaskExtractErrorsAndNoMatch(t *testing.T) {
	if _, err := MaskValue([]byte("x"), Mask{Extract: regexp.MustCompile(`token: \S+`)}); !errors.Is(err, ErrNoGroup) {
		t.Fatalf("no group: err = %v", err)
	}
	if _, err := MaskValue([]byte("x"), Mask{MaskClaims: []string{"sub"}}); !errors.Is(err, ErrClaimsWithoutJWT) {
		t.Fatalf("claims without jwt: err = %v", err)
	}
	m, err := MaskValue([]byte("nothing here"), Mask{Extract: regexp.MustCompile(`token: (\S+)?`)})
	if err != nil || len(m.Values) != 0 || string(m.Shown) != "nothing here" {
		t.Fatalf("no match: %+v, %v", m, err)
	}
	// A match in which group 1 takes no part is skipped, the others masked.
	m, err = MaskValue([]byte("token: \ntoken: abcdefghijklmnop1234"), Mask{Extract: regexp.MustCompile(`token: (\w+)?`)})
	if err != nil || len(m.Values) != 1 || strings.Contains(string(m.Shown), "abcdefghijklmnop1234") {
		t.Fatalf("optional group: %+v, %v", m, err)
	}
}

func TestMaskJWT(t *testing.T) {
	tok := realJWT(t, map[string]any{"sub": "user-42", "exp": 1893456000, "iat": 1700000000, "email": "a@example.com"})
	in := "Authorization: Bearer " + tok + "\nnot a token: eyJub3Q.eyJub3Q.x\n"
	m, err := MaskValue([]byte(in), Mask{JWT: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Values) != 1 || string(m.Values[0].Real) != tok {
		t.Fatalf("Values = %+v", m.Values)
	}
	fake := string(m.Values[0].Sentinel)
	if want := "Authorization: Bearer " + fake + "\nnot a token: eyJub3Q.eyJub3Q.x\n"; string(m.Shown) != want {
		t.Fatalf("Shown = %q\nwant    %q", m.Shown, want)
	}
	if _, ok := verifyJWT([]byte(fake)); !ok {
		t.Fatalf("fake %q does not verify", fake)
	}
	h, p := decodePart(t, fake, 0), decodePart(t, fake, 1)
	if h["alg"] != "HS256" || h["typ"] != "JWT" || len(h) != 2 {
		t.Fatalf("fake header %v", h)
	}
	if p["exp"] != float64(1893456000) || p["iat"] != float64(1700000000) || p["sub"] != nil || p["email"] != nil {
		t.Fatalf("fake payload %v", p)
	}
	if jti, _ := p["jti"].(string); len(jti) < 20 {
		t.Fatalf("fake jti %v", p["jti"])
	}
	if strings.Contains(fake, strings.Split(tok, ".")[2]) {
		t.Fatal("fake keeps the real signature")
	}
	// No time claims: exp far in the future.
	m, _ = MaskValue([]byte(realJWT(t, map[string]any{"sub": "x"})), Mask{JWT: true})
	if p := decodePart(t, string(m.Shown), 1); p["exp"] != float64(9999999999) {
		t.Fatalf("fake payload %v", p)
	}
	// A payload that is not an object is no JWT.
	notObj := b64json(t, map[string]any{"alg": "HS256"}) + "." + b64json(t, []int{1}) + ".sig"
	if m, _ := MaskValue([]byte(notObj), Mask{JWT: true}); len(m.Values) != 0 {
		t.Fatalf("array payload masked: %+v", m)
	}
	noAlg := b64json(t, map[string]any{"typ": "JWT"}) + "." + b64json(t, map[string]any{"a": 1}) + ".sig"
	if m, _ := MaskValue([]byte(noAlg), Mask{JWT: true}); len(m.Values) != 0 {
		t.Fatalf("header without alg masked: %+v", m)
	}
}

func TestMaskJWTClaims(t *testing.T) {
	tok := realJWT(t, map[string]any{"sub": "user-42", "api_key": "Zk3mQ9vL2xR7pT4wN8cB", "n": 5, "exp": 1893456000})
	m, err := MaskValue([]byte("TOKEN="+tok), Mask{JWT: true, MaskClaims: []string{"api_key", "n", "missing"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Values) != 2 || string(m.Values[0].Real) != tok || string(m.Values[1].Real) != "Zk3mQ9vL2xR7pT4wN8cB" {
		t.Fatalf("Values = %q", m.Values)
	}
	fake := string(m.Values[0].Sentinel)
	if string(m.Shown) != "TOKEN="+fake {
		t.Fatalf("Shown = %q", m.Shown)
	}
	if strings.Split(fake, ".")[0] != strings.Split(tok, ".")[0] {
		t.Fatal("header segment not kept")
	}
	if strings.Split(fake, ".")[2] == strings.Split(tok, ".")[2] {
		t.Fatal("real signature kept")
	}
	p := decodePart(t, fake, 1)
	if p["api_key"] != string(m.Values[1].Sentinel) || p["sub"] != "user-42" || p["n"] != float64(5) || p["exp"] != float64(1893456000) {
		t.Fatalf("payload %v", p)
	}
	// None of the claims present: nothing masked (the caller's no-match).
	if m, _ := MaskValue([]byte(tok), Mask{JWT: true, MaskClaims: []string{"n"}}); len(m.Values) != 0 || string(m.Shown) != tok {
		t.Fatalf("no string claim: %+v", m)
	}
}

func TestMaskClaimsKeepsOtherBytes(t *testing.T) {
	payload := []byte(`{ "b" : [1, 2] , "k":"v4lue-Secret-123456", "z": {"k":"inner"}, "k" :"v4lue-Secret-123456" }`)
	tok := []byte(b64json(t, map[string]any{"alg": "ES256"}) + "." + base64.RawURLEncoding.EncodeToString(payload) + ".sig")
	p, ok := verifyJWT(tok)
	if !ok {
		t.Fatal("does not verify")
	}
	fake, claims, ok := maskClaims(tok, p, []string{"k"})
	if !ok || len(claims) != 1 {
		t.Fatalf("maskClaims: %v %v", ok, claims)
	}
	got, _ := base64.RawURLEncoding.DecodeString(strings.Split(string(fake), ".")[1])
	s := `"` + string(claims[0].Sentinel) + `"`
	if want := `{ "b" : [1, 2] , "k":` + s + `, "z": {"k":"inner"}, "k" :` + s + ` }`; string(got) != want {
		t.Fatalf("payload %s\nwant    %s", got, want)
	}
}

func TestMaskJWTUnsecured(t *testing.T) {
	// alg "none": the signature segment is empty, and the token still one.
	tok := b64json(t, map[string]any{"alg": "none"}) + "." + b64json(t, map[string]any{"sub": "x", "nbf": 1}) + "."
	m, err := MaskValue([]byte(tok+" rest"), Mask{JWT: true})
	if err != nil || len(m.Values) != 1 || string(m.Values[0].Real) != tok {
		t.Fatalf("%+v %v", m, err)
	}
	if p := decodePart(t, string(m.Values[0].Sentinel), 1); p["nbf"] != float64(1) || p["exp"] != nil {
		t.Fatalf("payload %v", p)
	}
}
