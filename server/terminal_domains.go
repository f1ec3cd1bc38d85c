package server

// DefaultTerminalAllowedDomains is a native terminal's allow-list when
// TerminalConfig.AllowedDomains is nil: the launch baseline (seed 000,
// "Sortie réseau": LLM providers, git hosting, package registries, GitHub).
func DefaultTerminalAllowedDomains() []string {
	return []string{
		"api.anthropic.com", "*.anthropic.com", "api.openai.com",
		"github.com", "*.github.com", "*.githubusercontent.com", "gitlab.com", "bitbucket.org",
		"registry.npmjs.org", "pypi.org", "files.pythonhosted.org", "proxy.golang.org",
		"sum.golang.org", "crates.io", "static.crates.io", "deb.debian.org",
	}
}

// DefaultTerminalDeniedDomains beats the allow-list: cloud metadata
// endpoints.
func DefaultTerminalDeniedDomains() []string {
	return []string{"169.254.169.254", "metadata.google.internal", "[fd00:ec2::254]"}
}
