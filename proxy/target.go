package proxy

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

// AmbiguousTarget says what becomes of a request whose target is
// ambiguous (network.ambiguousRequestTarget, reference 0.0.83): its
// normalised form (see requestTarget) names another path than its
// spelling does. Upstreams differ in how they read such a spelling, so a
// filter that judged one reading could be got around through another.
// It applies only to a request a filter judges (Filtering.active).
type AmbiguousTarget uint8

const (
	// AmbiguousRefuse, the zero value, answers 400 with X-Proxy-Error:
	// ambiguous-request-target before any filter is asked, forwards
	// nothing and records a violation.
	AmbiguousRefuse AmbiguousTarget = iota
	// AmbiguousAsSpelled forwards the target as the client spelled it.
	// The filter takes on that its decision holds for every reading an
	// upstream may make of it (FilterRequest.Ambiguous tells it).
	AmbiguousAsSpelled
	// AmbiguousNormalize forwards the normalised target. A signature over
	// the path no longer verifies, and an upstream that takes the path
	// literally (an object store where "a/../b" is a key) acts on another
	// resource than the client named.
	AmbiguousNormalize
)

// ParseAmbiguousTarget maps the settings spelling ("refuse", "asSpelled",
// "normalize"; "" is "refuse") to an AmbiguousTarget. Any other value is an
// error.
func ParseAmbiguousTarget(s string) (AmbiguousTarget, error) {
	switch s {
	case "", "refuse":
		return AmbiguousRefuse, nil
	case "asSpelled":
		return AmbiguousAsSpelled, nil
	case "normalize":
		return AmbiguousNormalize, nil
	}
	return 0, fmt.Errorf("%q: want \"refuse\", \"asSpelled\" or \"normalize\"", s)
}

// requestTarget is a request's target in origin form, as the proxy reads
// it before judging and forwarding it.
type requestTarget struct {
	// spelled is the target as the client sent it (absolute form reduced
	// to its path and query), the fragment cut off and bytes outside ASCII
	// percent-encoded: what goes upstream but under AmbiguousNormalize.
	spelled string
	// path and query split spelled at its first '?'; hasQuery says
	// whether there was one (an empty query is forwarded as spelled).
	path, query string
	hasQuery    bool
	// normPath is path normalised: '\' read as '/', a run of leading
	// slashes collapsed to one, dot segments ("." ".." and their %2e
	// spellings, any case) resolved (RFC 3986 §5.2.4). Every other byte,
	// percent escapes included, is kept as spelled.
	normPath string
}

// ambiguous reports whether normalising changes the path.
func (t requestTarget) ambiguous() bool { return t.normPath != t.path }

// normalized is the target with normPath for path.
func (t requestTarget) normalized() string {
	if t.hasQuery {
		return t.normPath + "?" + t.query
	}
	return t.normPath
}

var (
	errTargetUTF8   = errors.New("the request target is not valid UTF-8")
	errTargetForm   = errors.New("the request target must be in origin form (/path?query)")
	errTargetScheme = errors.New("the request target must be an absolute http:// URI")
)

// parseTarget reads raw, the target of a request line. absolute says the
// request came to the proxy in cleartext, where it must be an absolute
// http:// URI (RFC 9112 §3.2.2); otherwise (inside a terminated tunnel) it
// must be origin form, a '/' first (so not an absolute URI, nor "*"). A
// '#' and what follows it are cut first: a fragment is no part of a
// request target, yet some clients leave it in the absolute form they
// send a proxy, and upstreams differ in what they make of one ("%23" is
// data and stays).
func parseTarget(raw string, absolute bool) (requestTarget, error) {
	if !utf8.ValidString(raw) {
		return requestTarget{}, errTargetUTF8
	}
	if i := strings.IndexByte(raw, '#'); i >= 0 {
		raw = raw[:i]
	}
	if absolute {
		scheme, rest, ok := strings.Cut(raw, "://")
		if !ok || !strings.EqualFold(scheme, "http") {
			return requestTarget{}, errTargetScheme
		}
		i := strings.IndexAny(rest, "/?")
		if i < 0 {
			raw = "/"
		} else {
			raw = rest[i:]
			if raw[0] == '?' {
				raw = "/" + raw
			}
		}
	} else if !strings.HasPrefix(raw, "/") {
		return requestTarget{}, errTargetForm
	}
	var t requestTarget
	t.spelled = escapeNonASCII(raw)
	t.path, t.query, t.hasQuery = strings.Cut(t.spelled, "?")
	t.normPath = normalizePath(t.path)
	return t, nil
}

// escapeNonASCII percent-encodes the bytes of s outside ASCII.
func escapeNonASCII(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 {
			if b.Len() == 0 {
				b.WriteString(s[:i])
			}
			fmt.Fprintf(&b, "%%%02X", c)
		} else if b.Len() > 0 {
			b.WriteByte(c)
		}
	}
	if b.Len() == 0 {
		return s
	}
	return b.String()
}

// normalizePath is requestTarget.normPath's normalisation of p, which
// starts with '/'.
func normalizePath(p string) string {
	p = strings.ReplaceAll(p, `\`, "/")
	p = "/" + strings.TrimLeft(p, "/")
	segs := strings.Split(p[1:], "/")
	out := make([]string, 0, len(segs))
	for i, s := range segs {
		last := i == len(segs)-1
		switch dotSegment(s) {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}

// dotSegment returns "." or ".." when segment s is one, spelled with
// '.' or "%2e" in any case, with or without ";parameters", else "".
func dotSegment(s string) string {
	// A path parameter does not make a dot segment another name: servlet
	// containers (Tomcat, Jetty) strip ";..." from each segment before
	// resolving, so "..;x" is ".." to them (RFC 3986 §3.3 lets a segment
	// carry parameters).
	s, _, _ = strings.Cut(s, ";")
	if len(s) > 6 || !strings.ContainsAny(s, ".%") {
		return ""
	}
	d := strings.ReplaceAll(strings.ReplaceAll(s, "%2e", "."), "%2E", ".")
	if d == "." || d == ".." {
		return d
	}
	return ""
}

// decodedPaths are the readings a path rule (HTTPRule.Paths) must hold
// for, each fully percent-decoded: the normalised path decoded (an
// upstream that splits segments before decoding), and the path decoded
// first, "%2F" becoming a separator, then normalised (one that decodes
// first). asSpelled adds the spelling decoded, for an upstream that never
// resolves dot segments. ok is false when the path has an invalid percent
// escape: no reading can be trusted then.
func (t requestTarget) decodedPaths(asSpelled bool) (readings []string, ok bool) {
	a, err := url.PathUnescape(t.normPath)
	if err != nil {
		return nil, false
	}
	d, err := url.PathUnescape(t.path)
	if err != nil {
		return nil, false
	}
	// A NUL (where C servers cut the path) or bytes that are not UTF-8
	// (overlong forms such as %c0%ae, which old decoders read as '.')
	// leave no reading srt can vouch for.
	if strings.ContainsRune(d, 0) || !utf8.ValidString(d) {
		return nil, false
	}
	readings = []string{a, normalizePath(d)}
	if asSpelled {
		readings = append(readings, d)
	}
	return readings, true
}

// upstreamURL is the URL a plain-HTTP request is forwarded with: u's
// scheme and authority, t's target as spelled (normalized: its normalised
// path). The path goes on the wire byte for byte (url.URL.Opaque): in
// absolute form through a parent proxy (absolute), else in origin form,
// but for a path starting with "//", which Opaque would turn into an
// authority: that one goes as Go's encoder writes it
// (url.URL.EscapedPath).
func upstreamURL(u *url.URL, t requestTarget, normalized, absolute bool) *url.URL {
	p := t.path
	if normalized {
		p = t.normPath
	}
	out := &url.URL{Scheme: u.Scheme, Host: u.Host, RawQuery: t.query, ForceQuery: t.hasQuery && t.query == ""}
	switch {
	case absolute:
		out.Opaque = "//" + u.Host + p
	case strings.HasPrefix(p, "//"):
		out.Path, _ = url.PathUnescape(p)
		out.RawPath = p
	default:
		out.Opaque = p
	}
	return out
}
