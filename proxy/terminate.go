package proxy

import (
	"crypto/x509"
	"time"

	"github.com/srt-go/srt/mitm"
)

// Terminate configures TLS termination in CONNECT tunnels
// (network.tlsTerminate; seed 003 "Terminaison TLS"; issue 17). The zero
// value of each field but CA is the safe default.
type Terminate struct {
	// CA mints the leaf certificates shown to the sandboxed client.
	// Required.
	CA *mitm.CA
	// Exclude reports the destinations tunnelled opaquely instead
	// (network.tlsTerminate.excludeDomains). Nil excludes none.
	Exclude func(host string, port int) bool
	// RootCAs verifies the upstream's certificate: the host's roots plus
	// network.tlsTerminate.extraCaCertPaths. Nil means the system pool.
	RootCAs *x509.CertPool
	// MaxTunnels bounds the tunnels terminated at once; past it a CONNECT
	// is answered 503 with X-Proxy-Error: too-many-tunnels. Zero means
	// 256.
	MaxTunnels int
	// HandshakeTimeout bounds the time from a CONNECT to the end of the
	// client's TLS handshake. Zero means 10s.
	HandshakeTimeout time.Duration
	// AllowHostMismatch turns off the check that the TLS server name, the
	// CONNECT target and every request's Host/:authority name the same
	// host (network.requireHostMatch: false). The zero value checks.
	AllowHostMismatch bool
}
