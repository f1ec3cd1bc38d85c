package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/srt-go/srt/netrule"
)

// termRefusal is the answer to a decrypted request that is not
// forwarded: its status, X-Proxy-Error, the reason (the body, and the
// violation's), and the violation's Rule.
type termRefusal struct {
	status int
	xerr   string
	reason string
	rule   string
}

// judgeTerminated is where each decrypted request is judged before it is
// forwarded: host is the CONNECT target (canonical), port its port, sni
// the client's TLS server name (lower-cased, "" for none). It returns nil
// to forward r, or the refusal, which the caller writes and reports as a
// violation.
//
// Today it applies network.requireHostMatch (unless
// Terminate.AllowHostMismatch): the TLS server name, the Host header (or
// HTTP/2 :authority) and an absolute-form target must all name host, and
// the port when one is given (443 when none is). Request filtering
// (judgeRequest) comes after it, in serveTerminated.
func (s *Server) judgeTerminated(ctx context.Context, r *http.Request, host string, port int, sni string) *termRefusal {
	if !s.term.cfg.AllowHostMismatch {
		if why := hostMatch(r, host, port, sni); why != "" {
			return &termRefusal{status: http.StatusMisdirectedRequest, xerr: errHdrHostMatch, reason: why, rule: RuleHostMatch}
		}
	}
	return nil
}

// hostMatch returns why r, in a tunnel to host:port whose client named
// sni, does not name that host, or "".
func hostMatch(r *http.Request, host string, port int, sni string) string {
	target := net.JoinHostPort(host, strconv.Itoa(port))
	if sni != "" {
		if got, _, err := netrule.CanonicalHost(sni); err != nil || got != host {
			return fmt.Sprintf("TLS server name %q does not match the CONNECT target %s", sanitize(sni, 100), target)
		}
	}
	names := append([]string{r.Host}, r.Header.Values("Host")...)
	if r.URL.Host != "" {
		names = append(names, r.URL.Host)
	}
	for _, hp := range names {
		if !authorityIs(hp, host, port) {
			return fmt.Sprintf("Host %q does not match the CONNECT target %s", sanitize(hp, 100), target)
		}
	}
	return ""
}

// authorityIs reports whether authority hp ("host", "host:port",
// "[v6]:port") names host (canonical) and port, 443 when it has none.
func authorityIs(hp, host string, port int) bool {
	h, p := hp, 443
	if hh, ps, err := net.SplitHostPort(hp); err == nil {
		n, err := strconv.Atoi(ps)
		if err != nil || ps == "" || ps[0] == '+' {
			return false
		}
		h, p = hh, n
	}
	got, _, err := netrule.CanonicalHost(h)
	return err == nil && got == host && p == port
}

// serveTerminated serves one decrypted request of tunnel tn: judged,
// then forwarded to the tunnel's target. finish ends the tunnel; it is
// called only after an Upgrade, whose connection this handler then owns.
func (s *Server) serveTerminated(w http.ResponseWriter, r *http.Request, tn *tunnel, finish func()) {
	ctx := r.Context()
	if ref := s.judgeTerminated(ctx, r, tn.d.Host, tn.port, tn.sni); ref != nil {
		s.refuseTerminated(w, tn, ref)
		return
	}
	// Request filtering, as on plain HTTP (judgeRequest): the target must
	// be in origin form here, and a judged one goes upstream as spelled.
	var dec FilterDecision
	var target *url.URL
	if s.cfg.active(tn.d.Host, tn.port) {
		t, terr := parseTarget(r.RequestURI, false)
		fr := newFilterRequest(r.Method, "https", tn.d.Host, tn.port, t, withoutHopByHop(r.Header), tn.sni)
		var refusal *requestRefusal
		if refusal, dec = s.judgeRequest(ctx, fr, t, terr); refusal != nil {
			refusal.ServeHTTP(w, r)
			s.requestViolation("https", fr, refusal)
			return
		}
		target = upstreamURL(&url.URL{Scheme: "https", Host: net.JoinHostPort(tn.d.Host, strconv.Itoa(tn.port))},
			t, s.cfg.AmbiguousTarget == AmbiguousNormalize, false)
	}
	upgrade := r.ProtoMajor == 1 && hasToken(r.Header, "Connection", "upgrade") && r.Header.Get("Upgrade") != ""
	upProto := r.Header.Get("Upgrade")
	if upgrade {
		if ref := s.judgeUpgrade(tn, upProto); ref != nil {
			s.refuseTerminated(w, tn, ref)
			return
		}
	}
	te := hasToken(r.Header, "Te", "trailers")

	out := r.Clone(context.WithValue(ctx, tunnelKey{}, tn))
	out.RequestURI = ""
	out.URL.Scheme = "https"
	out.URL.Host = net.JoinHostPort(tn.d.Host, strconv.Itoa(tn.port))
	out.Host = r.Host // checked against the target unless AllowHostMismatch
	out.Close = false
	removeHopByHop(out.Header)
	out.Header.Del("Host")
	applyRequestEdits(out.Header, dec)
	if target != nil {
		out.URL = target
	}
	if te {
		out.Header.Set("Te", "trailers") // gRPC needs it; it is about the message
	}
	if upgrade {
		out.Header.Set("Connection", "Upgrade")
		out.Header.Set("Upgrade", upProto)
	}
	// Last, so that judging, filtering and their reports saw sentinels.
	if ref := s.credentialsTerminated(out, r, tn, upgrade); ref != nil {
		s.refuseTerminated(w, tn, ref)
		return
	}
	resp, err := s.term.upstream.forRequest(r).RoundTrip(out)
	if err != nil {
		s.upstreamFailed(ctx, w, tn, err)
		return
	}
	defer resp.Body.Close()
	if upgrade && resp.StatusCode == http.StatusSwitchingProtocols {
		s.relayUpgrade(ctx, w, resp, finish)
		return
	}
	removeHopByHop(resp.Header)
	if why := s.scrubResponse(resp); why != "" {
		s.writeTermError(w, http.StatusBadGateway, errHdrCredUnscannable, why)
		return
	}
	s.editResponse(resp, dec)
	h := w.Header()
	for k, vv := range resp.Header {
		h[k] = vv
	}
	declared := make(map[string]bool, len(resp.Trailer))
	if len(resp.Trailer) > 0 {
		// An HTTP/1.1 body with a length has no room for trailers: chunked.
		h.Del("Content-Length")
	}
	for k := range resp.Trailer {
		h.Add("Trailer", k)
		declared[k] = true
	}
	w.WriteHeader(resp.StatusCode)
	if err := copyBody(w, resp.Body, resp.ContentLength < 0); err != nil {
		if errors.Is(err, errUpstreamBody) {
			// The client must not take a cut body for a whole one.
			panic(http.ErrAbortHandler)
		}
		return
	}
	for k, vv := range resp.Trailer {
		if declared[k] {
			h[k] = vv
		} else {
			h[http.TrailerPrefix+k] = vv
		}
	}
}

// hasToken reports whether a comma-separated header name holds token
// (case-insensitively).
func hasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// errUpstreamBody marks a failure reading the upstream's body, as
// opposed to writing it to the client.
var errUpstreamBody = errors.New("reading the upstream's body")

// copyBufSize is the size of copyBody's buffers: four TLS records, so a
// chunked HTTP/1.1 answer spends one chunk header per 64 KiB rather than
// per 32 KiB read and an HTTP/2 one a DATA frame as large.
const copyBufSize = 64 << 10

var copyBufs = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

// copyBody streams src to w. A body of unknown length (flush) may be a
// stream of events, so what has been written is flushed to the client
// whenever src has nothing more ready, and never waits in a buffer for
// more; while it has, writes are not flushed one by one (each flush costs
// a TLS record, and on HTTP/1.1 a chunk of its own). A body with a
// length is buffered as the server sees fit.
//
// The caller closes src after copyBody returns, which ends its reader
// (streamBody) if it is still blocked in src.Read.
func copyBody(w http.ResponseWriter, src io.Reader, flush bool) error {
	if flush {
		return streamBody(w, src)
	}
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return fmt.Errorf("%w: %w", errUpstreamBody, rerr)
		}
	}
}

// readChunk is what streamBody's reader read: buf[:n], then err.
type readChunk struct {
	buf *[]byte
	n   int
	err error
}

// streamBody is copyBody of a body of unknown length. A goroutine reads
// src and hands each read over an unbuffered channel, so a read that is
// ready is exactly one the reader is waiting to hand over: when none is,
// src would block, and w is flushed before waiting for the next. Two
// buffers are in use: one written to w, one being read.
func streamBody(w http.ResponseWriter, src io.Reader) error {
	rc := http.NewResponseController(w)
	chunks := make(chan readChunk)
	free := make(chan *[]byte, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		bp := copyBufs.Get().(*[]byte)
		for {
			n, err := src.Read(*bp)
			select {
			case chunks <- readChunk{bp, n, err}:
			case <-stop:
				copyBufs.Put(bp)
				return
			}
			if err != nil {
				return // the writer puts bp back
			}
			select {
			case bp = <-free:
			default:
				bp = copyBufs.Get().(*[]byte)
			}
		}
	}()
	for {
		var c readChunk
		select {
		case c = <-chunks:
		default:
			if err := rc.Flush(); err != nil {
				return err
			}
			c = <-chunks
		}
		var werr error
		if c.n > 0 {
			_, werr = w.Write((*c.buf)[:c.n])
		}
		if c.err != nil || werr != nil {
			copyBufs.Put(c.buf)
		} else {
			select {
			case free <- c.buf:
			default:
				copyBufs.Put(c.buf)
			}
		}
		switch {
		case werr != nil:
			return werr
		case c.err == io.EOF:
			return nil
		case c.err != nil:
			return fmt.Errorf("%w: %w", errUpstreamBody, c.err)
		}
	}
}

// refuseTerminated writes ref as the answer to a request of tunnel tn and
// reports it (unless it has no rule: a failure, not a refusal).
func (s *Server) refuseTerminated(w http.ResponseWriter, tn *tunnel, ref *termRefusal) {
	s.writeTermError(w, ref.status, ref.xerr, ref.reason)
	if ref.rule == "" {
		return
	}
	s.violation("connect", netrule.Decision{Host: tn.d.Host, Reason: ref.reason, Rule: ref.rule}, tn.port)
}

// upstreamFailed answers a request whose upstream round trip failed.
func (s *Server) upstreamFailed(ctx context.Context, w http.ResponseWriter, tn *tunnel, err error) {
	if ctx.Err() != nil {
		return // the client has gone
	}
	if re, ok := isRefused(err); ok {
		s.writeTermError(w, http.StatusForbidden, errHdrAddress, "Connection to "+tn.d.Host+" blocked: "+re.Decision.Reason)
		s.violation("connect", re.Decision, tn.port)
		return
	}
	if pe, ok := isParentRefusal(err); ok {
		s.logParentRefusal(ctx, pe)
		s.writeTermError(w, http.StatusBadGateway, errHdrParent, pe.Error())
		return
	}
	if isCertError(err) {
		s.log.LogAttrs(ctx, slog.LevelWarn, "terminated tunnel: upstream certificate not trusted", slog.String("host", tn.d.Host), slog.String("error", s.scrub(err.Error())))
		s.writeTermError(w, http.StatusBadGateway, errHdrUpstreamCA,
			"the certificate of "+net.JoinHostPort(tn.d.Host, strconv.Itoa(tn.port))+" is not trusted by the sandbox runtime: "+err.Error())
		return
	}
	s.log.LogAttrs(ctx, slog.LevelDebug, "terminated tunnel: upstream failed", slog.String("host", tn.d.Host), slog.String("error", s.scrub(err.Error())))
	s.writeTermError(w, http.StatusBadGateway, "", "upstream request failed: "+err.Error())
}

// isCertError reports whether err is the upstream's certificate failing
// verification.
func isCertError(err error) bool {
	var (
		ve *tls.CertificateVerificationError
		ua x509.UnknownAuthorityError
		he x509.HostnameError
		ci x509.CertificateInvalidError
	)
	return errors.As(err, &ve) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci)
}

// writeTermError writes srt's own answer to a request of a terminated
// tunnel: body, scrubbed of real credential values (it may quote an
// upstream's error), as text.
func (s *Server) writeTermError(w http.ResponseWriter, status int, xerr, body string) {
	body = s.scrub(body)
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	if xerr != "" {
		h.Set("X-Proxy-Error", xerr)
	}
	w.WriteHeader(status)
	io.WriteString(w, cleanBody(body)+"\n")
}

// relayUpgrade passes a 101 Switching Protocols (a WebSocket) on to the
// client and relays both ways until either side ends, then closes both
// and finishes the tunnel. Only HTTP/1.1 clients get here.
func (s *Server) relayUpgrade(ctx context.Context, w http.ResponseWriter, resp *http.Response, finish func()) {
	up, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		s.writeTermError(w, http.StatusBadGateway, "", "upstream switched protocols without a connection to relay")
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelDebug, "terminated tunnel: hijack failed", slog.Any("error", err))
		return
	}
	defer finish()
	defer conn.Close()
	upProto := resp.Header.Get("Upgrade")
	removeHopByHop(resp.Header)
	scrubHeader(s.cfg.Credentials.Ingress(), resp.Header)
	resp.Header.Set("Connection", "Upgrade")
	resp.Header.Set("Upgrade", upProto)
	fmt.Fprintf(brw, "HTTP/1.1 101 %s\r\n", http.StatusText(http.StatusSwitchingProtocols))
	resp.Header.Write(brw)
	brw.WriteString("\r\n")
	if brw.Flush() != nil {
		return
	}
	stop := context.AfterFunc(ctx, func() { conn.Close(); up.Close() })
	defer stop()
	errc := make(chan struct{}, 2)
	go func() { io.Copy(up, brw.Reader); errc <- struct{}{} }() // brw.Reader holds what the client sent early
	// credentialsTerminated refused the Upgrade unless Ingress keeps
	// lengths, so frames stay whole.
	go func() { io.Copy(conn, s.cfg.Credentials.Ingress().Reader(up)); errc <- struct{}{} }()
	<-errc
	conn.Close()
	up.Close()
	<-errc
}

// judgeUpgrade decides an HTTP/1.1 Upgrade inside a terminated tunnel to
// tn's host, whose request was allowed: after a 101 the connection is
// relayed as bytes, so what it then carries is not judged. Upgrade to h2c
// is always refused: it would open an HTTP/2 connection of requests none
// of which is judged (RFC 9113 §3.1 has no h2c upgrade over TLS). Where
// requests are filtered or opaque tunnels refused (mustInspect), only
// "websocket" is allowed: its messages are not HTTP requests, and its
// opening request was judged. Nil allows.
func (s *Server) judgeUpgrade(tn *tunnel, proto string) *termRefusal {
	var offered []string
	for _, p := range strings.Split(proto, ",") {
		p = strings.ToLower(strings.TrimSpace(p))
		if i := strings.IndexByte(p, '/'); i >= 0 {
			p = p[:i]
		}
		offered = append(offered, p)
	}
	for _, p := range offered {
		if p == "h2c" {
			return &termRefusal{status: http.StatusForbidden, xerr: errHdrFiltered, rule: opaqueRule,
				reason: "Upgrade: h2c would carry requests the proxy cannot judge"}
		}
		if p != "websocket" && (s.cfg.active(tn.d.Host, tn.port) || s.mustInspect(tn.d.Host, tn.port)) {
			return &termRefusal{status: http.StatusForbidden, xerr: errHdrFiltered, rule: opaqueRule,
				reason: "Upgrade: " + sanitize(p, 40) + " would carry traffic the request filter cannot see (only websocket is relayed)"}
		}
	}
	return nil
}
