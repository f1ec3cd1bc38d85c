package mitm

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeCA writes a certificate made from tmpl (self-signed by key) and
// key (in the given PEM form) to a temporary directory.
func writeCA(t *testing.T, tmpl *x509.Certificate, key crypto.Signer, keyForm string) (certPath, keyPath string) {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	var kb []byte
	switch keyForm {
	case "PRIVATE KEY":
		kb, err = x509.MarshalPKCS8PrivateKey(key)
	case "RSA PRIVATE KEY":
		kb = x509.MarshalPKCS1PrivateKey(key.(*rsa.PrivateKey))
	case "EC PRIVATE KEY":
		kb, err = x509.MarshalECPrivateKey(key.(*ecdsa.PrivateKey))
	}
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPath, keyPath = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca.key")
	write(t, certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	write(t, keyPath, pem.EncodeToMemory(&pem.Block{Type: keyForm, Bytes: kb}))
	return certPath, keyPath
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func caTemplate() *x509.Certificate {
	return &x509.Certificate{
		SerialNumber:          big.NewInt(7),
		Subject:               pkix.Name{CommonName: "test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
}

func ecKey(t *testing.T) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestLoadCAForms loads a CA with each key encoding and checks that its
// leaves verify against the loaded certificate.
func TestLoadCAForms(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		form string
		key  crypto.Signer
	}{
		{"PRIVATE KEY", ecKey(t)},
		{"EC PRIVATE KEY", ecKey(t)},
		{"RSA PRIVATE KEY", rsaKey},
		{"PRIVATE KEY", rsaKey},
	} {
		cp, kp := writeCA(t, caTemplate(), tc.key, tc.form)
		ca, err := LoadCA(cp, kp)
		if err != nil {
			t.Fatalf("%s %T: %v", tc.form, tc.key, err)
		}
		if ca.Certificate().Subject.CommonName != "test CA" {
			t.Errorf("loaded %q", ca.Certificate().Subject.CommonName)
		}
		verifyLeaf(t, ca, "host.example")
	}
}

// TestLoadCAErrors checks that each bad input is told apart and the
// message names the file at fault.
func TestLoadCAErrors(t *testing.T) {
	good := ecKey(t)
	cp, kp := writeCA(t, caTemplate(), good, "PRIVATE KEY")
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pem")
	noPEM := filepath.Join(dir, "nopem.pem")
	write(t, noPEM, []byte("just text\n"))
	badPEM := filepath.Join(dir, "bad.pem")
	write(t, badPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")}))
	badKey := filepath.Join(dir, "bad.key")
	write(t, badKey, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: []byte("junk")}))
	encKey := filepath.Join(dir, "enc.key")
	write(t, encKey, pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte("x")}))
	certOnlyAsKey := cp // a certificate file given as the key: no key block

	notCA := caTemplate()
	notCA.IsCA = false
	notCAPath, notCAKey := writeCA(t, notCA, ecKey(t), "PRIVATE KEY")
	noSign := caTemplate()
	noSign.KeyUsage = x509.KeyUsageDigitalSignature
	noSignPath, noSignKey := writeCA(t, noSign, ecKey(t), "PRIVATE KEY")
	expired := caTemplate()
	expired.NotBefore, expired.NotAfter = time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour)
	expPath, expKey := writeCA(t, expired, ecKey(t), "PRIVATE KEY")
	future := caTemplate()
	future.NotBefore = time.Now().Add(time.Hour)
	futPath, futKey := writeCA(t, future, ecKey(t), "PRIVATE KEY")
	_, otherKey := writeCA(t, caTemplate(), ecKey(t), "PRIVATE KEY")

	for _, tc := range []struct {
		name       string
		cert, key  string
		want       error
		namingFile string
	}{
		{"cert unreadable", missing, kp, fs.ErrNotExist, missing},
		{"key unreadable", cp, missing, fs.ErrNotExist, missing},
		{"cert without PEM", noPEM, kp, ErrNoPEM, noPEM},
		{"key without PEM", cp, certOnlyAsKey, ErrNoPEM, certOnlyAsKey},
		{"cert malformed", badPEM, kp, ErrBadPEM, badPEM},
		{"key malformed", cp, badKey, ErrBadPEM, badKey},
		{"key encrypted", cp, encKey, ErrBadPEM, encKey},
		{"not a CA", notCAPath, notCAKey, ErrNotCA, notCAPath},
		{"no certSign", noSignPath, noSignKey, ErrNotCA, noSignPath},
		{"expired", expPath, expKey, ErrExpired, expPath},
		{"not yet valid", futPath, futKey, ErrExpired, futPath},
		{"key mismatch", cp, otherKey, ErrKeyMismatch, otherKey},
	} {
		_, err := LoadCA(tc.cert, tc.key)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.namingFile) {
			t.Errorf("%s: %q does not name %s", tc.name, err, tc.namingFile)
		}
		// The file at fault, told apart without reading the text (the
		// settings key policy names: caCertPath or caKeyPath).
		var fe *FileError
		if wantKey := strings.HasPrefix(tc.name, "key"); !errors.As(err, &fe) || fe.Path != tc.namingFile || fe.Key != wantKey {
			t.Errorf("%s: %#v; want a *FileError for %s, Key %v", tc.name, err, tc.namingFile, wantKey)
		} else if strings.Contains(err.Error(), "mitm:") || strings.Count(err.Error(), tc.namingFile) != 1 {
			t.Errorf("%s: %q: want the file named once, no package prefix", tc.name, err)
		}
	}
}

func TestNewCA(t *testing.T) {
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	c := ca.Certificate()
	if !c.IsCA || c.MaxPathLen != 0 || !c.MaxPathLenZero || c.KeyUsage != x509.KeyUsageCertSign|x509.KeyUsageCRLSign {
		t.Errorf("constraints: IsCA %v MaxPathLen %d zero %v KeyUsage %v", c.IsCA, c.MaxPathLen, c.MaxPathLenZero, c.KeyUsage)
	}
	if !strings.HasPrefix(c.Subject.CommonName, "srt-go ephemeral CA ") || len(c.Subject.CommonName) != len("srt-go ephemeral CA ")+16 {
		t.Errorf("name %q", c.Subject.CommonName)
	}
	if d := c.NotAfter.Sub(c.NotBefore); d != ephemeralValidity+time.Hour {
		t.Errorf("validity %v", d)
	}
	if _, ok := c.PublicKey.(*ecdsa.PublicKey); !ok {
		t.Errorf("key %T", c.PublicKey)
	}
	ca2, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	if ca2.Certificate().SerialNumber.Cmp(c.SerialNumber) == 0 || ca2.Certificate().Subject.CommonName == c.Subject.CommonName {
		t.Error("two ephemeral CAs share a serial or a name")
	}
	b, _ := pem.Decode(ca.CertPEM())
	if b == nil || b.Type != "CERTIFICATE" || string(b.Bytes) != string(c.Raw) {
		t.Error("CertPEM is not the certificate")
	}
	// The CA's certificate is its own root: it verifies as one.
	pool := x509.NewCertPool()
	pool.AddCert(c)
	if _, err := c.Verify(x509.VerifyOptions{Roots: pool}); err != nil {
		t.Error(err)
	}
}
