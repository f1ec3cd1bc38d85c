package mitm

import (
	"container/list"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"
)

// leafCacheSize is how many leaves a CA keeps: those of the 256 most
// recently used names, as the reference 0.0.83 does.
const leafCacheSize = 256

// leafValidity is the longest a leaf is valid for; a leaf never outlives
// its CA. A cached leaf this close to its end is minted again
// (leafRenewBefore).
const (
	leafValidity    = 7 * 24 * time.Hour
	leafRenewBefore = time.Hour
)

// ErrBadName is returned by Leaf for a host that is neither an IP
// literal nor a plain DNS name.
var ErrBadName = errors.New("mitm: not a DNS name or IP address")

// Leaf returns a leaf certificate for host (a DNS name, lower-cased by the
// caller, or an IP literal), minted on first use and cached.
//
// The leaf carries host as its only subjectAltName (dNSName, or
// iPAddress for a literal), ExtKeyUsage serverAuth, and the CA's one
// leaf key (ECDSA P-256). It is valid from an hour ago for 7 days, never
// outside the CA's own validity. The 256 most recently used names are
// kept; concurrent first requests for one name mint it once. The
// returned certificate is shared: the caller must not modify it. An
// invalid host gets ErrBadName.
func (ca *CA) Leaf(host string) (*tls.Certificate, error) {
	if !validName(host) {
		return nil, fmt.Errorf("%w: %q", ErrBadName, host)
	}
	return ca.leaves.get(host, time.Now(), ca.mint)
}

// validName reports whether host is an IP literal or a name of labels
// of [a-z0-9_-] (upper case too; the caller lower-cases) separated by
// dots, at most 253 bytes. It only keeps garbage out of a certificate;
// the proxy decides which names are acceptable.
func validName(host string) bool {
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	if host == "" || len(host) > 253 {
		return false
	}
	label := 0
	for i := 0; i < len(host); i++ {
		c := host[i]
		switch {
		case c == '.':
			if label == 0 {
				return false
			}
			label = 0
			continue
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
		if label++; label > 63 {
			return false
		}
	}
	return label > 0
}

// mint signs a new leaf for host.
func (ca *CA) mint(host string, now time.Time) (*tls.Certificate, error) {
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: host},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(leafValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	if tmpl.NotBefore.Before(ca.cert.NotBefore) {
		tmpl.NotBefore = ca.cert.NotBefore
	}
	if tmpl.NotAfter.After(ca.cert.NotAfter) {
		tmpl.NotAfter = ca.cert.NotAfter
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip.AsSlice())
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, ca.leafKey.Public(), ca.key)
	if err != nil {
		return nil, fmt.Errorf("mitm: leaf for %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("mitm: leaf for %s: %w", host, err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: ca.leafKey, Leaf: leaf}, nil
}

// leafCache is an LRU of minted leaves with one mint in flight per name.
type leafCache struct {
	size int

	mu      sync.Mutex // guards the fields below
	entries map[string]*leafEntry
	order   *list.List // of *leafEntry, most recently used first
}

// leafEntry is one name's leaf; ready is closed once cert or err is set,
// after which neither changes.
type leafEntry struct {
	host  string
	elem  *list.Element
	ready chan struct{}
	cert  *tls.Certificate
	err   error
	at    time.Time // when it was minted
}

func newLeafCache(size int) *leafCache {
	return &leafCache{size: size, entries: make(map[string]*leafEntry), order: list.New()}
}

// get returns host's cached leaf, or mints one with mint. A leaf within
// leafRenewBefore of its end at now (and minted longer ago than that)
// is minted again; a failed mint is
// returned to the callers waiting for it and not kept.
func (c *leafCache) get(host string, now time.Time, mint func(string, time.Time) (*tls.Certificate, error)) (*tls.Certificate, error) {
	for {
		c.mu.Lock()
		e, ok := c.entries[host]
		if !ok {
			e = &leafEntry{host: host, ready: make(chan struct{}), at: now}
			e.elem = c.order.PushFront(e)
			c.entries[host] = e
			for c.order.Len() > c.size {
				c.remove(c.order.Back().Value.(*leafEntry))
			}
			c.mu.Unlock()
			e.cert, e.err = mint(host, now)
			close(e.ready)
			if e.err != nil {
				c.mu.Lock()
				c.remove(e)
				c.mu.Unlock()
			}
			return e.cert, e.err
		}
		c.order.MoveToFront(e.elem)
		c.mu.Unlock()
		<-e.ready
		if e.err != nil {
			return nil, e.err
		}
		// A leaf cut short by its CA's end is not minted again and again:
		// only one minted more than leafRenewBefore ago is renewed.
		if now.Add(leafRenewBefore).Before(e.cert.Leaf.NotAfter) || now.Sub(e.at) < leafRenewBefore {
			return e.cert, nil
		}
		c.mu.Lock()
		c.remove(e)
		c.mu.Unlock()
	}
}

// remove drops e if it is still the entry for its name. Called with mu
// held.
func (c *leafCache) remove(e *leafEntry) {
	if c.entries[e.host] == e {
		delete(c.entries, e.host)
		c.order.Remove(e.elem)
	}
}

// len returns how many names are cached.
func (c *leafCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
