package mitm

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"os"
	"time"
)

// CA is a certificate authority that mints leaf certificates for the
// server names a sandboxed client asks for. Safe for concurrent use.
type CA struct {
	cert    *x509.Certificate
	key     crypto.Signer // the CA's own key; signs leaves
	certPEM []byte
	leafKey *ecdsa.PrivateKey // the one key every leaf of this CA carries
	leaves  *leafCache
}

// Errors LoadCA wraps (with the file's path) so callers can tell the
// cases apart with errors.Is; an unreadable file wraps the os error
// instead (fs.ErrNotExist, fs.ErrPermission).
var (
	// ErrNoPEM: the file holds no PEM block of the kind wanted (a
	// CERTIFICATE, or a PRIVATE KEY / RSA PRIVATE KEY / EC PRIVATE KEY).
	ErrNoPEM = errors.New("no PEM block found")
	// ErrBadPEM: the block is there but does not parse (a malformed
	// certificate or key, or an encrypted key, which srt cannot use).
	ErrBadPEM = errors.New("malformed PEM contents")
	// ErrNotCA: the certificate is not a CA's (BasicConstraints CA:TRUE
	// and KeyUsage certSign are both required).
	ErrNotCA = errors.New("not a CA certificate")
	// ErrKeyMismatch: the private key is not the certificate's.
	ErrKeyMismatch = errors.New("private key does not match the CA certificate")
	// ErrExpired: the certificate is outside its validity period (expired
	// or not yet valid).
	ErrExpired = errors.New("CA certificate is not valid now")
	// ErrForeignOwner: the file belongs to neither srt's user nor root,
	// so another user could have chosen the CA.
	ErrForeignOwner = errors.New("the file belongs to another user (neither srt's user nor root)")
)

// readTrusted reads a trust file (the CA's certificate or key, an extra
// CA file) that must belong to srt's user or root (ErrForeignOwner).
func readTrusted(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !ownerTrusted(fi) {
		return nil, ErrForeignOwner
	}
	return io.ReadAll(f)
}

// FileError is every error of LoadCA: what is wrong with one of its two
// files. Its text is "PATH: what is wrong" ("open PATH: ..." when the
// file cannot be read), without a package prefix, so that a caller can
// put it after the settings key that named the file.
type FileError struct {
	// Path is the file at fault, as LoadCA was given it.
	Path string
	// Key is true when Path is the private key (keyPath; a key that does
	// not match the certificate is the key's fault), false for the
	// certificate (certPath).
	Key bool
	// Err is ErrNoPEM, ErrBadPEM, ErrNotCA, ErrKeyMismatch or ErrExpired,
	// wrapped with the details, or the os error (an *fs.PathError) of a
	// file that cannot be read.
	Err error
}

// Error is "PATH: MSG", or the os error's own text, which names the path.
func (e *FileError) Error() string {
	if pe := (*fs.PathError)(nil); errors.As(e.Err, &pe) && pe.Path == e.Path {
		return e.Err.Error()
	}
	return e.Path + ": " + e.Err.Error()
}

// Unwrap returns Err.
func (e *FileError) Unwrap() error { return e.Err }

// LoadCA reads a PEM CA certificate from certPath and its PEM private
// key (PKCS#8, PKCS#1 or SEC 1 EC) from keyPath. Every error is a
// *FileError naming the file: unreadable, no PEM block, not a CA
// certificate (BasicConstraints CA, KeyUsageCertSign), key does not match
// the certificate (the key's error), expired. Each wraps ErrNoPEM,
// ErrBadPEM, ErrNotCA, ErrKeyMismatch, ErrExpired or the os error, for
// errors.Is.
func LoadCA(certPath, keyPath string) (*CA, error) {
	cert, err := loadCert(certPath)
	if err != nil {
		return nil, err
	}
	key, err := loadKey(keyPath)
	if err != nil {
		return nil, err
	}
	pub, ok := cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(key.Public()) {
		return nil, &FileError{Path: keyPath, Key: true, Err: fmt.Errorf("the %w %s", ErrKeyMismatch, certPath)}
	}
	return newCA(cert, key)
}

func loadCert(path string) (*x509.Certificate, error) {
	c, err := parseCert(path)
	if err != nil {
		return nil, &FileError{Path: path, Err: err}
	}
	return c, nil
}

func parseCert(path string) (*x509.Certificate, error) {
	data, err := readTrusted(path)
	if err != nil {
		return nil, err // an *fs.PathError, naming the path
	}
	block := findBlock(data, "CERTIFICATE")
	if block == nil {
		return nil, fmt.Errorf("%w (want a CERTIFICATE block)", ErrNoPEM)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadPEM, err)
	}
	if !cert.BasicConstraintsValid || !cert.IsCA {
		return nil, fmt.Errorf("%w: BasicConstraints CA:TRUE is missing", ErrNotCA)
	}
	if cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, fmt.Errorf("%w: KeyUsage lacks certSign", ErrNotCA)
	}
	now := time.Now()
	if now.After(cert.NotAfter) {
		return nil, fmt.Errorf("%w: expired %s", ErrExpired, cert.NotAfter.UTC().Format(time.RFC3339))
	}
	if now.Before(cert.NotBefore) {
		return nil, fmt.Errorf("%w: not valid before %s", ErrExpired, cert.NotBefore.UTC().Format(time.RFC3339))
	}
	return cert, nil
}

func loadKey(path string) (crypto.Signer, error) {
	k, err := parseKey(path)
	if err != nil {
		return nil, &FileError{Path: path, Key: true, Err: err}
	}
	return k, nil
}

func parseKey(path string) (crypto.Signer, error) {
	data, err := readTrusted(path)
	if err != nil {
		return nil, err // an *fs.PathError, naming the path
	}
	block := findBlock(data, "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY", "ENCRYPTED PRIVATE KEY")
	if block == nil {
		return nil, fmt.Errorf("%w (want PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY)", ErrNoPEM)
	}
	if block.Type == "ENCRYPTED PRIVATE KEY" || block.Headers["Proc-Type"] != "" {
		return nil, fmt.Errorf("%w: the key is encrypted; give it unencrypted", ErrBadPEM)
	}
	var k any
	switch block.Type {
	case "PRIVATE KEY":
		k, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		k, err = x509.ParseECPrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadPEM, err)
	}
	switch k := k.(type) {
	case *ecdsa.PrivateKey, *rsa.PrivateKey:
		return k.(crypto.Signer), nil
	default:
		// Ed25519 CAs are not accepted: many TLS clients cannot verify
		// an Ed25519 signature on a certificate.
		return nil, fmt.Errorf("%w: key type %T not supported (use ECDSA or RSA)", ErrBadPEM, k)
	}
}

// findBlock returns the first PEM block in data whose type is one of
// types, skipping others (an "EC PARAMETERS" block before an EC key, the
// other half of a combined PEM).
func findBlock(data []byte, types ...string) *pem.Block {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil
		}
		for _, t := range types {
			if b.Type == t {
				return b
			}
		}
	}
}

// ephemeralValidity is how long a NewCA certificate is valid: long
// enough for any one run, short enough that a leaked certificate is
// soon worthless (the key never leaves the process anyway).
const ephemeralValidity = 7 * 24 * time.Hour

// NewCA makes an ephemeral CA (ECDSA P-256) for one run. Its key exists
// only in this process's memory. Its certificate is named "srt-go
// ephemeral CA <16 hex digits>", has a random 128-bit serial, is valid
// from an hour ago (for clocks a little behind) for 7 days, and may sign
// only leaves (MaxPathLen 0; KeyUsage certSign and cRLSign).
func NewCA() (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("mitm: CA key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	var tag [8]byte
	if _, err := rand.Read(tag[:]); err != nil {
		return nil, fmt.Errorf("mitm: CA name: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "srt-go ephemeral CA " + hex.EncodeToString(tag[:]), Organization: []string{"srt-go"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(ephemeralValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("mitm: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("mitm: CA certificate: %w", err)
	}
	return newCA(cert, key)
}

// newCA completes a CA from its certificate and key: the PEM form, the
// leaves' key (made here, once) and the leaf cache.
func newCA(cert *x509.Certificate, key crypto.Signer) (*CA, error) {
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("mitm: leaf key: %w", err)
	}
	return &CA{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}),
		leafKey: leafKey,
		leaves:  newLeafCache(leafCacheSize),
	}, nil
}

// randomSerial is a positive random 128-bit serial number (RFC 5280
// §4.1.2.2 allows up to 20 octets).
func randomSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("mitm: serial: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

// CertPEM returns the CA's certificate, PEM-encoded (one CERTIFICATE
// block). The caller may modify the slice.
func (ca *CA) CertPEM() []byte { return bytes.Clone(ca.certPEM) }

// Certificate returns the CA's parsed certificate. The caller must not
// modify it.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }
