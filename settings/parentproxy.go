package settings

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// ParentProxy is the "network.parentProxy" object: the proxy srt itself
// must go through to leave the host (a corporate proxy). Each URL has been
// checked by ParseProxyURL; either may be empty.
type ParentProxy struct {
	// HTTP is the parent for plain-HTTP requests ("http" key).
	HTTP string `json:"http,omitempty"`
	// HTTPS is the parent for CONNECT tunnels and SOCKS5 connections
	// ("https" key); empty falls back to HTTP, as curl does.
	HTTPS string `json:"https,omitempty"`
	// NoProxy is the NO_PROXY list, comma-separated: host suffixes, IP
	// literals, CIDR ranges, optional ":port", "*" for everything
	// (golang.org/x/net/http/httpproxy semantics). The key takes a string
	// or an array of strings.
	NoProxy string `json:"noProxy,omitempty"`
}

// ErrProxyURL is wrapped by every error of ParseProxyURL.
var ErrProxyURL = errors.New("invalid proxy URL")

// ParseProxyURL checks one parent proxy URL, from the settings file or
// srt's own environment, and returns it parsed. A value without a scheme
// ("proxy:3128") means http://, as curl and Go's httpproxy read it. The
// scheme must be http or https, the host non-empty, the port (default 80
// or 443) 1..65535, and there must be no path, query or fragment.
// Credentials ("http://user:pass@proxy:3128") are allowed. An error
// quotes the value as given, its userinfo shown as "***" (redactRaw), and
// never the value when it does not parse.
func ParseProxyURL(raw string) (*url.URL, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, fmt.Errorf("%w: empty", ErrProxyURL)
	}
	given := raw
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the value, credentials included: not wrapped.
		return nil, fmt.Errorf("%w: does not parse as a URL", ErrProxyURL)
	}
	switch u.Scheme {
	case "http", "https":
	default:
		return nil, fmt.Errorf("%w: scheme %q is not supported (want http or https)", ErrProxyURL, u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("%w %q: it has no host", ErrProxyURL, redactRaw(given))
	}
	if ps := u.Port(); ps != "" {
		if p, err := strconv.Atoi(ps); err != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("%w %q: port must be 1..65535", ErrProxyURL, redactRaw(given))
		}
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return nil, fmt.Errorf("%w %q: a proxy URL has no path, query or fragment", ErrProxyURL, redactRaw(given))
	}
	return u, nil
}

// parentProxy checks the network.parentProxy object.
func (c *checker) parentProxy(n *node, path string) (*ParentProxy, error) {
	members, err := c.object(n, path)
	if err != nil || n.kind == 'n' {
		return nil, err
	}
	pp := &ParentProxy{}
	for _, m := range members {
		p := joinKey(path, m.name)
		switch m.name {
		case "http", "https":
			v, err := c.str(m.val, p, true)
			if err != nil {
				return nil, err
			}
			if m.val.kind == 'n' {
				continue
			}
			if _, err := ParseProxyURL(v); err != nil {
				return nil, c.errorAt(m.val.off, p, err, "%v", err)
			}
			if m.name == "http" {
				pp.HTTP = v
			} else {
				pp.HTTPS = v
			}
		case "noProxy":
			pp.NoProxy, err = c.noProxy(m.val, p)
			if err != nil {
				return nil, err
			}
		default:
			return nil, c.unknown(m, path, parentProxyKeys)
		}
	}
	return pp, nil
}

// noProxy reads noProxy: a comma-separated string, or an array of entries
// (each without a comma). null is empty.
func (c *checker) noProxy(n *node, path string) (string, error) {
	if n.kind == '"' || n.kind == 'n' {
		return n.str, nil
	}
	list, err := c.strList(n, path, "NO_PROXY entries")
	if err != nil {
		if n.kind != '[' {
			return "", c.errorAt(n.off, path, nil, "expected a string or an array of strings, got %s", kindName(n.kind))
		}
		return "", err
	}
	for i, e := range list {
		if strings.TrimSpace(e) == "" || strings.ContainsAny(e, ", \t") {
			return "", c.errorAt(n.elems[i].off, joinIndex(path, i), nil, "a NO_PROXY entry must be non-empty, without commas or spaces, got %q", e)
		}
	}
	return strings.Join(list, ","), nil
}

// redactRaw is a proxy URL as its user spelled it, with everything from
// the authority's start to its last "@" shown as "***" (the user name
// too, which url.URL.Redacted keeps). The last "@" of the whole value,
// not of the authority as url.Parse reads it: a password holding "/"
// would otherwise end the authority early and show its tail.
func redactRaw(given string) string {
	start := 0
	if i := strings.Index(given, "://"); i >= 0 {
		start = i + len("://")
	}
	if at := strings.LastIndexByte(given[start:], '@'); at >= 0 {
		return given[:start] + "***" + given[start+at:]
	}
	return given
}

// HoldsCredentials reports whether pp carries a secret: userinfo in
// either URL (the user name alone counts). A settings file that does is
// read-denied inside the sandbox (policy.RuleSettingsFile).
func (pp *ParentProxy) HoldsCredentials() bool {
	if pp == nil {
		return false
	}
	for _, raw := range []string{pp.HTTP, pp.HTTPS} {
		if raw == "" {
			continue
		}
		u, err := ParseProxyURL(raw)
		if err != nil || u.User != nil {
			return true // unparseable was refused when read; be safe
		}
	}
	return false
}
