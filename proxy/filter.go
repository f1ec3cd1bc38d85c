package proxy

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/srt-go/srt/violation"
)

// Filtering configures request filtering (issue 17 "Request filtering";
// reference 0.0.83 network.filterRequest and the keys after it). The
// zero value filters nothing. It is embedded in Config, so its fields
// read as Config's (cfg.FilterRequest); it is fixed for the Server's life
// (SetPolicy does not change it).
//
// A request is filtered ("judged") when FilterRequest is set, or when
// HTTPRules names its host. A judged request goes through judgeRequest:
// on plain HTTP now, and inside a terminated CONNECT tunnel (Config.
// Terminate) once that path calls it. The tunnels the proxy cannot see
// into are refused for the hosts it must judge (see mustInspect).
type Filtering struct {
	// FilterRequest, when not nil, is asked about every request after
	// the domain rules allowed it and after HTTPRules did (the
	// declarative rules first, then this hook). It is called from the
	// goroutine serving the client, so it may block that client, and
	// concurrently for different clients. It must not keep r. Nil means
	// no hook.
	FilterRequest func(ctx context.Context, r *FilterRequest) FilterDecision
	// HTTPRules are the settings file's per-host method and path rules
	// (network.httpRules, srt-go). Nil means none.
	HTTPRules *HTTPRules
	// AllowPlaintextHeaderSet lets a FilterDecision set headers on a
	// request that came in cleartext (Scheme "http"). Off, such a decision
	// is refused with 403 and nothing is forwarded: the header would
	// travel in cleartext. Removals always apply.
	AllowPlaintextHeaderSet bool
	// StripResponseHeaders are response headers never passed back to the
	// client (network.stripResponseHeaders), matched case-insensitively
	// with '-', '_' and '.' folded ("set-cookie" strips "Set_Cookie").
	// They are stripped from every response, judged or not.
	StripResponseHeaders []string
	// RefuseOpaqueTunnels refuses every tunnel a filter cannot see into
	// (network.refuseOpaqueTunnels): each SOCKS5 CONNECT and each HTTP
	// CONNECT that is not TLS-terminated. Refusals are violations.
	RefuseOpaqueTunnels bool
	// AmbiguousTarget says what becomes of a judged request whose target
	// is ambiguous (network.ambiguousRequestTarget). The zero value
	// refuses it.
	AmbiguousTarget AmbiguousTarget
}

// FilterRequest is what a filter is told about one request. It is a
// snapshot: changing it changes nothing.
type FilterRequest struct {
	// Method is the request method as sent ("GET").
	Method string
	// Scheme is "http" for a request that came in cleartext and "https"
	// for one read inside a terminated TLS tunnel.
	Scheme string
	// Host is the destination host, canonical (netrule.CanonicalHost:
	// lower case, no trailing dot, IP literals in their standard form),
	// and Port its port, 1..65535.
	Host string
	Port int
	// Target is the request target in origin form ("/path?query") as the
	// client spelled it, the fragment cut off and bytes outside ASCII
	// percent-encoded; an absolute-form target is reduced to its path and
	// query. It is what goes upstream, but under AmbiguousNormalize.
	Target string
	// NormalizedTarget is Target with its path normalised: '\' read as
	// '/', leading slashes collapsed to one, dot segments ('.', '..',
	// "%2e" spellings) resolved; other percent escapes are kept.
	NormalizedTarget string
	// Ambiguous reports NormalizedTarget != Target. Such a request only
	// reaches a filter under AmbiguousAsSpelled or AmbiguousNormalize.
	Ambiguous bool
	// Header is a copy of the request's headers, hop-by-hop and Proxy-*
	// headers removed.
	Header http.Header
	// SNI is the TLS server name the client sent, lower-cased; "" for
	// plain HTTP or when it sent none.
	SNI string
}

// FilterDecision is a filter's answer. The zero value allows the request
// unchanged.
type FilterDecision struct {
	// Deny refuses the request: the client gets Status, nothing is
	// forwarded, and a violation is recorded with Reason.
	Deny bool
	// Status is the refusal's status code, 400..599; zero (or any other
	// value) means 403.
	Status int
	// Reason says why, for the refusal's body and the violation.
	Reason string
	// RemoveHeaders are request headers removed before forwarding (case
	// insensitive).
	RemoveHeaders []string
	// SetHeaders replace request headers before forwarding, after
	// RemoveHeaders. On a cleartext request they are refused unless
	// Filtering.AllowPlaintextHeaderSet.
	SetHeaders http.Header
	// OnResponse, when not nil, is called with the upstream's response
	// (status and headers; its Body must not be read) before it is
	// written to the client, from the goroutine serving it. It may edit
	// the response's headers.
	OnResponse func(*http.Response)
}

// X-Proxy-Error values of request filtering.
const (
	errHdrAmbiguous = "ambiguous-request-target"
	errHdrFiltered  = "blocked-by-filter"
	errHdrTarget    = "bad-request-target"
)

// requestRefusal is judgeRequest's refusal of one request.
type requestRefusal struct {
	status  int
	xerr    string // X-Proxy-Error
	subject string // "METHOD /target", made safe
	reason  string
	rule    string // the violation's Rule
}

// text is the refusal's body and violation reason: "METHOD /target:
// reason".
func (r *requestRefusal) text() string { return r.subject + ": " + cleanBody(r.reason) }

// write answers the refusal on a raw connection (plain HTTP).
func (r *requestRefusal) write(bw *bufio.Writer) {
	writeResponse(bw, strconv.Itoa(r.status)+" "+http.StatusText(r.status), r.xerr, r.text()+"\n")
}

// ServeHTTP answers the refusal through an http.ResponseWriter (the
// terminated path).
func (r *requestRefusal) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Proxy-Error", r.xerr)
	if req.ProtoMajor == 1 {
		// HTTP/2 has no Connection header: Go's server reads one as a
		// GOAWAY, which cuts the answer to a request whose body is
		// still coming (the client sees a partial transfer).
		h.Set("Connection", "close")
	}
	w.WriteHeader(r.status)
	w.Write([]byte(r.text() + "\n"))
}

// active reports whether a request to host:port is judged.
func (f *Filtering) active(host string, port int) bool {
	return f.FilterRequest != nil || f.HTTPRules.Names(host, port)
}

// mustInspect reports whether a tunnel to host (canonical) and port may
// only be opened if the proxy can see into it: with RefuseOpaqueTunnels
// every tunnel, else those to a host HTTPRules names. handleConnect and
// the SOCKS5 proxy refuse such a tunnel unless it will be TLS-terminated.
// The terminated path must call it as well when a CONNECT it meant to
// terminate turns out not to carry TLS (its opaque fallback), and refuse
// then with refuseOpaque.
func (s *Server) mustInspect(host string, port int) bool {
	return s.cfg.RefuseOpaqueTunnels || s.cfg.HTTPRules.Names(host, port)
}

// MustInspect is mustInspect for the runtimes' own tunnels (the Linux
// sandbox's loopback relay), which must refuse the same connections.
func (s *Server) MustInspect(host string, port int) bool { return s.mustInspect(host, port) }

// OpaqueRefusal is the reason given for a tunnel to host (canonical)
// and port refused by mustInspect, for a tunnel that is never inspected
// (the Linux sandbox's relayed loopback ports).
func (s *Server) OpaqueRefusal(host string, port int) string {
	return s.opaqueRefusal(host, port, "a relayed loopback port is never inspected")
}

// opaqueRefusal is OpaqueRefusal for one route, why saying why this
// tunnel cannot be seen into: "" for an HTTP CONNECT that will not be
// terminated, whose reason then says why (no tlsTerminate, or the host
// in its excludeDomains).
func (s *Server) opaqueRefusal(host string, port int, why string) string {
	if why == "" {
		why = "enable network.tlsTerminate"
		if t := s.cfg.Terminate; t != nil && t.Exclude != nil && t.Exclude(host, port) {
			why = "it is in network.tlsTerminate.excludeDomains"
		}
	}
	if s.cfg.HTTPRules.Names(host, port) || !s.cfg.RefuseOpaqueTunnels {
		return "requests to " + host + " are filtered (network.httpRules) and this tunnel cannot be inspected: " + why
	}
	return "network.refuseOpaqueTunnels: a tunnel to " + host + " cannot be inspected: " + why
}

// willTerminate reports whether a CONNECT to host:port is to be
// TLS-terminated (Config.Terminate, not excluded).
func (s *Server) willTerminate(host string, port int) bool {
	t := s.cfg.Terminate
	return t != nil && (t.Exclude == nil || !t.Exclude(host, port))
}

// newFilterRequest builds what judgeRequest is asked about: method,
// scheme ("http" or "https"), the canonical host and port, the request
// target (parseTarget's), the request's headers (copied by the caller,
// hop-by-hop ones removed: withoutHopByHop) and the TLS server name.
func newFilterRequest(method, scheme, host string, port int, t requestTarget, h http.Header, sni string) *FilterRequest {
	return &FilterRequest{Method: method, Scheme: scheme, Host: host, Port: port,
		Target: t.spelled, NormalizedTarget: t.normalized(), Ambiguous: t.ambiguous(), Header: h, SNI: sni}
}

// judgeRequest decides one request the domain rules allowed, on plain
// HTTP (handlePlain) and inside a terminated tunnel (the terminated path
// calls it with Scheme "https" and the SNI). t and targetErr are
// parseTarget's. In order, for a judged request (Filtering.active):
//
//  1. a target that did not parse (not UTF-8; not origin form inside a
//     tunnel): 400, X-Proxy-Error: bad-request-target;
//  2. TRACE and TRACK: 405 (their response would echo a header a decision
//     set);
//  3. a method or path override header (overrideHeaders), unless
//     AmbiguousAsSpelled: 400, X-Proxy-Error: ambiguous-request-target;
//     an ambiguous target under AmbiguousRefuse: 400, X-Proxy-Error:
//     ambiguous-request-target;
//  4. HTTPRules: a host it names must match one of its rules (method and
//     path), else 403;
//  5. FilterRequest: Deny gives its Status (403 by default);
//  6. a decision that sets headers on a cleartext request without
//     AllowPlaintextHeaderSet: 403.
//
// A refusal is returned for the caller to write and then report with
// requestViolation; nil allows, with the decision to apply
// (applyRequestEdits before forwarding, editResponse before answering).
// A request that is not judged gets (nil, zero decision).
func (s *Server) judgeRequest(ctx context.Context, fr *FilterRequest, t requestTarget, targetErr error) (*requestRefusal, FilterDecision) {
	if !s.cfg.active(fr.Host, fr.Port) {
		return nil, FilterDecision{}
	}
	r, dec := s.judge(ctx, fr, t, targetErr)
	if r != nil {
		r.subject = sanitize(fr.Method, 20) + " " + sanitize(fr.Target, 200)
	}
	return r, dec
}

// judge is judgeRequest for a judged request, steps 1 to 6.
func (s *Server) judge(ctx context.Context, fr *FilterRequest, t requestTarget, targetErr error) (*requestRefusal, FilterDecision) {
	f := &s.cfg.Filtering
	if targetErr != nil {
		return &requestRefusal{status: 400, xerr: errHdrTarget, reason: targetErr.Error()}, FilterDecision{}
	}
	if fr.Method == "TRACE" || fr.Method == "TRACK" {
		return &requestRefusal{status: 405, xerr: errHdrFiltered,
			reason: "refused while requests are filtered: its response would echo the request's headers"}, FilterDecision{}
	}
	if h := overrideHeader(fr.Header); h != "" && f.AmbiguousTarget != AmbiguousAsSpelled {
		return &requestRefusal{status: 400, xerr: errHdrAmbiguous, rule: "network.ambiguousRequestTarget",
			reason: "the " + h + " header asks the upstream for another method or path than the one judged"}, FilterDecision{}
	}
	if fr.Ambiguous && f.AmbiguousTarget == AmbiguousRefuse {
		return &requestRefusal{status: 400, xerr: errHdrAmbiguous, rule: "network.ambiguousRequestTarget",
			reason: fmt.Sprintf("ambiguous request target (normalised %s); send the normalised form", sanitize(fr.NormalizedTarget, 200))}, FilterDecision{}
	}
	if f.HTTPRules.Names(fr.Host, fr.Port) {
		if r := f.HTTPRules.judge(fr, t, f.AmbiguousTarget == AmbiguousAsSpelled); r != nil {
			return r, FilterDecision{}
		}
	}
	if f.FilterRequest == nil {
		return nil, FilterDecision{}
	}
	arg := *fr
	arg.Header = fr.Header.Clone()
	dec := f.FilterRequest(ctx, &arg)
	if dec.Deny {
		st := dec.Status
		if st < 400 || st > 599 {
			st = http.StatusForbidden
		}
		reason := "refused by the request filter"
		if dec.Reason != "" {
			reason += ": " + dec.Reason
		}
		return &requestRefusal{status: st, xerr: errHdrFiltered, reason: reason, rule: "filterRequest"}, FilterDecision{}
	}
	if len(dec.SetHeaders) > 0 && fr.Scheme != "https" && !f.AllowPlaintextHeaderSet {
		return &requestRefusal{status: 403, xerr: errHdrFiltered, rule: "filterRequest",
			reason: "the request filter sets headers on a cleartext request, which would travel in cleartext (network.allowPlaintextHeaderSet is off)"}, FilterDecision{}
	}
	return nil, dec
}

// requestViolation reports a refusal of judgeRequest's; proto is the
// Violation's Protocol ("http", or "https" inside a terminated tunnel).
func (s *Server) requestViolation(proto string, fr *FilterRequest, r *requestRefusal) {
	if s.cfg.OnViolation == nil {
		return
	}
	v := violation.Violation{
		Time:     time.Now(),
		Action:   violation.NetworkOutbound,
		Target:   net.JoinHostPort(fr.Host, strconv.Itoa(fr.Port)),
		Reason:   r.text(),
		Protocol: proto,
		Rule:     r.rule,
	}
	v.Raw = v.Line()
	s.cfg.OnViolation(v)
}

// applyRequestEdits applies a decision's header edits to the headers
// about to be forwarded: RemoveHeaders, then SetHeaders.
func applyRequestEdits(h http.Header, dec FilterDecision) {
	for _, name := range dec.RemoveHeaders {
		h.Del(name)
	}
	for name, vs := range dec.SetHeaders {
		h.Del(name)
		for _, v := range vs {
			h.Add(name, v)
		}
	}
}

// editResponse prepares an upstream response for the client: the
// decision's OnResponse observer, then StripResponseHeaders.
func (s *Server) editResponse(resp *http.Response, dec FilterDecision) {
	if dec.OnResponse != nil {
		dec.OnResponse(resp)
	}
	if len(s.cfg.StripResponseHeaders) == 0 {
		return
	}
	for name := range resp.Header {
		for _, strip := range s.cfg.StripResponseHeaders {
			if foldHeaderName(name) == foldHeaderName(strip) {
				delete(resp.Header, name)
				break
			}
		}
	}
}

// foldHeaderName lower-cases name and reads '_' and '.' as '-'.
func foldHeaderName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '_' || r == '.':
			return '-'
		case 'A' <= r && r <= 'Z':
			return r + ('a' - 'A')
		}
		return r
	}, name)
}

// opaqueRule is the Rule of a violation for a tunnel refused by
// mustInspect.
const opaqueRule = "opaque tunnel"

// withoutHopByHop returns a copy of h without the hop-by-hop and Proxy-*
// headers, as a filter is shown them.
func withoutHopByHop(h http.Header) http.Header {
	c := h.Clone()
	removeHopByHop(c)
	return c
}

// overrideHeaders are request headers with which frameworks and servers
// act on another method (Rails, Symfony, ASP.NET, Google APIs) or path
// (IIS's URL Rewrite, Symfony's X-Original-URL) than the request line's,
// so a judged request must not carry them.
var overrideHeaders = []string{"X-Http-Method-Override", "X-Http-Method", "X-Method-Override",
	"X-Original-Url", "X-Rewrite-Url", "X-Original-Method"}

// overrideHeader returns the first header of h that is one of
// overrideHeaders, compared as CGI, WSGI and PHP read a name (case
// folded, '_' and '.' the same as '-': X_Original_URL is
// HTTP_X_ORIGINAL_URL to them too), or "".
func overrideHeader(h http.Header) string {
	for name := range h {
		f := foldHeaderName(name)
		for _, o := range overrideHeaders {
			if f == foldHeaderName(o) {
				return name
			}
		}
	}
	return ""
}
