// Package credential keeps real secrets out of the sandbox (issue 18;
// reference 0.0.83 "credentials"): it mints the sentinels the sandbox
// sees in place of masked values (same shape as the real value), masks
// whole values, extracted spans and JSON Web Tokens, and substitutes in
// both directions for srt's proxy — sentinel to real value in requests
// to a secret's inject hosts (Set.Egress), real value to sentinel in
// everything that comes back (Set.Ingress) — and applies the deny and
// mask rules to the sandbox's environment (Set.Environ).
//
// Sentinels (Mint) keep the real value's length and character classes
// when that leaves at least 64 random bits. The replacers also find each
// value percent-encoded, JSON-escaped and (Ingress) base64-encoded inside
// longer text, and inside Basic credentials in headers (encode.go).
//
// Runs in srt and srtd (host side). The real values live only in this
// process's memory: nothing here writes them to a file or a log.
package credential
