package credential

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

var fallbackRE = regexp.MustCompile(`^srt-masked-[a-z2-7]{26}$`)

func classOf(c byte) string {
	switch {
	case 'A' <= c && c <= 'Z':
		return "upper"
	case 'a' <= c && c <= 'z':
		return "lower"
	case '0' <= c && c <= '9':
		return "digit"
	}
	return string(c)
}

func TestMintShape(t *testing.T) {
	for _, tc := range []struct {
		name, real, keep string // keep: the prefix kept verbatim
		fallback         bool
		sameClass        bool // every position keeps its class (false: AWS id body is [A-Z0-9])
	}{
		{"github classic", "ghp_" + "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5", "ghp_", false, true},
		{"github fine-grained", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123", "github_pat_", false, true},
		{"gitlab", "glpat-xY3_zW9-aBcDeFgHiJkL", "glpat-", false, true},
		{"slack bot", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "xoxb-", false, true},
		{"npm", "npm_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", "npm_", false, true},
		{"openai", "sk-aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789abcd", "sk-", false, true},
		{"generic marker", "tok_Ab12Cd34Ef56Gh78", "tok_", false, true},
		{"aws key id", "AKIAIOSFODNN7EXAMPLE", "AKIA", false, false},
		{"aws key id digits", "ASIA1234567890123456", "ASIA", false, false},
		{"aws secret", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "", false, true},
		{"passphrase", "correct-horse-battery-staple", "", false, true},
		{"jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "", false, true},
		{"short password", "hunter2", "", true, true},
		{"digits", "123456789012345", "", true, true},
		{"one byte", "s", "", true, true},
		{"empty", "", "", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			real := []byte(tc.real)
			s := Mint(real)
			if bytes.Equal(s, real) || (len(real) > 0 && bytes.Contains(s, real)) {
				t.Fatalf("Mint(%q) = %q: shows the real value", real, s)
			}
			if tc.fallback {
				if !fallbackRE.Match(s) && !(tc.real == "s" && regexp.MustCompile(`^[a-z2-7]{26}$`).Match(s)) {
					t.Fatalf("Mint(%q) = %q, want the srt-masked- fallback", real, s)
				}
				return
			}
			if len(s) != len(real) {
				t.Fatalf("Mint(%q) = %q: length %d, want %d", real, s, len(s), len(real))
			}
			if !bytes.HasPrefix(s, []byte(tc.keep)) {
				t.Fatalf("Mint(%q) = %q: marker %q not kept", real, s, tc.keep)
			}
			same := 0
			for i := len(tc.keep); i < len(real); i++ {
				rc, sc := classOf(real[i]), classOf(s[i])
				if len(rc) == 1 { // kept byte
					if s[i] != real[i] {
						t.Fatalf("Mint(%q) = %q: byte %d %q not kept", real, s, i, real[i])
					}
					continue
				}
				if real[i] == s[i] {
					same++
				}
				if tc.sameClass && rc != sc {
					t.Fatalf("Mint(%q) = %q: byte %d class %s, want %s", real, s, i, sc, rc)
				}
				if !tc.sameClass && sc != "upper" && sc != "digit" {
					t.Fatalf("Mint(%q) = %q: byte %d is %s", real, s, i, sc)
				}
			}
			if n := len(real) - len(tc.keep); same > n/2 {
				t.Fatalf("Mint(%q) = %q: %d of %d random positions equal the real value", real, s, same, n)
			}
		})
	}
}

func TestMintMarkerNotAWord(t *testing.T) {
	// A first word of a passphrase is no type marker: nothing of it stays.
	for _, real := range []string{"correct-horse-battery-staple", "hunter-horse-battery-st4ple", "Mixed-Ab12Cd34Ef56Gh78Ij"} {
		for range 20 {
			s := Mint([]byte(real))
			w, _, _ := strings.Cut(real, "-")
			if strings.HasPrefix(string(s), w) {
				t.Fatalf("Mint(%q) = %q keeps %q", real, s, w)
			}
		}
	}
}

func TestMintEntropy(t *testing.T) {
	for _, tc := range []struct {
		real    string
		minBits float64
	}{
		{"AKIA1234567890123456", 82},
		{"ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5", 64},
		{"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", 64},
		{"12345678901234567890", 64}, // 20 digits: 66 bits
	} {
		if _, bits := shape([]byte(tc.real)); bits < tc.minBits {
			t.Errorf("shape(%q) = %.1f bits, want ≥ %.0f", tc.real, bits, tc.minBits)
		}
	}
	if _, bits := shape([]byte("1234567890123456789")); bits >= minShapeBits {
		t.Errorf("19 digits: %.1f bits, want < %d (fallback)", bits, minShapeBits)
	}
	seen := map[string]bool{}
	for _, real := range []string{"AKIAIOSFODNN7EXAMPLE", "hunter2", "12345678901234567890"} {
		for range 500 {
			s := string(Mint([]byte(real)))
			if seen[s] {
				t.Fatalf("Mint(%q) repeated %q", real, s)
			}
			seen[s] = true
		}
	}
}

func TestMintNeverContainsReal(t *testing.T) {
	for _, real := range []string{"s", "a", "-", "masked", "srt-masked-", "d-a", "2"} {
		for range 200 {
			if s := Mint([]byte(real)); bytes.Contains(s, []byte(real)) {
				t.Fatalf("Mint(%q) = %q", real, s)
			}
		}
	}
}
