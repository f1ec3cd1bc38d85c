package mitm

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"software.sslmate.com/src/go-pkcs12"
)

// testCert returns a self-signed CA certificate named cn, PEM-encoded.
func testCert(t *testing.T, cn string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// names returns the subjects' common names of the certificates in b, in order.
func names(t *testing.T, b []byte) []string {
	t.Helper()
	var out []string
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return out
		}
		if blk.Type != "CERTIFICATE" {
			t.Fatalf("bundle holds a %s block", blk.Type)
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c.Subject.CommonName)
	}
}

const keyBlock = "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcw==\n-----END PRIVATE KEY-----\n"

func TestHostRootsOrderAndSources(t *testing.T) {
	d := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(d, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := write("first.crt", append([]byte(keyBlock), testCert(t, "first")...))
	second := write("second.crt", testCert(t, "second"))
	certDir := filepath.Join(d, "dir")
	os.Mkdir(certDir, 0o755)
	os.WriteFile(filepath.Join(certDir, "a.pem"), testCert(t, "dir-a"), 0o644)
	os.WriteFile(filepath.Join(certDir, "b.txt"), testCert(t, "dir-ignored"), 0o644)
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	// macOS puts its keychain's roots first; the files follow.
	sys := len(names(t, systemRoots(context.Background())))

	// The first file that exists wins; the later ones are not read.
	got := names(t, hostRoots(getenv, []string{filepath.Join(d, "missing"), first, second}))[sys:]
	if len(got) != 1 || got[0] != "first" {
		t.Fatalf("files: %v, want [first]", got)
	}
	// SSL_CERT_FILE replaces the list; SSL_CERT_DIR adds its *.pem/*.crt.
	env["SSL_CERT_FILE"], env["SSL_CERT_DIR"] = second, certDir+string(os.PathListSeparator)+filepath.Join(d, "nodir")
	got = names(t, hostRoots(getenv, []string{first}))[sys:]
	if len(got) != 2 || got[0] != "second" || got[1] != "dir-a" {
		t.Fatalf("env: %v, want [second dir-a]", got)
	}
	if b := hostRoots(getenv, nil); bytes.Contains(b, []byte("PRIVATE KEY")) {
		t.Fatal("a private key block reached the host roots")
	}
}

func TestExtraFileCertificatesOnly(t *testing.T) {
	d := t.TempDir()
	combined := filepath.Join(d, "combined.pem")
	os.WriteFile(combined, append(append([]byte("text before\n"+keyBlock), testCert(t, "extra")...), "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"...), 0o644)
	keyOnly := filepath.Join(d, "key.pem")
	os.WriteFile(keyOnly, []byte(keyBlock), 0o644)
	unreadable := filepath.Join(d, "unreadable.pem")
	os.WriteFile(unreadable, testCert(t, "unreadable"), 0o000)

	b := extraFile(combined)
	if bytes.Contains(b, []byte("PRIVATE KEY")) || bytes.Contains(b, []byte("text before")) {
		t.Fatalf("extra file copied more than its certificates:\n%s", b)
	}
	if got := names(t, b); len(got) != 1 || got[0] != "extra" {
		t.Fatalf("combined: %v", got)
	}
	if b := extraFile(keyOnly); len(b) != 0 {
		t.Fatalf("a key-only file gave %q", b)
	}
	if b := extraFile(filepath.Join(d, "missing.pem")); len(b) != 0 {
		t.Fatal("a missing file gave bytes")
	}
	if os.Geteuid() != 0 { // root reads a 0000 file
		if b := extraFile(unreadable); len(b) != 0 {
			t.Fatal("an unreadable file gave bytes")
		}
	}
	pool, err := UpstreamRoots([]string{combined, keyOnly, filepath.Join(d, "missing.pem")})
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(extraFile(combined))
	c, _ := x509.ParseCertificate(blk.Bytes)
	if _, err := c.Verify(x509.VerifyOptions{Roots: pool}); err != nil {
		t.Fatalf("the extra CA is not in the upstream pool: %v", err)
	}
}

func TestTrustBundleOrder(t *testing.T) {
	ca, err := NewCA()
	if err != nil {
		t.Fatalf("NewCA: %v", err)
	}
	d := t.TempDir()
	extra := filepath.Join(d, "extra.pem")
	os.WriteFile(extra, append([]byte(keyBlock), testCert(t, "extra-last")...), 0o644)
	t.Setenv("SSL_CERT_FILE", filepath.Join(d, "host.pem"))
	t.Setenv("SSL_CERT_DIR", "")
	os.WriteFile(filepath.Join(d, "host.pem"), testCert(t, "host-root"), 0o644)
	b, err := TrustBundle(ca, []string{filepath.Join(d, "missing.pem"), extra})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("PRIVATE KEY")) {
		t.Fatal("a private key block reached the bundle")
	}
	got := names(t, b)
	if !bytes.HasPrefix(b, certBlocks(ca.CertPEM())) || len(got) < 3 || got[len(got)-1] != "extra-last" || got[len(got)-2] != "host-root" {
		t.Fatalf("bundle order: %v, want [CA … host-root extra-last]", got)
	}
	if _, err := TrustBundle(nil, nil); err == nil {
		t.Fatal("TrustBundle(nil) succeeded")
	}
}

func TestTrustStore(t *testing.T) {
	bundle := append(testCert(t, "one"), testCert(t, "two")...)
	b, err := TrustStore(bundle)
	if err != nil {
		t.Fatal(err)
	}
	certs, err := pkcs12.DecodeTrustStore(b, TrustStorePassword)
	if err != nil {
		t.Fatal(err)
	}
	if len(certs) != 2 || certs[0].Subject.CommonName != "one" || certs[1].Subject.CommonName != "two" {
		t.Fatalf("trust store holds %d certificates", len(certs))
	}
}

// A trust file another user owns (one left in /tmp by anybody) is not
// trusted: an extra CA file is skipped, a CA certificate or key refused.
// Needs root, to give a file away.
func TestForeignOwnedTrustFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown a file to another user")
	}
	d := t.TempDir()
	extra := filepath.Join(d, "extra.pem")
	os.WriteFile(extra, testCert(t, "foreign"), 0o644)
	if len(extraFile(extra)) == 0 {
		t.Fatal("an extra CA file of srt's own user is skipped")
	}
	certPath, keyPath := writeCA(t, caTemplate(), ecKey(t), "PRIVATE KEY")
	if _, err := LoadCA(certPath, keyPath); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{extra, certPath, keyPath} {
		if err := os.Chown(f, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	if b := extraFile(extra); len(b) != 0 {
		t.Error("an extra CA file owned by another user is trusted")
	}
	if _, err := LoadCA(certPath, keyPath); !errors.Is(err, ErrForeignOwner) {
		t.Errorf("LoadCA of another user's files: %v, want ErrForeignOwner", err)
	}
}
