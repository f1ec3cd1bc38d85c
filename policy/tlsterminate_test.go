package policy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
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

	"github.com/srt-go/srt/mitm"
	"github.com/srt-go/srt/settings"
)

// writeCA writes a CA certificate and its PKCS#8 key into dir.
func writeCA(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "policy test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	p8, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca.key")
	os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}), 0o600)
	return cert, key
}

func tlsSettings(t *testing.T, tt *settings.TLSTerminate) *settings.Settings {
	s := settings.Default()
	s.Network.TLSTerminate = tt
	return s
}

// The CA key is read-denied inside the sandbox wherever it lies, the
// working directory (a write root) included, and compiled from the path
// as resolved when the policy is made.
func TestTLSKeyReadDenied(t *testing.T) {
	cwd := t.TempDir()
	cwd, _ = filepath.EvalSymlinks(cwd)
	os.Mkdir(filepath.Join(cwd, "keys"), 0o755)
	cert, key := writeCA(t, filepath.Join(cwd, "keys"))
	s := tlsSettings(t, &settings.TLSTerminate{CACertPath: cert, CAKeyPath: key})
	s.Filesystem.AllowWrite = []settings.PathEntry{{Path: "."}}
	p, err := Compile(s, Env{Cwd: cwd, Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if p.Network.TLS == nil || p.Network.TLS.Terminate == nil || p.Network.TLS.Terminate.CA == nil || p.Network.TLS.Terminate.AllowHostMismatch {
		t.Fatalf("TLS not compiled: %+v", p.Network.TLS)
	}
	if p.Readable(key) {
		t.Fatalf("the CA key %s is readable inside the sandbox", key)
	}
	if !p.Readable(cert) {
		t.Fatalf("the CA certificate %s is not readable", cert)
	}
	// A key spelled through a link inside a write root: the run could
	// re-point the link and move the deny off the key, so Compile refuses.
	os.Symlink(filepath.Join(cwd, "keys"), filepath.Join(cwd, "link"))
	s.Network.TLSTerminate.CAKeyPath = filepath.Join(cwd, "link", "ca.key")
	if _, err := Compile(s, Env{Cwd: cwd, Home: t.TempDir()}); !errors.Is(err, ErrUnenforceable) {
		t.Fatalf("key through a planted link: err = %v, want ErrUnenforceable", err)
	}
	// filesystem.disabled would leave the key readable.
	s.Network.TLSTerminate.CAKeyPath = key
	s.Filesystem.Disabled = true
	if _, err := Compile(s, Env{Cwd: cwd, Home: t.TempDir()}); !errors.Is(err, ErrUnenforceable) || !strings.Contains(err.Error(), "caKeyPath") {
		t.Fatalf("filesystem.disabled with a CA key: err = %v", err)
	}
}

func TestTLSCompileErrors(t *testing.T) {
	d := t.TempDir()
	cert, key := writeCA(t, d)
	other, _ := writeCA(t, t.TempDir())
	garbage := filepath.Join(d, "garbage.pem")
	os.WriteFile(garbage, []byte("not PEM\n"), 0o644)
	for _, tc := range []struct {
		name, cert, key, wantKey string
		want                     error
	}{
		{"missing cert", filepath.Join(d, "nope.pem"), key, "caCertPath", fs.ErrNotExist},
		{"missing key", cert, filepath.Join(d, "nope.key"), "caKeyPath", fs.ErrNotExist},
		{"mismatched", other, key, "caKeyPath", mitm.ErrKeyMismatch},
		{"malformed cert", garbage, key, "caCertPath", mitm.ErrNoPEM},
		{"key given as the cert", key, key, "caCertPath", mitm.ErrNoPEM},
		{"malformed key", cert, garbage, "caKeyPath", mitm.ErrNoPEM},
	} {
		_, err := NetworkOf(tlsSettings(t, &settings.TLSTerminate{CACertPath: tc.cert, CAKeyPath: tc.key}))
		var ke *KeyError
		if !errors.As(err, &ke) || ke.Key != "network.tlsTerminate."+tc.wantKey || !errors.Is(err, tc.want) || strings.Contains(err.Error(), "mitm:") {
			t.Errorf("%s: err = %v, want a KeyError for %s wrapping %v, without the package prefix", tc.name, err, tc.wantKey, tc.want)
		}
	}
	// From a file, Compile places the error at the key's value, one line.
	f := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(f, []byte("{\"network\": {\n  \"tlsTerminate\": {\n    \"caCertPath\": \""+other+"\",\n    \"caKeyPath\": \""+key+"\"}}}\n"), 0o600)
	s, err := settings.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(s, Env{Cwd: t.TempDir(), Home: t.TempDir()})
	var se *settings.Error
	want := f + ":4:18: network.tlsTerminate.caKeyPath: " + key + ": the private key does not match the CA certificate " + other
	if !errors.As(err, &se) || err.Error() != want || !errors.Is(err, mitm.ErrKeyMismatch) {
		t.Errorf("Compile from a file: %v\nwant %s", err, want)
	}
	n, err := NetworkOf(tlsSettings(t, &settings.TLSTerminate{}))
	if err != nil || n.TLS == nil || n.TLS.CAKeyPath != "" || len(n.TLS.Bundle) == 0 || len(n.TLS.TrustStore) == 0 {
		t.Fatalf("ephemeral CA: %+v, %v", n.TLS, err)
	}
}

func TestTLSExclude(t *testing.T) {
	ex, err := excludeOf([]string{"*.mtls.example", "pinned.example:8443", "10.1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host string
		port int
		want bool
	}{
		{"a.mtls.example", 443, true}, {"A.MTLS.example.", 443, true}, {"mtls.example", 443, false},
		{"pinned.example", 8443, true}, {"pinned.example", 443, false}, {"10.1.2.3", 443, true},
		{"other.example", 443, false},
	} {
		if got := ex(tc.host, tc.port); got != tc.want {
			t.Errorf("Exclude(%s, %d) = %v, want %v", tc.host, tc.port, got, tc.want)
		}
	}
	if ex, _ := excludeOf(nil); ex != nil {
		t.Fatal("an empty excludeDomains gives a func")
	}
}

// The files srt takes its trust from are write-denied inside the
// sandbox, an extra CA file that does not exist yet included, so a run
// cannot choose what a later run's proxy mints with or verifies with.
func TestTLSTrustFilesWriteDenied(t *testing.T) {
	cwd := t.TempDir()
	cwd, _ = filepath.EvalSymlinks(cwd)
	cert, key := writeCA(t, cwd)
	extra := filepath.Join(cwd, "extra-roots.pem")     // absent
	present := filepath.Join(cwd, "present-roots.pem") // present
	os.WriteFile(present, []byte("no certificate here\n"), 0o644)
	s := tlsSettings(t, &settings.TLSTerminate{CACertPath: cert, CAKeyPath: key, ExtraCACertPaths: []string{extra, present}})
	s.Filesystem.AllowWrite = []settings.PathEntry{{Path: "."}}
	p, err := Compile(s, Env{Cwd: cwd, Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{cert, key, extra, present} {
		if p.Writable(f) {
			t.Errorf("%s is writable inside the sandbox", f)
		}
	}
	if !p.Writable(filepath.Join(cwd, "other")) {
		t.Error("the working directory is no longer writable")
	}
}

// SSL_CERT_FILE and SSL_CERT_DIR in srt's own environment name where
// the host's roots come from: inside a write root, they are write-denied
// too, so no run plants a root a later run's proxy trusts upstream.
func TestTLSHostRootsWriteDenied(t *testing.T) {
	cwd := t.TempDir()
	cwd, _ = filepath.EvalSymlinks(cwd)
	dir, file := filepath.Join(cwd, "certs"), filepath.Join(cwd, "venv-cacert.pem")
	os.Mkdir(dir, 0o755)
	t.Setenv("SSL_CERT_DIR", dir)
	t.Setenv("SSL_CERT_FILE", file)
	// Every run, not only one that terminates TLS: a run with other
	// settings must not plant a root for a later one.
	s := tlsSettings(t, nil)
	s.Filesystem.AllowWrite = []settings.PathEntry{{Path: "."}}
	p, err := Compile(s, Env{Cwd: cwd, Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{file, filepath.Join(dir, "evil.pem"), dir} {
		if p.Writable(f) {
			t.Errorf("%s is writable inside the sandbox", f)
		}
	}
}

// An allowRead entry naming the CA key (exactly, or through a glob)
// does not re-open it: mandatory read-denies are not the user's to lift.
func TestTLSKeyAllowReadIgnored(t *testing.T) {
	cwd := t.TempDir()
	cwd, _ = filepath.EvalSymlinks(cwd)
	cert, key := writeCA(t, cwd)
	for _, allow := range []string{key, "./ca.key", "*.key", "**/*.key"} {
		s := tlsSettings(t, &settings.TLSTerminate{CACertPath: cert, CAKeyPath: key})
		s.Filesystem.AllowWrite = []settings.PathEntry{{Path: "."}}
		s.Filesystem.AllowRead = []settings.PathEntry{{Path: allow}}
		p, err := Compile(s, Env{Cwd: cwd, Home: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if p.Readable(key) {
			t.Errorf("allowRead %q re-opens the CA key", allow)
		}
		if !p.Readable(cert) {
			t.Errorf("allowRead %q: the certificate is not readable", allow)
		}
	}
}

// A relative SSL_CERT_FILE / SSL_CERT_DIR is read by Go from srt's
// working directory: it is write-denied there.
func TestTLSHostRootsRelative(t *testing.T) {
	cwd := t.TempDir()
	cwd, _ = filepath.EvalSymlinks(cwd)
	t.Chdir(cwd)
	os.Mkdir(filepath.Join(cwd, "certs"), 0o755)
	t.Setenv("SSL_CERT_DIR", "certs")
	t.Setenv("SSL_CERT_FILE", "roots.pem")
	s := tlsSettings(t, &settings.TLSTerminate{})
	s.Filesystem.AllowWrite = []settings.PathEntry{{Path: "."}}
	p, err := Compile(s, Env{Cwd: cwd, Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(cwd, "roots.pem"), filepath.Join(cwd, "certs", "evil.pem")} {
		if p.Writable(f) {
			t.Errorf("%s is writable inside the sandbox", f)
		}
	}
}
