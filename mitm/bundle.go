package mitm

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"software.sslmate.com/src/go-pkcs12"
)

// TrustBundle returns the PEM trust bundle the sandboxed command is
// pointed at: ca's certificate first, then the host's roots (hostRoots),
// then the CERTIFICATE blocks of each extra file (a missing or unreadable
// extra file, or one without a CERTIFICATE block, is skipped with a debug
// log, as the reference 0.0.83 does). Only CERTIFICATE blocks are ever
// copied: a private key in a combined PEM never reaches the sandbox. The
// host's roots are wanted for the hosts in excludeDomains, which the
// client inside verifies itself: the trust variables srt sets replace
// each tool's own configuration. The error is for a nil ca only.
func TrustBundle(ca *CA, extraPaths []string) ([]byte, error) {
	if ca == nil {
		return nil, errors.New("mitm: trust bundle: no CA")
	}
	var b bytes.Buffer
	b.Write(certBlocks(ca.CertPEM()))
	b.Write(hostRoots(os.Getenv, hostBundleFiles))
	for _, p := range extraPaths {
		b.Write(extraFile(p))
	}
	return b.Bytes(), nil
}

// UpstreamRoots is the pool the proxy verifies upstream servers with:
// the host's system pool (Go's: SSL_CERT_FILE / SSL_CERT_DIR honoured on
// Linux, the keychain on macOS) plus the CERTIFICATE blocks of each
// extra file, skipped as in TrustBundle.
func UpstreamRoots(extraPaths []string) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil {
		return nil, fmt.Errorf("mitm: the host's root certificates: %w", err)
	}
	for _, p := range extraPaths {
		if b := extraFile(p); len(b) > 0 && !pool.AppendCertsFromPEM(b) {
			slog.Debug("tlsTerminate: no certificate of an extra CA file parses", "path", p)
		}
	}
	return pool, nil
}

// hostBundleFiles are the bundle files Go's crypto/x509 looks for on
// Linux (root_linux.go), in its order; the first that exists is used.
// /etc/ssl/cert.pem is also where macOS keeps a PEM copy of its roots.
var hostBundleFiles = []string{
	"/etc/ssl/certs/ca-certificates.crt",                // Debian/Ubuntu/Gentoo etc.
	"/etc/pki/tls/certs/ca-bundle.crt",                  // Fedora/RHEL 6
	"/etc/ssl/ca-bundle.pem",                            // OpenSUSE
	"/etc/pki/tls/cacert.pem",                           // OpenELEC
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // CentOS/RHEL 7
	"/etc/ssl/cert.pem",                                 // Alpine Linux, macOS
}

// hostCertDirs are the directories Go's crypto/x509 reads on Linux when
// SSL_CERT_DIR is not set (root_linux.go).
var hostCertDirs = []string{"/etc/ssl/certs", "/etc/pki/tls/certs"}

// HostRootPaths lists the files and directories the host's roots are
// read from (by hostRoots for the sandbox's bundle, and by Go's system
// pool for the upstream's verification), as getenv's SSL_CERT_FILE and
// SSL_CERT_DIR name them or Go's defaults: whoever can write one chooses
// what srt trusts, so the policy write-denies them inside the sandbox.
func HostRootPaths(getenv func(string) string) []string {
	var out []string
	if f := getenv("SSL_CERT_FILE"); f != "" {
		out = append(out, f)
	} else {
		out = append(out, hostBundleFiles...)
	}
	if dirs := getenv("SSL_CERT_DIR"); dirs != "" {
		out = append(out, filepath.SplitList(dirs)...)
	} else {
		out = append(out, hostCertDirs...)
	}
	return out
}

// hostRoots returns the host's root certificates as PEM, the way Go's
// system pool finds them on Linux: SSL_CERT_FILE when set (and then only
// it), else the first of files that exists; plus the *.pem and *.crt
// files of each SSL_CERT_DIR directory (colon-separated) when set. On
// macOS the keychain's roots come first (systemRoots), as Go's pool cannot
// be exported. Only CERTIFICATE blocks are kept. What cannot be read is
// skipped with a debug log: the terminated hosts verify without them.
func hostRoots(getenv func(string) string, files []string) []byte {
	var b bytes.Buffer
	b.Write(systemRoots(context.Background()))
	if f := getenv("SSL_CERT_FILE"); f != "" {
		files = []string{f}
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err == nil {
			b.Write(certBlocks(data))
			break
		}
		if !errors.Is(err, os.ErrNotExist) || len(files) == 1 {
			slog.Debug("tlsTerminate: host root bundle skipped", "path", f, "error", err)
		}
	}
	if dirs := getenv("SSL_CERT_DIR"); dirs != "" {
		for _, d := range filepath.SplitList(dirs) {
			ents, err := os.ReadDir(d)
			if err != nil {
				slog.Debug("tlsTerminate: SSL_CERT_DIR entry skipped", "dir", d, "error", err)
				continue
			}
			for _, e := range ents {
				if n := e.Name(); strings.HasSuffix(n, ".pem") || strings.HasSuffix(n, ".crt") {
					if data, err := os.ReadFile(filepath.Join(d, n)); err == nil {
						b.Write(certBlocks(data))
					}
				}
			}
		}
	}
	return b.Bytes()
}

// extraFile returns the CERTIFICATE blocks of one extraCaCertPaths file,
// nothing (with a debug log) when it is missing, unreadable or has none,
// and nothing (with a warning) when another user owns it.
func extraFile(path string) []byte {
	data, err := readTrusted(path)
	if errors.Is(err, ErrForeignOwner) {
		slog.Warn("tlsTerminate: extra CA file skipped", "path", path, "error", err)
		return nil
	}
	if err != nil {
		slog.Debug("tlsTerminate: extra CA file skipped", "path", path, "error", err)
		return nil
	}
	out := certBlocks(data)
	if len(out) == 0 {
		slog.Debug("tlsTerminate: extra CA file skipped: no CERTIFICATE block", "path", path)
	}
	return out
}

// certBlocks re-encodes the CERTIFICATE blocks of data, dropping every
// other block (private keys above all), the headers of each kept block
// and the text around them.
func certBlocks(data []byte) []byte {
	var out bytes.Buffer
	for {
		var blk *pem.Block
		blk, data = pem.Decode(data)
		if blk == nil {
			return out.Bytes()
		}
		if blk.Type == "CERTIFICATE" {
			_ = pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: blk.Bytes})
		}
	}
}

// TrustStorePassword opens the trust store TrustStore makes. It guards
// nothing (a trust store holds public certificates, and the sandbox sees
// the store read-only); the JVM only needs one to check the store's
// integrity. "changeit" is the JDK's own cacerts password.
const TrustStorePassword = "changeit"

// TrustStore returns the certificates of a PEM bundle (TrustBundle) as a
// PKCS#12 trust store for the JVM (javax.net.ssl.trustStore, type
// PKCS12, Java 8 and later), which reads no PEM bundle of its own.
// LegacyDES, not an AES encoder: the JVMs before 8u301 read only the
// legacy algorithms, and nothing here is secret.
func TrustStore(bundle []byte) ([]byte, error) {
	var certs []*x509.Certificate
	for {
		var blk *pem.Block
		blk, bundle = pem.Decode(bundle)
		if blk == nil {
			break
		}
		if c, err := x509.ParseCertificate(blk.Bytes); err == nil {
			certs = append(certs, c)
		}
	}
	b, err := pkcs12.LegacyDES.EncodeTrustStore(certs, TrustStorePassword)
	if err != nil {
		return nil, fmt.Errorf("mitm: JVM trust store: %w", err)
	}
	return b, nil
}
