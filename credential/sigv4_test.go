package credential

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// The credentials of the tests: the real ones the verifier (botocore)
// checks against, the fakes the sandbox signs with, and another real key
// the Set does not hold.
const (
	realID, realSecret, realToken = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "IQoJb3JpZ2luX2VjEXAMPLE+TOKEN/real=="
	fakeID, fakeSecret, fakeToken = "AKIASRTMASKED0000001", "srtmaskedsecret0000000000000000000000001", "srt-masked-session-token-0000000001"
	otherID, otherSecret          = "AKIAOTHERUNMASKED001", "otherunmaskedsecret000000000000000000001"
)

// python3 that imports botocore (scripts/setup.sh installs python3-botocore).
func botocorePython(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(p, "-c", "import botocore.auth").Run() == nil {
			return p
		}
	}
	t.Fatal("no python3 with botocore: run scripts/setup.sh (python3-botocore)")
	return ""
}

// verifier starts testdata/sigv4_server.py (serve) with the real
// credentials (withToken: the session token too) and returns its address.
func verifier(t *testing.T, withToken bool) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, botocorePython(t), "testdata/sigv4_server.py", "serve")
	cmd.Env = append(os.Environ(), "SIGV4_REAL_AKID="+realID, "SIGV4_REAL_SECRET="+realSecret)
	if withToken {
		cmd.Env = append(cmd.Env, "SIGV4_REAL_TOKEN="+realToken)
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	port, ok := strings.CutPrefix(strings.TrimSpace(line), "port ")
	if err != nil || !ok {
		t.Fatalf("verifier did not start: %q %v", line, err)
	}
	return net.JoinHostPort("127.0.0.1", port)
}

func anyAWS(host string, port int) bool {
	return strings.HasSuffix(host, ".amazonaws.com") && port == 443
}

// testSet holds the pair (with a session token when withToken) whose
// hosts are *.amazonaws.com:443.
func testSet(withToken bool, pol SigV4Policy) *Set {
	secrets := []Secret{
		{Name: "env AWS_ACCESS_KEY_ID", Real: []byte(realID), Sentinel: []byte(fakeID), Hosts: anyAWS},
		{Name: "env AWS_SECRET_ACCESS_KEY", Real: []byte(realSecret), Sentinel: []byte(fakeSecret), Hosts: anyAWS},
	}
	p := AWSPair{AccessKeyID: "env AWS_ACCESS_KEY_ID", SecretAccessKey: "env AWS_SECRET_ACCESS_KEY"}
	if withToken {
		secrets = append(secrets, Secret{Name: "env AWS_SESSION_TOKEN", Real: []byte(realToken), Sentinel: []byte(fakeToken), Hosts: anyAWS})
		p.SessionToken = "env AWS_SESSION_TOKEN"
	}
	return NewSet(secrets, Options{AWSPairs: []AWSPair{p}, SigV4: pol})
}

// seen is what the forwarder did with one request.
type seen struct {
	before, after string // Authorization before and after ResignSigV4
	err           error
}

// forwarder is a stand-in for srt's proxy: it receives the client's
// request, substitutes headers (Egress) when egress is set, calls
// ResignSigV4 and forwards to the verifier at upstream; a refusal is
// answered with its status and reason.
func forwarder(t *testing.T, set *Set, upstream string, egress bool, log *[]seen) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out := r.Clone(r.Context())
		out.RequestURI = ""
		out.URL.Scheme, out.URL.Host = "http", upstream
		host, _, _ := strings.Cut(r.Host, ":")
		if egress {
			set.Egress(host, 443, true).Header(out.Header)
		}
		s := seen{before: out.Header.Get("Authorization")}
		s.err = set.ResignSigV4(out, host, 443)
		s.after = out.Header.Get("Authorization")
		*log = append(*log, s)
		if ref, ok := errors.AsType[*Refusal](s.err); ok {
			http.Error(w, ref.Reason, ref.Status)
			return
		} else if s.err != nil {
			http.Error(w, s.err.Error(), http.StatusBadGateway)
			return
		}
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// signedReq is a request to the forwarder at addr for Host host, signed
// by the AWS SDK signer with key id/secret (and token when not "") at a
// fixed time. contentSha, when not "", is sent as X-Amz-Content-Sha256
// and signed as the payload hash.
type signedReq struct {
	method, host, target, service, region string
	body                                  string
	headers                               map[string]string
	contentSha                            string
	id, secret, token                     string
}

func (s signedReq) build(t *testing.T, addr string) *http.Request {
	t.Helper()
	var body io.Reader
	if s.body != "" {
		body = strings.NewReader(s.body)
	}
	r, err := http.NewRequest(s.method, "http://"+addr+s.target, body)
	if err != nil {
		t.Fatal(err)
	}
	r.Host = s.host
	for k, v := range s.headers {
		r.Header.Set(k, v)
	}
	sum := sha256.Sum256([]byte(s.body))
	hash := hex.EncodeToString(sum[:])
	if s.contentSha != "" {
		hash = s.contentSha
		r.Header.Set("X-Amz-Content-Sha256", hash)
	}
	if s.id == "" {
		s.id, s.secret = fakeID, fakeSecret
	}
	at := time.Now().UTC().Truncate(time.Second)
	err = v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: s.id, SecretAccessKey: s.secret, SessionToken: s.token},
		r, hash, s.service, s.region, at, func(o *v4.SignerOptions) { o.DisableURIPathEscaping = s.service == "s3" })
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// send sends s to the forwarder and returns the status and body the
// client gets.
func send(t *testing.T, addr string, r *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// verified reports whether the verifier accepted a request: 200, or its
// S3's 404 for an object it does not hold (after verifying).
func verified(code int, body string) bool {
	return code == 200 || (code == 404 && strings.Contains(body, "NoSuchKey"))
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

const s3Host = "examplebucket.s3.us-east-1.amazonaws.com"

// TestResignSigV4Verifies: requests signed with the fake key, re-signed,
// verify with the real key in botocore; signed with the fake key and not
// re-signed, they do not (so the verifier can fail).
func TestResignSigV4Verifies(t *testing.T) {
	cases := []struct {
		name  string
		req   signedReq
		token bool
	}{
		{"s3 GET escaped path", signedReq{method: "GET", host: s3Host, target: "/my%20photos/a%2Bb~%281%29%2A%21.jpg", service: "s3", region: "us-east-1", contentSha: sha("")}, false},
		{"s3 GET query", signedReq{method: "GET", host: s3Host, target: "/?list-type=2&prefix=my%20photos%2F&delimiter=%2F&max-keys=5", service: "s3", region: "us-east-1", contentSha: sha("")}, false},
		{"s3 PUT body hash", signedReq{method: "PUT", host: s3Host, target: "/dir/obj%20one.txt", service: "s3", region: "eu-west-3", body: "hello, sigv4\n",
			contentSha: sha("hello, sigv4\n"), headers: map[string]string{"Content-Type": "text/plain", "X-Amz-Meta-Owner": "  two   spaces  "}}, false},
		{"s3 PUT unsigned payload", signedReq{method: "PUT", host: s3Host, target: "/unsigned.bin", service: "s3", region: "us-east-1", body: "not hashed",
			contentSha: "UNSIGNED-PAYLOAD"}, false},
		{"s3 PUT unsigned streaming with a checksum trailer", signedReq{method: "PUT", host: s3Host, target: "/trailer.bin", service: "s3", region: "us-east-1",
			body: "5\r\nhello\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n", contentSha: "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
			headers: map[string]string{"Content-Encoding": "aws-chunked", "X-Amz-Trailer": "x-amz-checksum-crc32", "X-Amz-Decoded-Content-Length": "5"}}, false},
		{"s3 GET session token", signedReq{method: "GET", host: s3Host, target: "/tok", service: "s3", region: "us-east-1", contentSha: sha(""), token: fakeToken}, true},
		{"s3 GET session token the client did not send", signedReq{method: "GET", host: s3Host, target: "/tok2", service: "s3", region: "us-east-1", contentSha: sha("")}, true},
		{"sts POST form", signedReq{method: "POST", host: "sts.amazonaws.com", target: "/", service: "sts", region: "us-east-1",
			body: "Action=GetCallerIdentity&Version=2011-06-15", headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}}, false},
		{"dynamodb POST JSON token", signedReq{method: "POST", host: "dynamodb.us-west-2.amazonaws.com", target: "/", service: "dynamodb", region: "us-west-2",
			body: `{"TableName":"t","Key":{"id":{"S":"x y"}}}`, token: fakeToken,
			headers: map[string]string{"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "DynamoDB_20120810.GetItem"}}, true},
		{"execute-api escaped path", signedReq{method: "GET", host: "abc123.execute-api.us-east-1.amazonaws.com", target: "/prod/items/a%20b?q=1%2B1", service: "execute-api", region: "us-east-1"}, false},
	}
	ups := map[bool]string{false: verifier(t, false), true: verifier(t, true)}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := ups[tc.token]
			for _, egress := range []bool{false, true} {
				var log []seen
				addr := forwarder(t, testSet(tc.token, SigV4Policy{}), up, egress, &log)
				code, body := send(t, addr, tc.req.build(t, addr))
				if !verified(code, body) {
					t.Fatalf("egress %v: re-signed request: %d %s", egress, code, body)
				}
				if len(log) != 1 || log[0].before == log[0].after || !strings.Contains(log[0].after, "Credential="+realID+"/") {
					t.Fatalf("egress %v: not re-signed: %+v", egress, log)
				}
				if strings.Contains(body, realSecret) || strings.Contains(log[0].after, realSecret) {
					t.Fatal("the real secret travels")
				}
			}
			// The same request not re-signed does not verify.
			var log []seen
			addr := forwarder(t, nil, up, false, &log)
			if code, body := send(t, addr, tc.req.build(t, addr)); code != 403 {
				t.Fatalf("fake-signed request verified: %d %s", code, body)
			}
		})
	}
}

// TestResignSigV4Untouched: a request signed with a key the Set does not
// hold, or to a host the key may not go to, is forwarded as it came.
func TestResignSigV4Untouched(t *testing.T) {
	up := verifier(t, false)
	cases := []struct {
		name string
		req  signedReq
	}{
		{"another real key", signedReq{method: "GET", host: s3Host, target: "/x", service: "s3", region: "us-east-1", contentSha: sha(""), id: otherID, secret: otherSecret}},
		{"wrong host", signedReq{method: "GET", host: "s3.evil.example", target: "/x", service: "s3", region: "us-east-1", contentSha: sha("")}},
		{"no signature", signedReq{method: "GET", host: s3Host, target: "/x", service: "s3", region: "us-east-1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var log []seen
			addr := forwarder(t, testSet(false, SigV4Policy{}), up, true, &log)
			r := tc.req.build(t, addr)
			if tc.name == "no signature" {
				r.Header.Del("Authorization")
			}
			want := r.Header.Get("Authorization")
			code, body := send(t, addr, r)
			if len(log) != 1 || log[0].err != nil || log[0].before != want || log[0].after != want {
				t.Fatalf("touched: %+v (sent %q)", log, want)
			}
			if code != 403 && code != 400 {
				t.Fatalf("verifier accepted an untouched request: %d %s", code, body)
			}
		})
	}
}

// TestResignSigV4Refusals: the shapes that cannot be re-signed are
// refused with 403 naming the case, or forwarded untouched when the
// policy passes them.
func TestResignSigV4Refusals(t *testing.T) {
	up := verifier(t, false)
	streaming := signedReq{method: "PUT", host: s3Host, target: "/s", service: "s3", region: "us-east-1", body: "5;chunk-signature=00\r\nhello\r\n",
		contentSha: "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"}
	presigned := signedReq{method: "GET", host: s3Host, service: "s3", region: "us-east-1",
		target: "/p?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" + fakeID + "%2F20240101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20240101T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=00"}
	cases := []struct {
		name, reason string
		req          signedReq
		edit         func(*http.Request)
		pass         SigV4Policy
	}{
		{"streaming", "streaming", streaming, nil, SigV4Policy{PassStreaming: true}},
		{"presigned", "presigned", presigned, func(r *http.Request) { r.Header.Del("Authorization") }, SigV4Policy{PassPresigned: true}},
		{"sigv4a", "SigV4A", signedReq{method: "GET", host: s3Host, target: "/a", service: "s3", region: "us-east-1"}, func(r *http.Request) {
			r.Header.Set("Authorization", "AWS4-ECDSA-P256-SHA256 Credential="+fakeID+"/20240101/s3/aws4_request, SignedHeaders=host;x-amz-date;x-amz-region-set, Signature=3045022100")
			r.Header.Set("X-Amz-Region-Set", "*")
		}, SigV4Policy{PassSigV4A: true}},
		{"missing signed header", "missing", signedReq{method: "GET", host: s3Host, target: "/m", service: "s3", region: "us-east-1", headers: map[string]string{"X-Amz-Meta-A": "1"}}, func(r *http.Request) {
			r.Header.Del("X-Amz-Meta-A")
		}, SigV4Policy{PassStreaming: true, PassPresigned: true, PassSigV4A: true}},
		{"date not the scope's", "X-Amz-Date", signedReq{method: "GET", host: s3Host, target: "/d", service: "s3", region: "us-east-1"}, func(r *http.Request) {
			r.Header.Set("X-Amz-Date", "19990101T000000Z")
		}, SigV4Policy{PassStreaming: true, PassPresigned: true, PassSigV4A: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, pol := range []SigV4Policy{{}, tc.pass} {
				var log []seen
				addr := forwarder(t, testSet(false, pol), up, true, &log)
				r := tc.req.build(t, addr)
				if tc.edit != nil {
					tc.edit(r)
				}
				code, body := send(t, addr, r)
				refused := pol == SigV4Policy{} || tc.reason == "missing" || tc.reason == "X-Amz-Date"
				if refused {
					ref, ok := errors.AsType[*Refusal](log[0].err)
					if code != 403 || !ok || ref.Status != 403 || !strings.Contains(body, tc.reason) || strings.Contains(body, fakeID) {
						t.Fatalf("policy %+v: want a 403 naming %q: %d %q %v", pol, tc.reason, code, body, log[0].err)
					}
					continue
				}
				if log[0].err != nil || log[0].before != log[0].after || strings.Contains(body, "sigv4:") {
					t.Fatalf("policy %+v: passed request touched: %+v %d %s", pol, log, code, body)
				}
			}
		})
	}
}

// TestResignSigV4Body: a body hashed by ResignSigV4 is put back whole; one
// over MaxSigV4Body is refused.
func TestResignSigV4Body(t *testing.T) {
	set := testSet(false, SigV4Policy{})
	mk := func(body io.Reader, n int64) *http.Request {
		r := signedReq{method: "POST", host: "sts.amazonaws.com", target: "/", service: "sts", region: "us-east-1", body: "x"}.build(t, "127.0.0.1:1")
		r.Body, r.ContentLength, r.GetBody = io.NopCloser(body), n, nil
		return r
	}
	want := strings.Repeat("body ", 1000)
	r := mk(strings.NewReader(want), -1)
	if err := set.ResignSigV4(r, "sts.amazonaws.com", 443); err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(r.Body)
	again, _ := r.GetBody()
	got2, _ := io.ReadAll(again)
	if string(got) != want || string(got2) != want || r.ContentLength != int64(len(want)) {
		t.Fatalf("body not put back: %d %d %d", len(got), len(got2), r.ContentLength)
	}
	for _, n := range []int64{-1, MaxSigV4Body + 1} {
		r := mk(io.LimitReader(zeros{}, MaxSigV4Body+1), n)
		err := set.ResignSigV4(r, "sts.amazonaws.com", 443)
		if ref, ok := errors.AsType[*Refusal](err); !ok || ref.Status != 403 || !strings.Contains(ref.Reason, "body too large to re-sign") {
			t.Fatalf("length %d: %v", n, err)
		}
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestSigV4Request tells the proxy which bodies not to substitute.
func TestSigV4Request(t *testing.T) {
	set := testSet(false, SigV4Policy{})
	for auth, want := range map[string]bool{
		"AWS4-HMAC-SHA256 Credential=" + fakeID + "/20240101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00":  true,
		"AWS4-HMAC-SHA256 Credential=" + realID + "/20240101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00":  true,
		"AWS4-ECDSA-P256-SHA256 Credential=" + fakeID + "/20240101/s3/aws4_request, SignedHeaders=host, Signature=00":      true,
		"AWS4-HMAC-SHA256 Credential=" + otherID + "/20240101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00": false,
		"Bearer " + fakeID + "/x": false,
		"":                        false,
	} {
		h := http.Header{}
		if auth != "" {
			h.Set("Authorization", auth)
		}
		if got := set.SigV4Request(h); got != want {
			t.Errorf("%q: %v, want %v", auth, got, want)
		}
	}
	var none *Set
	if none.SigV4Request(http.Header{"Authorization": {"AWS4-HMAC-SHA256 Credential=" + fakeID + "/"}}) {
		t.Error("nil Set")
	}
	if err := none.ResignSigV4(httptest.NewRequest("GET", "/", bytes.NewReader(nil)), "s3.amazonaws.com", 443); err != nil {
		t.Error(err)
	}
}

// TestResignSigV4Gates: a pair is re-signed for a host only where every
// part of it may go (the secret's hosts count, not only the key id's),
// and never for a request dated more than 15 minutes from now.
func TestResignSigV4Gates(t *testing.T) {
	onlyEU := func(host string, port int) bool { return host == "s3.eu-west-3.amazonaws.com" && port == 443 }
	set := NewSet([]Secret{
		{Name: "id", Real: []byte(realID), Sentinel: []byte(fakeID), Hosts: anyAWS},
		{Name: "secret", Real: []byte(realSecret), Sentinel: []byte(fakeSecret), Hosts: onlyEU},
	}, Options{AWSPairs: []AWSPair{{AccessKeyID: "id", SecretAccessKey: "secret"}}})
	req := func(at time.Time) *http.Request {
		r, _ := http.NewRequest("GET", "https://s3.amazonaws.com/x", nil)
		d := at.UTC().Format(amzDateLayout)
		r.Header.Set("X-Amz-Date", d)
		r.Header.Set("X-Amz-Content-Sha256", sha(""))
		r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+fakeID+"/"+d[:8]+"/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature="+strings.Repeat("0", 64))
		return r
	}
	r := req(time.Now())
	before := r.Header.Get("Authorization")
	if err := set.ResignSigV4(r, "s3.amazonaws.com", 443); err != nil || r.Header.Get("Authorization") != before {
		t.Fatalf("re-signed for a host the secret may not go to: %v %q", err, r.Header.Get("Authorization"))
	}
	r = req(time.Now())
	if err := set.ResignSigV4(r, "s3.eu-west-3.amazonaws.com", 443); err != nil || r.Header.Get("Authorization") == before {
		t.Fatalf("not re-signed where both parts may go: %v", err)
	}
	r = req(time.Now().Add(-time.Hour))
	var ref *Refusal
	if err := set.ResignSigV4(r, "s3.eu-west-3.amazonaws.com", 443); !errors.As(err, &ref) || !strings.Contains(ref.Reason, "15 minutes") {
		t.Fatalf("a request dated an hour ago: %v, want a refusal", err)
	}
}
