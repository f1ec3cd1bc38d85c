package credential

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// AWS Signature Version 4 re-signing (reference 0.0.83
// "credentials.sigv4", aws-sigv4 and credential-aws-pairs). A masked AWS
// credential gives the sandbox a fake access key id and a fake secret, so
// the signature it computes is an HMAC over the fake secret: no
// substitution can repair it. The proxy re-signs instead, keeping the
// client's X-Amz-Date, credential scope (region, service) and signed
// header list, with the real key id, secret and session token, over the
// request as it goes upstream. The signing itself is the AWS SDK's
// (aws-sdk-go-v2/aws/signer/v4).

// MaxSigV4Body is the largest body (bytes) ResignSigV4 reads to hash when
// the request declares no X-Amz-Content-Sha256 (reference
// MAX_SIGV4_RESIGN_BODY_BYTES, 64 MiB).
const MaxSigV4Body = 64 << 20

// maxSigV4Skew is how far from now a re-signed request may be dated.
const maxSigV4Skew = 15 * time.Minute

// SigV4 algorithm names and payload-hash values (AWS "Signature Version 4
// signing process"; "Signature Version 4A").
const (
	sigV4Algorithm  = "AWS4-HMAC-SHA256"
	sigV4AAlgorithm = "AWS4-ECDSA-P256-SHA256"
	unsignedPayload = "UNSIGNED-PAYLOAD"
	streamingPrefix = "STREAMING-"
	unsignedTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
	amzDateLayout   = "20060102T150405Z"
)

// credentialKeyID finds the access key id of "Credential=AKID/…" in an
// Authorization value of either algorithm.
var credentialKeyID = regexp.MustCompile(`Credential=([^/,\s]+)/`)

// sigV4Auth is an "AWS4-HMAC-SHA256 Credential=AKID/date/region/service/
// aws4_request, SignedHeaders=a;b, Signature=hex" value, strictly: one
// space after the algorithm, the three parts in that order.
var sigV4Auth = regexp.MustCompile(`^AWS4-HMAC-SHA256 +Credential=([^/,\s]+)/([0-9]{8})/([^/,\s]+)/([^/,\s]+)/aws4_request *, *SignedHeaders=([a-z0-9!#$%&'*+.^_|~-]+(?:;[a-z0-9!#$%&'*+.^_|~-]+)*) *, *Signature=[0-9a-fA-F]+ *$`)

// sdkUnsigned are the headers the SDK signer never signs
// (aws/signer/internal/v4 IgnoredHeaders); mainstream clients (botocore,
// the SDKs) do not sign them either. A client list naming one is re-signed
// without it: the upstream checks the list it is given.
var sdkUnsigned = []string{"authorization", "user-agent", "x-amzn-trace-id", "expect", "transfer-encoding"}

// awsCreds is one usable AWSPair: its real parts and the access key id's
// sentinel and hosts.
type awsCreds struct {
	fakeID, realID, secret, token string
	hosts                         HostMatcher
}

// secretByName is the Secret named name, or nil.
func (s *Set) secretByName(name string) *Secret {
	for i := range s.secrets {
		if s.secrets[i].Name == name {
			return &s.secrets[i]
		}
	}
	return nil
}

// awsPair is the pair whose access key id is akid: its sentinel or, once
// Egress has rewritten the Authorization header, its real value. Nil when
// none is (a pair whose named secrets are missing is never used).
func (s *Set) awsPair(akid string) *awsCreds {
	if s.Len() == 0 || akid == "" {
		return nil
	}
	for _, p := range s.opts.AWSPairs {
		id, sec := s.secretByName(p.AccessKeyID), s.secretByName(p.SecretAccessKey)
		if id == nil || sec == nil || (akid != string(id.Sentinel) && akid != string(id.Real)) {
			continue
		}
		// A signature made with the real secret is the secret's to give:
		// re-signing goes only where every part of the pair may go.
		parts := []HostMatcher{id.Hosts, sec.Hosts}
		c := &awsCreds{fakeID: string(id.Sentinel), realID: string(id.Real), secret: string(sec.Real)}
		if p.SessionToken != "" {
			tok := s.secretByName(p.SessionToken)
			if tok == nil {
				continue
			}
			c.token = string(tok.Real)
			parts = append(parts, tok.Hosts)
		}
		c.hosts = allOf(parts)
		return c
	}
	return nil
}

// headerPair is the pair named by the Credential of an Authorization
// value, or nil.
func (s *Set) headerPair(auth string) *awsCreds {
	m := credentialKeyID.FindStringSubmatch(auth)
	if m == nil {
		return nil
	}
	return s.awsPair(m[1])
}

// SigV4Request reports whether h carries a SigV4 or SigV4A Authorization
// naming the access key id (fake, or real once substituted) of one of
// Options.AWSPairs. The proxy does not substitute the body of such a
// request: its signature covers the body the client hashed (a declared
// X-Amz-Content-Sha256 is kept as is), so rewriting it would break the
// re-signed request.
func (s *Set) SigV4Request(h http.Header) bool {
	if s.Len() == 0 || len(s.opts.AWSPairs) == 0 {
		return false
	}
	for _, a := range h.Values("Authorization") {
		if (strings.HasPrefix(a, sigV4Algorithm) || strings.HasPrefix(a, sigV4AAlgorithm)) && s.headerPair(a) != nil {
			return true
		}
	}
	return false
}

// sigV4Shape is what kind of SigV4 request r is, for the pair it names.
type sigV4Shape int

const (
	shapeHeader sigV4Shape = iota
	shapeStreaming
	shapePresigned
	shapeSigV4A
	shapeSeveral
)

// classify finds the pair r's signature names and r's shape; nil when r
// names none. A query credential naming a pair (presigned URL, either
// algorithm) wins over the header: the request cannot be re-signed.
func (s *Set) classify(r *http.Request) (*awsCreds, sigV4Shape) {
	for _, c := range r.URL.Query()["X-Amz-Credential"] {
		id, _, _ := strings.Cut(c, "/")
		if p := s.awsPair(id); p != nil {
			return p, shapePresigned
		}
	}
	auths := r.Header.Values("Authorization")
	for _, a := range auths {
		p := s.headerPair(a)
		switch {
		case p == nil:
			continue
		case len(auths) > 1:
			return p, shapeSeveral
		case strings.HasPrefix(a, sigV4AAlgorithm):
			return p, shapeSigV4A
		case !strings.HasPrefix(a, sigV4Algorithm):
			continue
		case slices.ContainsFunc(r.Header.Values("X-Amz-Content-Sha256"), func(v string) bool {
			// STREAMING-UNSIGNED-PAYLOAD-TRAILER signs no chunk and no
			// trailer (aws-chunked with a checksum trailer, as the AWS
			// CLI sends for PutObject over HTTPS): its seed signature is
			// the only one, re-signed like UNSIGNED-PAYLOAD.
			return strings.HasPrefix(v, streamingPrefix) && v != unsignedTrailer
		}):
			return p, shapeStreaming
		}
		return p, shapeHeader
	}
	return nil, shapeHeader
}

// refuse is the 403 the proxy answers with.
func refuse(format string, a ...any) *Refusal {
	return &Refusal{Status: http.StatusForbidden, Reason: fmt.Sprintf(format, a...)}
}

// ResignSigV4 re-signs r, a request to host (canonical) on port whose
// headers Egress has already rewritten, when its AWS Signature Version 4
// Authorization names the access key id of one of Options.AWSPairs (its
// sentinel, or its real value once substituted) and that id's Secret.Hosts
// allow host:port, with the real key id, secret and session token
// (reference 0.0.83 "credentials.sigv4"). Any other request is left
// untouched (nil): no signature, another key (a real, unmasked one), a
// host the key may not go to.
//
// The re-signed request keeps its X-Amz-Date, region, service and body;
// it signs at least the client's SignedHeaders (less those the SDK never
// signs: User-Agent, Expect, X-Amzn-Trace-Id, Transfer-Encoding) plus
// X-Amz-Security-Token, set to the pair's real session token when it has
// one. The payload hash is X-Amz-Content-Sha256 when present (a hex hash
// or UNSIGNED-PAYLOAD, as the client declared it); otherwise ResignSigV4
// reads the body (at most MaxSigV4Body bytes), hashes it and puts it back
// (r.Body, r.ContentLength, r.GetBody). S3 paths are signed as sent
// (DisableURIPathEscaping), other services' escaped once more.
//
// It returns a *Refusal (Status 403, a Reason naming the case and no
// secret) for a shape that cannot be re-signed, unless Options.SigV4
// passes it (then nil, untouched): a streaming payload (X-Amz-Content-
// Sha256 "STREAMING-…"), a presigned URL (X-Amz-Credential in the query),
// SigV4A; and always for a malformed Authorization, several of them, no
// usable X-Amz-Date, a signed header that is missing, a body over
// MaxSigV4Body. Another error is reading the body (wrapped).
//
// The caller calls it only where Egress(host, port, verifiedTLS) is not
// nil: a re-signed request must travel where the real values may.
func (s *Set) ResignSigV4(r *http.Request, host string, port int) error {
	if s.Len() == 0 || len(s.opts.AWSPairs) == 0 || r.URL == nil {
		return nil
	}
	p, shape := s.classify(r)
	if p == nil || p.hosts == nil || !p.hosts(host, port) {
		return nil
	}
	pol := s.opts.SigV4
	switch shape {
	case shapeSeveral:
		return refuse("sigv4: several Authorization headers on a request signed with a masked AWS credential")
	case shapeStreaming:
		if pol.PassStreaming {
			return nil
		}
		return refuse("sigv4: a streaming payload (X-Amz-Content-Sha256 STREAMING-*) signed with a masked AWS credential cannot be re-signed (credentials.sigv4.streaming)")
	case shapePresigned:
		if pol.PassPresigned {
			return nil
		}
		return refuse("sigv4: a presigned URL (X-Amz-Credential) with a masked AWS credential cannot be re-signed (credentials.sigv4.presigned)")
	case shapeSigV4A:
		if pol.PassSigV4A {
			return nil
		}
		return refuse("sigv4: a SigV4A (AWS4-ECDSA-P256-SHA256) request with a masked AWS credential cannot be re-signed (credentials.sigv4.sigv4a)")
	}
	return p.resign(r)
}

// resign re-signs the header-signed request r with p.
func (p *awsCreds) resign(r *http.Request) error {
	m := sigV4Auth.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		return refuse("sigv4: a malformed AWS4-HMAC-SHA256 Authorization with a masked AWS credential cannot be re-signed")
	}
	scopeDate, region, service, listed := m[2], m[3], m[4], strings.Split(m[5], ";")
	dates := r.Header.Values("X-Amz-Date")
	if len(dates) != 1 {
		return refuse("sigv4: a request with a masked AWS credential needs exactly one X-Amz-Date to be re-signed")
	}
	at, err := time.Parse(amzDateLayout, dates[0])
	if err != nil || at.Format(amzDateLayout) != dates[0] || at.Format("20060102") != scopeDate {
		return refuse("sigv4: the X-Amz-Date of a request with a masked AWS credential is malformed or not its credential scope's date")
	}
	// AWS refuses a signature more than 15 minutes off its clock
	// (RequestTimeTooSkewed): a request dated elsewhere would only be a
	// real-secret signature to keep for later.
	if d := time.Since(at); d > maxSigV4Skew || d < -maxSigV4Skew {
		return refuse("sigv4: the X-Amz-Date of a request with a masked AWS credential is more than 15 minutes from now; it is not re-signed")
	}

	// The shadow request holds only what is signed, so that the SDK signs
	// the client's list and nothing the proxy may still change.
	u := *r.URL
	shadow := &http.Request{Method: r.Method, URL: &u, Host: r.Host, Header: http.Header{}}
	if shadow.Host == "" {
		shadow.Host = u.Host
	}
	signLen := false
	for _, name := range listed {
		switch {
		case name == "host" || slices.Contains(sdkUnsigned, name):
		case name == "x-amz-security-token" && p.token != "":
		case name == "content-length":
			signLen = true
		case len(r.Header.Values(name)) == 0:
			return refuse("sigv4: signed header %q is missing from a request with a masked AWS credential", name)
		default:
			k := http.CanonicalHeaderKey(name)
			shadow.Header[k] = r.Header.Values(name)
		}
	}

	hash, err := payloadHash(r)
	if err != nil {
		return err
	}
	if signLen {
		shadow.ContentLength = max(r.ContentLength, 0)
	}
	if p.token != "" {
		r.Header.Set("X-Amz-Security-Token", p.token)
	}
	creds := aws.Credentials{AccessKeyID: p.realID, SecretAccessKey: p.secret, SessionToken: p.token}
	err = v4.NewSigner().SignHTTP(r.Context(), creds, shadow, hash, service, region, at, func(o *v4.SignerOptions) {
		o.DisableURIPathEscaping = service == "s3" || service == "s3-object-lambda"
	})
	if err != nil {
		return fmt.Errorf("sigv4: signing: %w", err)
	}
	auth := shadow.Header.Get("Authorization")
	if err := coversList(auth, listed, signLen && r.ContentLength > 0); err != nil {
		return err
	}
	r.Header.Set("Authorization", auth)
	r.Host = shadow.Host
	return nil
}

// coversList checks that the Authorization the SDK made signs every
// header of the client's list it can sign (content-length when withLen,
// the body having a length): the proxy never forwards a request whose
// signature covers less than the client's did.
func coversList(auth string, listed []string, withLen bool) error {
	m := sigV4Auth.FindStringSubmatch(auth)
	if m == nil {
		return errors.New("sigv4: the signer made a malformed Authorization")
	}
	signed := strings.Split(m[5], ";")
	for _, name := range listed {
		skip := slices.Contains(sdkUnsigned, name) || (name == "content-length" && !withLen)
		if !skip && !slices.Contains(signed, name) {
			return refuse("sigv4: the re-signed request would not sign header %q", name)
		}
	}
	return nil
}

// payloadHash is the payload hash to sign r with: its X-Amz-Content-Sha256
// (one value) or the SHA-256 of its body, read and put back.
func payloadHash(r *http.Request) (string, error) {
	switch v := r.Header.Values("X-Amz-Content-Sha256"); len(v) {
	case 0:
	case 1:
		return v[0], nil
	default:
		return "", refuse("sigv4: several X-Amz-Content-Sha256 on a request with a masked AWS credential")
	}
	if r.Body == nil || r.Body == http.NoBody {
		sum := sha256.Sum256(nil)
		return hex.EncodeToString(sum[:]), nil
	}
	if r.ContentLength > MaxSigV4Body {
		return "", refuse("sigv4: body too large to re-sign (over %d bytes)", MaxSigV4Body)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxSigV4Body+1))
	if err != nil {
		return "", fmt.Errorf("sigv4: reading the body to hash it: %w", err)
	}
	if len(body) > MaxSigV4Body {
		return "", refuse("sigv4: body too large to re-sign (over %d bytes)", MaxSigV4Body)
	}
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
	r.TransferEncoding = nil
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:]), nil
}

// allOf is the HostMatcher allowing what every one of ms allows; nil when
// one is nil (that part may go nowhere).
func allOf(ms []HostMatcher) HostMatcher {
	for _, m := range ms {
		if m == nil {
			return nil
		}
	}
	return func(host string, port int) bool {
		for _, m := range ms {
			if !m(host, port) {
				return false
			}
		}
		return true
	}
}
