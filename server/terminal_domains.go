package server

import "github.com/srt-go/srt/port"

// DefaultTerminalAllowedDomains is a native terminal's allow-list when
// TerminalConfig.AllowedDomains is nil: the port's launch baseline and
// GitHub's domains (seed 000, "Sortie réseau"; port.DefaultBaseline).
func DefaultTerminalAllowedDomains() []string {
	b := port.DefaultBaseline()
	return append(b.Allowed, b.GitHub...)
}

// DefaultTerminalDeniedDomains beats the allow-list: the port's fixed
// deny list (cloud metadata endpoints, telemetry sinks).
func DefaultTerminalDeniedDomains() []string { return port.DefaultBaseline().Denied }
