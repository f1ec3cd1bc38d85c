package proxy

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/srt-go/srt/credential"
	"github.com/srt-go/srt/netrule"
)

// Credential substitution (Config.Credentials, issue 18; reference 0.0.83
// "credentials"). The sandbox holds sentinels, never real values:
//
//   - A request is judged, filtered and reported with the sentinels it
//     carries. Only then, just before it is forwarded, are the sentinels
//     of the secrets whose hosts allow its destination replaced by their
//     real values, in its headers and body (Set.Egress), and a SigV4
//     request re-signed (Set.ResignSigV4). Inside a terminated tunnel
//     that needs the request to name the tunnel's target (hostMatch),
//     whatever network.requireHostMatch says: with Host fronting, the
//     upstream would route a real value to the name the client chose. In
//     cleartext it needs credentials.allowPlaintextInject.
//   - Everything that goes back to the sandbox, from every host, injected
//     or not, has each real value replaced by its sentinel (Set.Ingress):
//     status text, headers, body, trailers, an upgraded connection's
//     bytes, and the error pages srt writes. So that the proxy sees the
//     bytes the sandbox will, the client's Accept-Encoding is dropped and
//     the upstream Transports ask for gzip themselves and decode it; a
//     response still encoded otherwise is refused.
//
// Nothing here logs a header value or a body.
//
// Answers on the wire, besides those of HTTPProxy.Serve and Terminate:
//
//	SigV4 request refused     the Refusal's status (403), X-Proxy-Error:
//	                            credential-refused, body its reason; a
//	                            violation with Rule "credentials"
//	response encoded (not     502, X-Proxy-Error: credential-unscannable
//	  gzip, not identity)
//	Upgrade when a real value 403, X-Proxy-Error: credential-unscannable;
//	  and its sentinel differ   a violation with Rule "credentials"
//	  in length

// RuleCredentials is the Rule of a violation for a request refused for
// the credentials it carries.
const RuleCredentials = "credentials"

// X-Proxy-Error values of credential substitution.
const (
	errHdrCredRefused     = "credential-refused"
	errHdrCredUnscannable = "credential-unscannable"
)

// maxInjectBuffer bounds the request body buffered to give it its exact
// Content-Length after a substitution that changes lengths; a longer body
// is streamed with no length (chunked on HTTP/1.1).
const maxInjectBuffer = 16 << 20

// resignSigV4 is Set.ResignSigV4, a variable so that tests can make it
// refuse.
var resignSigV4 = (*credential.Set).ResignSigV4

// decodeForCredentials lets the upstream Transports ask for gzip and
// decode it (a Set with secrets only), so that the bodies Ingress scans
// are the bytes the client will read. Called by New.
func (s *Server) decodeForCredentials() {
	if s.cfg.Credentials.Len() == 0 {
		return
	}
	// The Transport's own decoding reads only the first Content-Encoding
	// line and then drops them all, so a second "gzip" line would hide a
	// body still encoded: scrubResponse decodes, seeing every line.
	for _, tr := range []*http.Transport{s.transport, s.viaParent} {
		if tr != nil {
			tr.DisableCompression = true
		}
	}
	if s.term != nil {
		s.term.upstream.h1.DisableCompression = true
		s.term.upstream.h2.DisableCompression = true
	}
}

// credentialsTerminated makes the credential edits on out, the request r
// of tunnel tn about to be forwarded (after judging and filtering).
// upgrade says it asks for an Upgrade. A non-nil answer is written
// instead of forwarding (refuseTerminated).
func (s *Server) credentialsTerminated(out, r *http.Request, tn *tunnel, upgrade bool) *termRefusal {
	set := s.cfg.Credentials
	if set.Len() == 0 {
		return nil
	}
	if upgrade {
		// An upgraded connection (a websocket) cannot be scrubbed: a value
		// split across fragmented frames, or in frames the server
		// compresses (permessage-deflate, which it may turn on in its 101
		// whatever the request offered), passes any byte scanner.
		return &termRefusal{status: http.StatusForbidden, xerr: errHdrCredUnscannable, rule: RuleCredentials,
			reason: "Upgrade: an upgraded connection (websocket) cannot be scrubbed of real credential values; it is refused while a credential is masked"}
	}
	// Injection needs the request to name the target, even where the host
	// match is off: the upstream routes by the Host the client chose.
	inject := hostMatch(r, tn.d.Host, tn.port, tn.sni) == ""
	ref, err := s.credentialsRequest(out, tn.d.Host, tn.port, true, inject)
	if err != nil {
		return &termRefusal{status: http.StatusBadGateway, reason: err.Error()}
	}
	if ref != nil {
		return &termRefusal{status: ref.Status, xerr: errHdrCredRefused, reason: ref.Reason, rule: RuleCredentials}
	}
	return nil
}

// credentialsRequest makes the credential edits on out, a request to host
// (canonical) and port about to be forwarded: the client's
// Accept-Encoding is dropped (see decodeForCredentials) and, when inject,
// Egress's sentinels replaced in its headers and body and a SigV4
// request re-signed. verifiedTLS says it travels over TLS srt verifies.
// It returns the Refusal of ResignSigV4, or an error reading the
// request's body or re-signing it, when out must not be forwarded.
//
// In cleartext, a request is re-signed only when Egress injects there
// (credentials.allowPlaintextInject, and a secret for the host): a
// signature made with the real secret is a credential too.
func (s *Server) credentialsRequest(out *http.Request, host string, port int, verifiedTLS, inject bool) (*credential.Refusal, error) {
	set := s.cfg.Credentials
	if set.Len() == 0 {
		return nil, nil
	}
	// The proxy asks for gzip itself and decodes it (scrubResponse), and
	// asks for whole bodies: a byte range can cut a stored value into
	// pieces no scan recognises.
	out.Header.Set("Accept-Encoding", "gzip")
	for _, h := range []string{"Range", "If-Range"} {
		out.Header.Del(h)
	}
	if !inject {
		return nil, nil
	}
	er := set.Egress(host, port, verifiedTLS)
	if er != nil {
		er.Header(out.Header)
		// A request signed with a masked AWS key keeps its body as the
		// client hashed it: ResignSigV4 signs that hash (or hashes the
		// body as it goes), and an AWS API body carries no credential.
		if !set.SigV4Request(out.Header) {
			if err := injectBody(out, er); err != nil {
				return nil, err
			}
		}
	}
	if er == nil && !verifiedTLS {
		return nil, nil
	}
	if err := resignSigV4(set, out, host, port); err != nil {
		if ref, ok := errors.AsType[*credential.Refusal](err); ok {
			return ref, nil
		}
		return nil, fmt.Errorf("re-signing the request with a masked credential: %w", err)
	}
	return nil, nil
}

// refusePlainCredentials answers a plain-HTTP request that
// credentialsRequest would not let go: ref refused (reported), or err.
func (s *Server) refusePlainCredentials(bw *bufio.Writer, host string, port int, ref *credential.Refusal, err error) {
	if err != nil {
		writeSimple(bw, http.StatusBadGateway, "Bad Gateway", s.scrub(err.Error()))
		return
	}
	writeResponse(bw, strconv.Itoa(ref.Status)+" "+http.StatusText(ref.Status), errHdrCredRefused, cleanBody(ref.Reason+"\n"))
	s.violation("http", netrule.Decision{Host: host, Reason: ref.Reason, Rule: RuleCredentials}, port)
}

// injectBody replaces out's body with er's substitution of it. The
// Content-Length stays when er keeps lengths; otherwise a body of up to
// maxInjectBuffer is read whole to give it its new length, and a longer
// one streamed with none. A body with a Content-Encoding is left alone
// (its sentinels cannot be seen; they reach the upstream as they are,
// which fails safe).
func injectBody(out *http.Request, er *credential.Replacer) error {
	if out.Body == nil || out.Body == http.NoBody || out.Header.Get("Content-Encoding") != "" {
		return nil
	}
	orig := out.Body
	sub := er.Reader(orig)
	out.GetBody = nil
	if er.LengthPreserving() {
		out.Body = readCloser{sub, orig}
		return nil
	}
	out.Header.Del("Content-Length")
	out.TransferEncoding = nil // framed anew from ContentLength
	buf, err := io.ReadAll(io.LimitReader(sub, maxInjectBuffer+1))
	if err != nil {
		return fmt.Errorf("reading the request body: %w", err)
	}
	switch {
	case len(buf) == 0:
		out.Body, out.ContentLength = http.NoBody, 0
	case len(buf) <= maxInjectBuffer:
		out.Body, out.ContentLength = readCloser{bytes.NewReader(buf), orig}, int64(len(buf))
	default:
		out.Body, out.ContentLength = readCloser{io.MultiReader(bytes.NewReader(buf), sub), orig}, -1
	}
	return nil
}

// readCloser reads from one reader and closes another: a substituted
// body closes the body it reads.
type readCloser struct {
	io.Reader
	io.Closer
}

// scrubResponse replaces, in resp as it goes back to the client, every
// real value by its sentinel (status text, headers, body, trailers),
// when Config.Credentials holds secrets. It returns why resp cannot be
// passed on, or "": a body still encoded (a Content-Encoding other than
// identity), which the proxy cannot see inside. The Content-Length is
// dropped when a substitution may change it. Not for a 101 (relayUpgrade
// scrubs those).
func (s *Server) scrubResponse(resp *http.Response) string {
	in := s.cfg.Credentials.Ingress()
	if in == nil {
		return ""
	}
	if resp.StatusCode == http.StatusPartialContent {
		// The request asked for no range (credentialsRequest).
		return "the response is a part of a body (206), which the proxy cannot scan for real credential values whole"
	}
	if hasBody(resp) {
		var codings []string
		for _, v := range resp.Header.Values("Content-Encoding") {
			for _, t := range strings.Split(v, ",") {
				if t = strings.TrimSpace(t); t != "" && !strings.EqualFold(t, "identity") {
					codings = append(codings, t)
				}
			}
		}
		switch {
		case len(codings) == 1 && strings.EqualFold(codings[0], "gzip"):
			zr, err := gzip.NewReader(resp.Body)
			if err != nil {
				return "the response's gzip body does not decode, so the proxy cannot scan it for real credential values"
			}
			resp.Body = readCloser{zr, resp.Body}
			resp.Header.Del("Content-Encoding")
			resp.Header.Del("Content-Length")
			resp.ContentLength = -1
		case len(codings) > 0:
			return "the response is encoded (Content-Encoding " + sanitize(strings.Join(codings, ", "), 60) +
				"), so the proxy cannot keep real credential values out of it"
		}
	}
	resp.Status = in.String(resp.Status)
	scrubHeader(in, resp.Header)
	scrubHeader(in, resp.Trailer) // the names now, the values at the end of the body
	if !in.LengthPreserving() {
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
	}
	if resp.ContentLength < 0 && hasBody(resp) {
		// For Response.Write (plain HTTP): a body the Transport decoded,
		// or one that changed length, is framed by chunks.
		resp.TransferEncoding = []string{"chunked"}
	}
	resp.Uncompressed = false
	trailer := resp.Trailer
	resp.Body = &scrubbedBody{r: in.Reader(resp.Body), c: resp.Body, atEOF: func() { scrubHeader(in, trailer) }}
	return ""
}

// hasBody reports whether resp may carry a body (RFC 9110 §6.4.1).
func hasBody(resp *http.Response) bool {
	if resp.Request != nil && resp.Request.Method == http.MethodHead {
		return false
	}
	c := resp.StatusCode
	return c >= 200 && c != http.StatusNoContent && c != http.StatusNotModified
}

// scrubbedBody is a response body read through Ingress; atEOF runs once
// when it ends, when the Transport has filled in the trailers.
type scrubbedBody struct {
	r     io.Reader
	c     io.Closer
	atEOF func()
	ended bool
}

func (b *scrubbedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF && !b.ended {
		b.ended = true
		b.atEOF()
	}
	return n, err
}

func (b *scrubbedBody) Close() error { return b.c.Close() }

// scrubHeader is in.Header on h's names as well as its values. Nil-safe.
func scrubHeader(in *credential.Replacer, h http.Header) {
	if in == nil || h == nil {
		return
	}
	var renamed []string
	for k := range h {
		if in.String(k) != k {
			renamed = append(renamed, k)
		}
	}
	for _, k := range renamed {
		vv := h[k]
		delete(h, k)
		nk := in.String(k)
		h[nk] = append(h[nk], vv...)
	}
	in.Header(h)
}

// scrub is Ingress().String: s with every real value replaced by its
// sentinel, for the error pages srt writes.
func (s *Server) scrub(str string) string {
	return s.cfg.Credentials.Ingress().String(str)
}
