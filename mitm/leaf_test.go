package mitm

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// verifyLeaf mints host's leaf and verifies it with x509 against a pool
// holding only ca, for server authentication as host.
func verifyLeaf(t *testing.T, ca *CA, host string) *tls.Certificate {
	t.Helper()
	leaf, err := ca.Leaf(host)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Certificate())
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Fatalf("leaf for %s: %v", host, err)
	}
	return leaf
}

func TestLeafVerifies(t *testing.T) {
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	var key *ecdsa.PrivateKey
	for _, host := range []string{"example.com", "a-b.c_d.example", "127.0.0.1", "::1"} {
		leaf := verifyLeaf(t, ca, host)
		c := leaf.Leaf
		if len(c.DNSNames)+len(c.IPAddresses) != 1 {
			t.Errorf("%s: SANs %v %v", host, c.DNSNames, c.IPAddresses)
		}
		if c.NotAfter.After(ca.Certificate().NotAfter) || c.NotBefore.Before(ca.Certificate().NotBefore) {
			t.Errorf("%s: leaf outlives its CA", host)
		}
		if c.IsCA {
			t.Errorf("%s: leaf is a CA", host)
		}
		k := leaf.PrivateKey.(*ecdsa.PrivateKey)
		if key != nil && k != key {
			t.Error("leaves of one CA carry different keys")
		}
		key = k
	}
	// Another host's name does not verify.
	leaf, _ := ca.Leaf("example.com")
	pool := x509.NewCertPool()
	pool.AddCert(ca.Certificate())
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "other.example"}); err == nil {
		t.Error("leaf for example.com verifies as other.example")
	}
	// Each CA has a leaf key of its own.
	ca2, _ := NewCA()
	l2, _ := ca2.Leaf("example.com")
	if l2.PrivateKey.(*ecdsa.PrivateKey).Equal(key) {
		t.Error("two CAs share a leaf key")
	}
}

func TestLeafBadNames(t *testing.T) {
	ca, _ := NewCA()
	for _, h := range []string{"", "a..b", ".a", "a b", "a/b", "x\x00y", string(make([]byte, 300))} {
		if _, err := ca.Leaf(h); !errors.Is(err, ErrBadName) {
			t.Errorf("Leaf(%q): %v", h, err)
		}
	}
}

func TestLeafCacheLRU(t *testing.T) {
	ca, _ := NewCA()
	first, _ := ca.Leaf("h0.example")
	for i := 1; i < leafCacheSize; i++ {
		ca.Leaf(fmt.Sprintf("h%d.example", i))
	}
	if again, _ := ca.Leaf("h0.example"); again != first { // also makes h0 the most recent
		t.Fatal("a cached leaf was minted again")
	}
	if n := ca.leaves.len(); n != leafCacheSize {
		t.Fatalf("%d cached", n)
	}
	h1, _ := ca.Leaf("h1.example")
	ca.Leaf("new.example") // evicts the least recently used: h2
	if n := ca.leaves.len(); n != leafCacheSize {
		t.Fatalf("%d cached after eviction", n)
	}
	if again, _ := ca.Leaf("h0.example"); again != first {
		t.Error("the most recently used name was evicted")
	}
	if again, _ := ca.Leaf("h1.example"); again != h1 {
		t.Error("h1 was evicted")
	}
	ca.leaves.mu.Lock()
	_, ok := ca.leaves.entries["h2.example"]
	ca.leaves.mu.Unlock()
	if ok {
		t.Error("the least recently used name was kept")
	}
}

// TestLeafSingleflight checks that concurrent first requests for one name
// mint it once.
func TestLeafSingleflight(t *testing.T) {
	c := newLeafCache(4)
	var mints atomic.Int32
	release := make(chan struct{})
	ca, _ := NewCA()
	mint := func(h string, now time.Time) (*tls.Certificate, error) {
		mints.Add(1)
		<-release
		return ca.mint(h, now)
	}
	var wg sync.WaitGroup
	got := make([]*tls.Certificate, 16)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _ = c.get("x.example", time.Now(), mint)
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	if n := mints.Load(); n != 1 {
		t.Errorf("minted %d times", n)
	}
	for _, g := range got {
		if g == nil || g != got[0] {
			t.Fatal("callers got different leaves")
		}
	}
	// A failed mint is not kept.
	boom := errors.New("boom")
	if _, err := c.get("y.example", time.Now(), func(string, time.Time) (*tls.Certificate, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if l, err := c.get("y.example", time.Now(), ca.mint); err != nil || l == nil {
		t.Errorf("after a failed mint: %v", err)
	}
}

// TestLeafRenewal checks that a cached leaf near its end is minted again,
// and one its CA cuts short is not minted again on every call.
func TestLeafRenewal(t *testing.T) {
	ca, _ := NewCA()
	c := newLeafCache(4)
	now := time.Now()
	a, _ := c.get("x.example", now, ca.mint)
	if b, _ := c.get("x.example", now.Add(leafValidity-leafRenewBefore/2), ca.mint); b == a {
		t.Error("a leaf about to expire was kept")
	}
	// The CA ends in 30 minutes: the leaf ends with it and is kept.
	short := &CA{cert: ca.cert, key: ca.key, leafKey: ca.leafKey}
	short.cert = &x509.Certificate{}
	*short.cert = *ca.cert
	short.cert.NotAfter = now.Add(30 * time.Minute)
	short.cert.Raw = ca.cert.Raw
	d, err := c.get("y.example", now, short.mint)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := c.get("y.example", now.Add(time.Minute), short.mint); e != d {
		t.Error("a leaf cut short by its CA was minted again")
	}
}
