package mitm

import (
	"crypto/tls"
	"errors"
)

// CA is a certificate authority that mints leaf certificates for the
// server names a sandboxed client asks for. Safe for concurrent use.
type CA struct {
	// filled in by the implementation
}

// errNotImplemented marks the skeleton; the implementation replaces it.
var errNotImplemented = errors.New("mitm: not implemented")

// LoadCA reads a PEM CA certificate from certPath and its PEM private
// key (PKCS#8, PKCS#1 or SEC 1 EC) from keyPath. Errors name the file:
// unreadable, no PEM block, not a CA certificate (BasicConstraints CA,
// KeyUsageCertSign), key does not match the certificate, expired.
func LoadCA(certPath, keyPath string) (*CA, error) { return nil, errNotImplemented }

// NewCA makes an ephemeral CA (ECDSA P-256) for one run. Its key exists
// only in this process's memory.
func NewCA() (*CA, error) { return nil, errNotImplemented }

// CertPEM returns the CA's certificate, PEM-encoded (one CERTIFICATE
// block).
func (ca *CA) CertPEM() []byte { return nil }

// Leaf returns a leaf certificate for host (a DNS name, lower-cased by the
// caller, or an IP literal), minted on first use and cached.
func (ca *CA) Leaf(host string) (*tls.Certificate, error) { return nil, errNotImplemented }
