package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/srt-go/srt/internal/halfclose"
	"github.com/srt-go/srt/netrule"
)

// maxHeaderBytes bounds a request's header block. A larger block gets 400.
const maxHeaderBytes = 64 << 10

// X-Proxy-Error values (srt-notes §4.9 "Answers on the wire").
const (
	errHdrPolicy  = "blocked-by-allowlist"       // refused by the lists
	errHdrAddress = "blocked-by-sandbox-runtime" // refused by the resolved-address guard
	errHdrParent  = "parent-proxy-refused"       // refused by Config.Parent (srt-go)
)

// HTTPProxy is the HTTP proxy of a Server.
type HTTPProxy struct{ s *Server }

// HTTP returns the Server's HTTP proxy.
func (s *Server) HTTP() *HTTPProxy { return &HTTPProxy{s} }

// Serve accepts client connections on ln and serves them until ctx is
// cancelled (which also closes the connections accepted here) or the
// Server is closed. It always returns a non-nil error: ctx.Err(),
// ErrServerClosed, or the listener's failure. ln is closed on return.
//
// Answers on the wire (srt-notes §4.9; issue 3 "Answers on the wire"):
//
//	CONNECT allowed         200 Connection Established, then an opaque tunnel
//	                        (or, with Config.Terminate, see Terminate)
//	CONNECT refused         403 <reason>, X-Proxy-Error: blocked-by-allowlist,
//	                        body "<reason>\n", connection closed
//	plain HTTP refused      403 Forbidden, X-Proxy-Error: blocked-by-allowlist,
//	                        body "Connection blocked by network allowlist: <reason>\n"
//	address guard refused   403 as above with X-Proxy-Error: blocked-by-sandbox-runtime
//	                        and body "Connection to <host> blocked: <reason>\n"
//	upstream failure        502 Bad Gateway
//	parent proxy refused    502 Bad Gateway, X-Proxy-Error: parent-proxy-refused, body
//	                        "parent proxy <url> refused CONNECT <host:port>: <status>\n"
//	                        (any non-2xx answer to CONNECT; for plain HTTP, a 407:
//	                        another status may be the origin's and is passed on)
//	malformed request       400 Bad Request
//
// The status text is the reason made safe for a status line: bytes outside
// printable ASCII become '?', and it is cut to 500 bytes.
func (h *HTTPProxy) Serve(ctx context.Context, ln net.Listener) error {
	return h.s.serve(ctx, ln, "http", h.s.serveHTTPConn)
}

func (s *Server) serveHTTPConn(ctx context.Context, c net.Conn) {
	br := bufio.NewReaderSize(c, maxHeaderBytes)
	bw := bufio.NewWriter(c)
	first := true
	for {
		timeout := s.cfg.IdleTimeout
		if first {
			timeout = s.cfg.HandshakeTimeout
		}
		first = false
		c.SetReadDeadline(time.Now().Add(timeout))
		hosts, err := peekHostHeaders(br)
		if err != nil {
			if !errors.Is(err, io.EOF) && !isTimeout(err) && !errors.Is(err, net.ErrClosed) {
				writeSimple(bw, 400, "Bad Request", err.Error())
			}
			return
		}
		if len(hosts) > 1 { // RFC 9112 §3.2: exactly one Host
			writeSimple(bw, 400, "Bad Request", "more than one Host header")
			return
		}
		c.SetReadDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
		req, err := http.ReadRequest(br)
		if err != nil {
			writeSimple(bw, 400, "Bad Request", "malformed request: "+err.Error())
			return
		}
		c.SetReadDeadline(time.Time{})
		if req.Method == http.MethodConnect {
			s.handleConnect(ctx, c, br, bw, req, hosts)
			return
		}
		if !s.handlePlain(ctx, bw, req, hosts) {
			return
		}
	}
}

// peekHostHeaders reads ahead, without consuming, to the end of the next
// request's header block and returns the values of its Host header lines.
// http.ReadRequest folds an absolute-URI request's Host header away (RFC
// 9112 §3.2.2 lets a server ignore it), so the proxy looks at the raw
// bytes to catch a Host that disagrees with the target (escape-classes.md
// item 8). Obsolete line folding is refused (RFC 9112 §5.2 allows 400).
func peekHostHeaders(br *bufio.Reader) ([]string, error) {
	n := 1
	for {
		// Peek blocks until n bytes are buffered or the read fails.
		if buf, err := br.Peek(n); len(buf) < n {
			if errors.Is(err, bufio.ErrBufferFull) {
				return nil, errHeaderTooLarge
			}
			return nil, err
		}
		buf, _ := br.Peek(br.Buffered())
		if hosts, done, err := scanHeaderBlock(buf); done || err != nil {
			return hosts, err
		}
		if len(buf) >= br.Size() {
			return nil, errHeaderTooLarge
		}
		n = len(buf) + 1
	}
}

var errHeaderTooLarge = errors.New("request header block larger than 64 KiB")

// scanHeaderBlock looks for the blank line ending the header block in buf.
func scanHeaderBlock(buf []byte) (hosts []string, done bool, err error) {
	lines := 0
	for len(buf) > 0 {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return nil, false, nil
		}
		line := bytes.TrimSuffix(buf[:i], []byte("\r"))
		buf = buf[i+1:]
		lines++
		if lines == 1 {
			continue // request line
		}
		if len(line) == 0 {
			return hosts, true, nil
		}
		if line[0] == ' ' || line[0] == '\t' {
			return nil, false, errors.New("obsolete header line folding")
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if ok && strings.EqualFold(string(name), "host") {
			hosts = append(hosts, string(bytes.TrimSpace(value)))
		}
	}
	return nil, false, nil
}

// hostMismatch returns a refusal reason when the Host header lines
// disagree with the target host (ports are not compared: clients vary on
// whether they send the default port), or "" when they agree or there is
// no Host line.
func hostMismatch(hosts []string, target string) string {
	want, _, err := netrule.CanonicalHost(target)
	if err != nil {
		want = target
	}
	for _, h := range hosts {
		hh := h
		if host, _, err := net.SplitHostPort(h); err == nil {
			hh = host
		}
		got, _, err := netrule.CanonicalHost(hh)
		if err != nil || got != want {
			return fmt.Sprintf("Host header %q does not match the request target %q", sanitize(h, 100), target)
		}
	}
	return ""
}

// handleConnect serves a CONNECT request; the connection ends with it.
func (s *Server) handleConnect(ctx context.Context, c net.Conn, br *bufio.Reader, bw *bufio.Writer, req *http.Request, hosts []string) {
	host, port, ok := splitTarget(req.RequestURI)
	if !ok {
		writeSimple(bw, 400, "Bad Request", "CONNECT target must be host:port")
		return
	}
	pol := s.policy.Load()
	d := pol.Decide(host, port)
	if d.Allowed {
		if r := hostMismatch(hosts, host); r != "" {
			d = netrule.Decision{Host: d.Host, Reason: r}
		}
	}
	if d.Allowed && s.mustInspect(d.Host, port) && !s.willTerminate(d.Host, port) {
		d = netrule.Decision{Host: d.Host, Reason: s.opaqueRefusal(d.Host, port, ""), Rule: opaqueRule}
	}
	if !d.Allowed {
		writeConnectRefusal(bw, d.Reason, d.Reason+"\n", errHdrPolicy)
		s.violation("connect", d, port)
		return
	}
	if s.term != nil && !s.term.excluded(d.Host, port) && !s.mitmOpaque(d.Host, port) {
		s.terminate(ctx, c, br, bw, pol, d, port) // terminate.go
		return
	}
	up, err := s.dialTunnel(ctx, pol, d, port)
	if err != nil {
		if re, ok := isRefused(err); ok {
			writeConnectRefusal(bw, re.Decision.Reason,
				"Connection to "+d.Host+" blocked: "+re.Decision.Reason+"\n", errHdrAddress)
			s.violation("connect", re.Decision, port)
			return
		}
		if pe, ok := isParentRefusal(err); ok {
			s.logParentRefusal(ctx, pe)
			writeParentRefusal(bw, pe)
			return
		}
		s.log.LogAttrs(ctx, slog.LevelDebug, "CONNECT upstream failed", slog.String("host", d.Host), slog.Any("error", err))
		writeSimple(bw, 502, "Bad Gateway", "upstream connection failed: "+err.Error())
		return
	}
	bw.WriteString("HTTP/1.1 200 Connection Established\r\n\r\n")
	if err := bw.Flush(); err != nil {
		up.Close()
		return
	}
	s.pipeTunnel(c, br, up)
}

// pipeTunnel joins client connection c, whose CONNECT has been answered
// 200, to upstream up until both ends are done; it closes up.
func (s *Server) pipeTunnel(c net.Conn, br *bufio.Reader, up net.Conn) {
	if !s.track(up, nil) {
		up.Close()
		return
	}
	defer s.untrack(up)
	// Bytes the client sent right after its CONNECT headers (a TLS
	// ClientHello from an eager client) are already in br.
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		if _, err := up.Write(b); err != nil {
			up.Close()
			return
		}
	}
	halfclose.Pipe(c, up)
}

// splitTarget parses a CONNECT authority "host:port" (RFC 9110 §9.3.6);
// the port is required, 1..65535.
func splitTarget(hp string) (string, int, bool) {
	host, ps, err := net.SplitHostPort(hp)
	if err != nil || host == "" {
		return "", 0, false
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 || ps[0] == '+' {
		return "", 0, false
	}
	return host, port, true
}

// handlePlain forwards one absolute-URI request. It reports whether the
// client connection may carry another request.
func (s *Server) handlePlain(ctx context.Context, bw *bufio.Writer, req *http.Request, hosts []string) bool {
	defer req.Body.Close()
	u := req.URL
	if !u.IsAbs() || u.Host == "" {
		writeSimple(bw, 400, "Bad Request", "a proxy request needs an absolute URI (http://host/path)")
		return false
	}
	if !strings.EqualFold(u.Scheme, "http") {
		writeSimple(bw, 400, "Bad Request", "unsupported scheme "+strconv.Quote(u.Scheme)+"; use CONNECT for https")
		return false
	}
	host := u.Hostname()
	port := 80
	if ps := u.Port(); ps != "" {
		p, err := strconv.Atoi(ps)
		if err != nil || p < 1 || p > 65535 {
			writeSimple(bw, 400, "Bad Request", "invalid port in request target")
			return false
		}
		port = p
	}
	pol := s.policy.Load()
	d := pol.Decide(host, port)
	if d.Allowed {
		if r := hostMismatch(hosts, host); r != "" {
			d = netrule.Decision{Host: d.Host, Reason: r}
		}
	}
	if !d.Allowed {
		writePlainRefusal(bw, "Connection blocked by network allowlist: "+d.Reason+"\n", errHdrPolicy)
		s.violation("http", d, port)
		return false
	}

	t, terr := parseTarget(req.RequestURI, true)
	var dec FilterDecision
	if s.cfg.active(d.Host, port) {
		fr := newFilterRequest(req.Method, "http", d.Host, port, t, withoutHopByHop(req.Header), "")
		var refusal *requestRefusal
		if refusal, dec = s.judgeRequest(ctx, fr, t, terr); refusal != nil {
			refusal.write(bw)
			s.requestViolation("http", fr, refusal)
			return false
		}
	}

	octx, rt := context.WithValue(ctx, policyKey{}, pol), s.transport
	parent := s.cfg.Parent.forHTTP(d.Host, port)
	if parent != nil {
		if s.refuseViaParent(ctx, bw, pol, d, req.Method, port) {
			return false
		}
		octx, rt = context.WithValue(octx, parentKey{}, parent), s.viaParent
	}
	out := req.Clone(octx)
	out.RequestURI = ""
	out.Host = u.Host
	if parent != nil { // the spelling srt judged, not the client's
		out.URL.Host = canonicalAuthority(d.Host, port, u.Port() != "")
		out.Host = out.URL.Host
	}
	out.Close = false
	removeHopByHop(out.Header)
	applyRequestEdits(out.Header, dec)
	if terr == nil {
		out.URL = upstreamURL(out.URL, t, s.cfg.AmbiguousTarget == AmbiguousNormalize && s.cfg.active(d.Host, port), parent != nil)
	}
	// Last, so that judging, filtering and their reports saw sentinels;
	// Egress injects in cleartext only with allowPlaintextInject.
	if ref, err := s.credentialsRequest(out, d.Host, port, false, true); ref != nil || err != nil {
		s.refusePlainCredentials(bw, d.Host, port, ref, err)
		return false
	}
	resp, err := rt.RoundTrip(out)
	if err != nil {
		if re, ok := isRefused(err); ok {
			writePlainRefusal(bw, "Connection to "+d.Host+" blocked: "+re.Decision.Reason+"\n", errHdrAddress)
			s.violation("http", re.Decision, port)
			return false
		}
		s.log.LogAttrs(ctx, slog.LevelDebug, "HTTP upstream failed", slog.String("host", d.Host), slog.String("error", s.scrub(err.Error())))
		writeSimple(bw, 502, "Bad Gateway", "upstream request failed: "+s.scrub(err.Error()))
		return false
	}
	defer resp.Body.Close()
	if parent != nil && resp.StatusCode == http.StatusProxyAuthRequired {
		// The parent's, never the origin's (which says 401): passed on,
		// it would read as srt's proxy asking the client for credentials.
		pe := &ParentError{Parent: s.cfg.Parent.label(parent), Target: net.JoinHostPort(d.Host, strconv.Itoa(port)), Status: sanitize(resp.Status, 200), Code: resp.StatusCode}
		s.logParentRefusal(ctx, pe)
		writeParentRefusal(bw, pe)
		return false
	}
	removeHopByHop(resp.Header)
	if why := s.scrubResponse(resp); why != "" {
		writeResponse(bw, "502 Bad Gateway", errHdrCredUnscannable, cleanBody(why+"\n"))
		return false
	}
	s.editResponse(resp, dec)
	keep := !req.Close && req.ProtoAtLeast(1, 1)
	resp.Close = !keep
	resp.Proto, resp.ProtoMajor, resp.ProtoMinor = "HTTP/1.1", 1, 1
	if err := resp.Write(bw); err != nil {
		return false
	}
	if err := bw.Flush(); err != nil {
		return false
	}
	return keep && !resp.Close
}

// hopByHop are the headers that describe one connection, not the message
// (RFC 9110 §7.6.1), plus the proxy's own Proxy-* headers; none is
// forwarded. Proxy-Authorization in particular must never reach the
// origin.
var hopByHop = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopByHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopByHop {
		h.Del(name)
	}
	for name := range h {
		if strings.HasPrefix(strings.ToLower(name), "proxy-") {
			delete(h, name)
		}
	}
}

// sanitize makes s safe for an HTTP status line: control bytes, DEL and
// non-ASCII bytes become '?', and the result is cut to limit bytes.
func sanitize(s string, limit int) string {
	b := []byte(s)
	if len(b) > limit {
		b = b[:limit]
	}
	for i, c := range b {
		if c < 0x20 || c >= 0x7f {
			b[i] = '?'
		}
	}
	return string(b)
}

// cleanBody keeps UTF-8 text but drops control characters other than
// newline, so a reason cannot forge terminal escapes.
func cleanBody(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r >= 0x20 && r != 0x7f && !(r >= 0x80 && r < 0xa0) {
			return r
		}
		return '?'
	}, s)
}

func writeConnectRefusal(bw *bufio.Writer, reason, body, xerr string) {
	status := sanitize(reason, 500)
	if status == "" {
		status = "Forbidden"
	}
	writeResponse(bw, "403 "+status, xerr, cleanBody(body))
}

func writeParentRefusal(bw *bufio.Writer, pe *ParentError) {
	writeResponse(bw, "502 Bad Gateway", errHdrParent, cleanBody(pe.Error()+"\n"))
}

func writePlainRefusal(bw *bufio.Writer, body, xerr string) {
	writeResponse(bw, "403 Forbidden", xerr, cleanBody(body))
}

func writeSimple(bw *bufio.Writer, code int, text, body string) {
	writeResponse(bw, strconv.Itoa(code)+" "+text, "", cleanBody(body)+"\n")
}

func writeResponse(bw *bufio.Writer, status, xerr, body string) {
	fmt.Fprintf(bw, "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\n", status)
	if xerr != "" {
		fmt.Fprintf(bw, "X-Proxy-Error: %s\r\n", xerr)
	}
	fmt.Fprintf(bw, "Content-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	bw.Flush()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
