package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/srt-go/srt/port"
	"github.com/srt-go/srt/settings"
)

// TerminalConfig configures terminal sessions. The zero value is usable.
type TerminalConfig struct {
	// Shell is the program a terminal runs. Empty means $SHELL, else
	// /bin/bash, else /bin/sh.
	Shell string
	// Home is the user's home directory: the default working directory,
	// writable in a native terminal, and where the secret directories of
	// the terminal profile are. Empty means os.UserHomeDir.
	Home string
	// AllowedDomains is a native terminal's egress allow-list. Nil means
	// DefaultTerminalAllowedDomains. See terminalSettings for why a
	// native terminal's "open network" is an allow-list.
	AllowedDomains []string
	// DeniedDomains beats AllowedDomains. Nil means
	// DefaultTerminalDeniedDomains.
	DeniedDomains []string
	// HiddenFiles are read-denied and ReadOnlyDirs write-denied in native
	// terminals, beyond the profile (srtd's token file and its directory).
	HiddenFiles  []string
	ReadOnlyDirs []string
}

func (c TerminalConfig) home() string {
	if c.Home != "" {
		return c.Home
	}
	if h, err := os.UserHomeDir(); err == nil {
		return h
	}
	return "/"
}

func (c TerminalConfig) shell() string {
	if c.Shell != "" {
		return c.Shell
	}
	if sh := os.Getenv("SHELL"); filepath.IsAbs(sh) {
		if _, err := os.Stat(sh); err == nil {
			return sh
		}
	}
	if _, err := os.Stat("/bin/bash"); err == nil {
		return "/bin/bash"
	}
	return "/bin/sh"
}

// TerminalDenyRead are the home-relative directories a native terminal
// cannot read (seed 000, "Terminal hébergé par le serveur").
var TerminalDenyRead = []string{".ssh", ".aws", ".gnupg", ".config/gh", "Library/Keychains"}

// terminalSettings is the fixed terminal profile of seed 000 expressed as
// srt settings: $HOME and the session workdir writable, reads of the
// secret directories refused, network "open".
//
// "Open" cannot be said literally: the sandbox's only way out is its
// filtering proxies, and an empty allow-list denies everything
// (netrule); there is no allow-all entry, on purpose. The closest
// fail-closed design is a broad allow-list — by default the port's
// baseline (LLM providers, git hosting, package registries, GitHub) —
// with the fixed deny list (cloud metadata, telemetry) winning over it.
// A terminal that needs more is configured with AllowedDomains, or runs
// on backend none.
func terminalSettings(cfg TerminalConfig, workdir string) (*settings.Settings, error) {
	home := cfg.home()
	allowed := cfg.AllowedDomains
	if allowed == nil {
		allowed = DefaultTerminalAllowedDomains()
	}
	denied := cfg.DeniedDomains
	if denied == nil {
		denied = DefaultTerminalDeniedDomains()
	}
	deny := []string{}
	for _, d := range TerminalDenyRead {
		deny = append(deny, filepath.Join(home, d))
	}
	deny = append(deny, cfg.HiddenFiles...)
	doc := map[string]any{
		"network": map[string]any{"allowedDomains": allowed, "deniedDomains": denied},
		"filesystem": map[string]any{
			"denyRead":   deny,
			"allowWrite": []string{home, workdir},
			"denyWrite":  append([]string{}, cfg.ReadOnlyDirs...),
		},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	// Through the settings parser, so the profile is checked like a file.
	return settings.Parse(b, "terminal profile")
}

// sanitizedEnv is a terminal's environment: srtd's own variables through
// the allow-list every session gets (port.SanitizedEnv: nothing of srtd's
// tokens or keys), HOME, SHELL and TERM of the terminal, then the caller's
// extra. An extra name or value exec could not carry (empty, '=' or NUL
// in the name, NUL in the value) is dropped.
func sanitizedEnv(home, shell string, extra map[string]string) []string {
	env := map[string]string{"HOME": home, "SHELL": shell, "TERM": "xterm-256color"}
	for k, v := range extra {
		if k != "" && !strings.ContainsAny(k, "=\x00") && !strings.Contains(v, "\x00") {
			env[k] = v
		}
	}
	return port.SanitizedEnv(os.Environ(), env)
}
