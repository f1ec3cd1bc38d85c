package netrule

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
)

// Host name limits from RFC 1035 §2.3.4: a label is at most 63 octets and
// a name at most 255 octets on the wire, which is 253 characters in dotted
// text without the trailing dot.
const (
	maxLabelLen = 63
	maxNameLen  = 253
)

var errEmptyHost = errors.New("empty host")

// CanonicalHost returns the form of host that matching uses (srt-notes
// §4.9 "Decision order", step 2):
//
//   - surrounding brackets and an IPv6 zone ("%eth0") are removed;
//   - IPv4 spellings that inet_aton(3) accepts ("127.1", "2130706433",
//     "0x7f.1", "0177.0.0.1") become dotted-quad "127.0.0.1", because
//     that is what getaddrinfo would connect to;
//   - an IPv4-mapped IPv6 address ("::ffff:127.0.0.1") becomes the IPv4
//     address it maps;
//   - a name is lower-cased and loses one trailing dot.
//
// ip is valid when host is an IP literal. It returns an error for an empty
// host, a host with characters outside [A-Za-z0-9._-], an empty or
// over-long label, or a name whose last label is all digits (which
// getaddrinfo would not resolve as a name and which is not a valid IPv4
// address either, e.g. "1.2.3.456").
func CanonicalHost(host string) (canon string, ip netip.Addr, err error) {
	h := host
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
		a, err := parseIPv6(h)
		if err != nil {
			return "", netip.Addr{}, err
		}
		return a.String(), a, nil
	}
	if strings.Contains(h, ":") {
		a, err := parseIPv6(h)
		if err != nil {
			return "", netip.Addr{}, err
		}
		return a.String(), a, nil
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" {
		return "", netip.Addr{}, errEmptyHost
	}
	if a, ok := parseInetAton(h); ok {
		return a.String(), a, nil
	}
	h = strings.ToLower(h)
	if err := checkName(h); err != nil {
		return "", netip.Addr{}, err
	}
	return h, netip.Addr{}, nil
}

// parseIPv6 parses an unbracketed IPv6 literal, drops its zone and unmaps
// an IPv4-mapped address.
func parseIPv6(s string) (netip.Addr, error) {
	if i := strings.IndexByte(s, '%'); i >= 0 {
		s = s[:i]
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is6() {
		return netip.Addr{}, errors.New("invalid IPv6 address")
	}
	return a.Unmap(), nil
}

// checkName validates a lower-cased host name without a trailing dot.
func checkName(h string) error {
	if len(h) > maxNameLen {
		return errors.New("host name longer than 253 characters")
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" {
			return errors.New("empty label")
		}
		if len(l) > maxLabelLen {
			return errors.New("label longer than 63 characters")
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return errors.New("invalid character " + strconv.QuoteRune(rune(c)) + " in host")
			}
		}
	}
	if allDigits(labels[len(labels)-1]) {
		return errors.New("not a valid IP address, and a name cannot end in a numeric label")
	}
	return nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// parseInetAton parses the IPv4 forms inet_aton(3) accepts: one to four
// dot-separated parts, each decimal, octal (leading 0) or hex (0x); the
// last part fills the remaining bytes ("127.1" is 127.0.0.1, "2130706433"
// is 127.0.0.1).
func parseInetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, ok := parseAtonPart(p)
		if !ok {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var n uint64
	last := len(vals) - 1
	for i := 0; i < last; i++ {
		if vals[i] > 0xff {
			return netip.Addr{}, false
		}
		n |= vals[i] << (8 * (3 - i))
	}
	if vals[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	n |= vals[last]
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

func parseAtonPart(p string) (uint64, bool) {
	if p == "" || len(p) > 12 {
		return 0, false
	}
	base := 10
	switch {
	case len(p) > 1 && (p[:2] == "0x" || p[:2] == "0X"):
		base, p = 16, p[2:]
		if p == "" {
			return 0, true // "0x" is 0 for inet_aton
		}
	case len(p) > 1 && p[0] == '0':
		base, p = 8, p[1:]
	}
	v, err := strconv.ParseUint(p, base, 32)
	if err != nil {
		return 0, false
	}
	return v, true
}
