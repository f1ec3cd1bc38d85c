package credential

import (
	"bytes"
	"crypto/rand"
	"encoding/base32"
	"math"
	"math/big"
)

// minShapeBits is the least randomness a same-shape sentinel must carry
// (task "core" of issue 18): below it, Mint falls back to fallbackPrefix
// and fallbackChars random base32 characters.
const minShapeBits = 64

// fallbackPrefix starts every sentinel that cannot keep the real value's
// shape; fallbackChars base32 characters (5 bits each, 130 bits) follow.
const (
	fallbackPrefix = "srt-masked-"
	fallbackChars  = 26
)

// knownMarkers are token type prefixes (at most 12 bytes) kept verbatim: secret scanners and
// clients recognise a token by them, and they are public, not secret.
// Longest first, so "github_pat_" wins over a shorter generic match.
var knownMarkers = []string{
	"github_pat_", "sk-proj-", "sk_live_", "sk_test_", "rk_live_", "rk_test_",
	"sk-ant-", "glpat-", "xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xapp-",
	"pypi-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "npm_", "hf_", "sk-",
}

// Character classes a random position is drawn from.
const (
	classUpper   = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	classLower   = "abcdefghijklmnopqrstuvwxyz"
	classDigit   = "0123456789"
	classUpperDg = classUpper + classDigit // AWS access key id body
)

// Mint returns a fresh sentinel for real, of the same shape (length and
// character classes) where that leaves enough randomness, with at least
// 64 random bits in every case.
//
// Shape: each ASCII upper-case letter, lower-case letter and digit is
// replaced by a random one of the same class; every other byte is kept
// (separators, '/', '+', '=', non-ASCII). A leading type marker is kept
// (markerLen). When the random positions carry fewer than 64 bits
// (sum of log2 of the class sizes), the sentinel is "srt-masked-" and 26
// random base32 characters instead (130 bits). The sentinel never equals
// real and never contains it (minted again on a collision); an empty
// real gets a fallback sentinel. Panics only
// when crypto/rand fails, which Go documents never happens on Linux and
// macOS.
func Mint(real []byte) []byte {
	if len(real) == 0 {
		return fallback(real) // contains "" whatever it is
	}
	classes, bits := shape(real)
	for {
		var s []byte
		if bits >= minShapeBits {
			s = fillShape(real, classes)
		} else {
			s = fallback(real)
		}
		if !bytes.Contains(s, real) {
			return s
		}
	}
}

// shape returns, for each byte of real, the class its sentinel byte is
// drawn from ("" keeps the byte), and the bits those draws carry.
func shape(real []byte) (classes []string, bits float64) {
	classes = make([]string, len(real))
	start := markerLen(real)
	aws := isAWSKeyID(real)
	for i := start; i < len(real); i++ {
		c := real[i]
		switch {
		case aws:
			classes[i] = classUpperDg
		case 'A' <= c && c <= 'Z':
			classes[i] = classUpper
		case 'a' <= c && c <= 'z':
			classes[i] = classLower
		case '0' <= c && c <= '9':
			classes[i] = classDigit
		default:
			continue
		}
		bits += math.Log2(float64(len(classes[i])))
	}
	return classes, bits
}

// isAWSKeyID reports whether real is an AWS access key id: "AKIA"
// (long-term) or "ASIA" (temporary) and 16 of [A-Z0-9]. Its body is drawn
// from [A-Z0-9] at every position (82 bits), so that a digit-heavy id
// still gets a same-shape sentinel the SigV4 re-signer can recognise.
func isAWSKeyID(real []byte) bool {
	if len(real) != 20 || (!bytes.HasPrefix(real, []byte("AKIA")) && !bytes.HasPrefix(real, []byte("ASIA"))) {
		return false
	}
	for _, c := range real[4:] {
		if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// markerLen is the length of real's leading type marker, kept verbatim:
// "AKIA"/"ASIA" of an AWS key id, one of knownMarkers, or a generic one —
// 2 to 5 lower-case letters then '_' or '-' — when what follows looks
// like a random token rather than words: at least 16 ASCII letters and
// digits, with a digit among them. The generic rule is narrow because a
// kept "marker" that is really the first word of a passphrase would show
// part of the secret in the sentinel.
func markerLen(real []byte) int {
	if isAWSKeyID(real) {
		return 4
	}
	for _, m := range knownMarkers {
		if len(real) > len(m) && bytes.HasPrefix(real, []byte(m)) {
			return len(m)
		}
	}
	n := 0
	for n < len(real) && n < 6 && 'a' <= real[n] && real[n] <= 'z' {
		n++
	}
	if n < 2 || n > 5 || n >= len(real) || (real[n] != '_' && real[n] != '-') {
		return 0
	}
	body := real[n+1:]
	if len(body) < 16 || !bytes.ContainsFunc(body, func(r rune) bool { return '0' <= r && r <= '9' }) {
		return 0
	}
	for _, c := range body {
		if !isLetter(c) && !('0' <= c && c <= '9') {
			return 0
		}
	}
	return n + 1
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// fillShape draws each classed position of real afresh; the sentinel
// differs from real with probability 1-2^-64 at least, and Mint checks.
func fillShape(real []byte, classes []string) []byte {
	s := bytes.Clone(real)
	for i, cl := range classes {
		if cl != "" {
			s[i] = cl[randIntn(len(cl))]
		}
	}
	return s
}

// fallback is fallbackPrefix and fallbackChars random lower-case base32
// characters; without the prefix when real is part of it (a value such as
// "s" or "masked"), so that the retry in Mint can succeed.
func fallback(real []byte) []byte {
	var b [17]byte // 136 bits, 28 base32 characters; 26 are kept
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand.Read never fails on supported systems
	}
	body := bytes.ToLower([]byte(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])))[:fallbackChars]
	if len(real) > 0 && bytes.Contains([]byte(fallbackPrefix), real) {
		return body
	}
	return append([]byte(fallbackPrefix), body...)
}

// randIntn is a uniform random int in [0, n) from crypto/rand.
func randIntn(n int) int {
	v, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
	if err != nil {
		panic(err) // crypto/rand never fails on supported systems
	}
	return int(v.Int64())
}
