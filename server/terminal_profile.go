package server

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/srt-go/srt/api"
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
	// Network is a native terminal's egress when its request names none:
	// api.TerminalNetworkOpen (also "", seed 000's "network open") or
	// api.TerminalNetworkBaseline. See terminalSettings.
	Network api.TerminalNetwork
	// AllowedDomains is a native terminal's egress allow-list in
	// baseline mode (in open mode only its IP literals still matter).
	// Nil means DefaultTerminalAllowedDomains.
	AllowedDomains []string
	// DeniedDomains beats AllowedDomains and open mode. Nil means
	// DefaultTerminalDeniedDomains.
	DeniedDomains []string
	// SelfDeny are srtd's own API addresses (netrule entries such as
	// "localhost:7777"), denied in every mode on top of DeniedDomains;
	// the srtd registry refuses them as well where the proxies read it
	// (Linux).
	SelfDeny []string
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

// denyRead are the paths a terminal cannot read: the secret directories
// of the profile under the home directory (TerminalDenyRead) and srtd's
// own (HiddenFiles: its token file). The native terminal refuses them
// (terminalSettings) and the microvm terminal hides them host-side
// (port.MicroVMProfile.DenyRead).
func (c TerminalConfig) denyRead() []string {
	home := c.home()
	deny := []string{}
	for _, d := range TerminalDenyRead {
		deny = append(deny, filepath.Join(home, d))
	}
	return append(deny, c.HiddenFiles...)
}

// networkMode is the mode a terminal's request asks for, else cfg's, else
// open (seed 000: "le réseau est ouvert").
func (c TerminalConfig) networkMode(req api.TerminalNetwork) api.TerminalNetwork {
	switch {
	case req != "":
		return req
	case c.Network != "":
		return c.Network
	}
	return api.TerminalNetworkOpen
}

// ValidTerminalNetwork reports whether n names a mode a request or
// --terminal-network may ask for: open or baseline.
func ValidTerminalNetwork(n api.TerminalNetwork) bool {
	return n == api.TerminalNetworkOpen || n == api.TerminalNetworkBaseline
}

// terminalSettings is the fixed terminal profile of seed 000 expressed as
// srt settings: $HOME and the session workdir writable, reads of the
// secret directories refused, network as cfg.Network says.
//
// The sandbox's only way out is its filtering proxies. In open mode (the
// seed's "network open") they allow every host name
// (settings.Network.AllowAllDomains, which no settings file can set),
// and the fixed deny list still wins: DeniedDomains (cloud metadata,
// telemetry), srtd's own addresses (SelfDeny and the srtd registry),
// netrule's built-in metadata list and its resolved-address guard (a
// name resolving to a private, link-local or this host's address is
// refused; "localhost" may reach the loopback). An IP literal is reached
// only when AllowedDomains names it. In baseline mode the proxies allow
// AllowedDomains only — by default the port's baseline (LLM providers,
// git hosting, package registries, GitHub).
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
	denied = append(append([]string{}, denied...), cfg.SelfDeny...)
	mode := cfg.networkMode("")
	if !ValidTerminalNetwork(mode) {
		return nil, fmt.Errorf("terminal network %q: want open or baseline", mode)
	}
	doc := map[string]any{
		"network": map[string]any{"allowedDomains": allowed, "deniedDomains": denied},
		"filesystem": map[string]any{
			"denyRead":   cfg.denyRead(),
			"allowWrite": []string{home, workdir},
			"denyWrite":  append([]string{}, cfg.ReadOnlyDirs...),
		},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	// Through the settings parser, so the profile is checked like a file.
	st, err := settings.Parse(b, "terminal profile")
	if err != nil {
		return nil, err
	}
	st.Network.AllowAllDomains = mode == api.TerminalNetworkOpen
	return st, nil
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
