package port

import (
	"slices"

	"github.com/srt-go/srt/netrule"
)

// Baseline is the egress policy every session starts from (seed 000,
// "Sortie réseau"): the one documented place for these lists. A session's
// allow-list is Allowed + GitHub + its Spec.EgressAllowlist; Denied beats
// every allow, and so does netrule's built-in cloud metadata list
// (netrule.MetadataHosts, MetadataPrefixes), which no Baseline can remove.
//
// Entries use the netrule grammar, with both wildcard forms: "*.example.com"
// (any subdomain, never the apex) and "bedrock.*.amazonaws.com" (exactly
// one label).
type Baseline struct {
	// Allowed is the curated allow-list (seed's kBaselineAllowedDomains):
	// LLM providers, git hosting, package registries.
	Allowed []string
	// GitHub is GitHub's domains (seed's kGithubDomains).
	GitHub []string
	// Denied is the fixed deny list (seed's kBaselineDeniedDomains): cloud
	// metadata endpoints by name and telemetry sinks.
	Denied []string
}

// DefaultBaseline returns a fresh copy of the built-in lists; Options.Baseline
// overrides them (nil means these).
func DefaultBaseline() Baseline {
	return Baseline{
		Allowed: slices.Clone(baselineAllowed),
		GitHub:  slices.Clone(githubDomains),
		Denied:  slices.Clone(baselineDenied),
	}
}

var baselineAllowed = []string{
	// LLM providers.
	"api.anthropic.com",
	"claude.ai",
	"api.openai.com",
	"generativelanguage.googleapis.com",
	"aiplatform.googleapis.com",
	"bedrock.*.amazonaws.com",
	"bedrock-runtime.*.amazonaws.com",
	"*.openai.azure.com",
	"*.services.ai.azure.com",
	"api.mistral.ai",
	"api.groq.com",
	"api.deepseek.com",
	"openrouter.ai",
	// Git hosting (GitHub is its own list).
	"gitlab.com",
	"*.gitlab.com",
	"bitbucket.org",
	"*.bitbucket.org",
	"codeberg.org",
	"git.sr.ht",
	// Package registries.
	"registry.npmjs.org",
	"registry.yarnpkg.com",
	"pypi.org",
	"files.pythonhosted.org",
	"proxy.golang.org",
	"sum.golang.org",
	"index.golang.org",
	"crates.io",
	"index.crates.io",
	"static.crates.io",
	"rubygems.org",
	"index.rubygems.org",
	"repo.maven.apache.org",
	"repo1.maven.org",
	"plugins.gradle.org",
	"services.gradle.org",
	"api.nuget.org",
	"repo.packagist.org",
	"hex.pm",
	"repo.hex.pm",
	"deb.debian.org",
	"security.debian.org",
	"archive.ubuntu.com",
	"security.ubuntu.com",
	"registry-1.docker.io",
	"auth.docker.io",
	"production.cloudflare.docker.com",
}

var githubDomains = []string{
	"github.com",
	"*.github.com",
	"githubusercontent.com",
	"*.githubusercontent.com",
	"ghcr.io",
	"*.ghcr.io",
	"github.io",
	"*.githubassets.com",
}

var baselineDenied = []string{
	// Cloud metadata endpoints by name (the addresses are netrule's
	// built-in list, always on).
	"metadata.google.internal",
	"metadata.goog",
	"metadata.azure.com",
	"169.254.169.254",
	"169.254.170.2",
	"100.100.100.200",
	"[fd00:ec2::254]",
	// Telemetry sinks.
	"statsig.anthropic.com",
	"*.statsig.com",
	"api.statsig.com",
	"sentry.io",
	"*.sentry.io",
	"*.ingest.sentry.io",
	"*.datadoghq.com",
	"*.datadoghq.eu",
	"api.segment.io",
	"*.segment.com",
	"api.mixpanel.com",
	"api.amplitude.com",
	"api2.amplitude.com",
	"sessions.bugsnag.com",
	"notify.bugsnag.com",
	"*.honeycomb.io",
	"app.posthog.com",
	"us.i.posthog.com",
	"eu.i.posthog.com",
}

// EgressRules returns the session's netrule lists: with networkEnabled, b's
// Allowed and GitHub plus extra; without, an empty allow-list (the proxies
// still run and refuse everything). Denied is b.Denied either way.
func EgressRules(b Baseline, networkEnabled bool, extra []string) netrule.Rules {
	r := netrule.Rules{
		Allowed:             []string{},
		Denied:              slices.Clone(b.Denied),
		AllowlistDenyReason: "host is not on this session's egress allow-list",
	}
	if networkEnabled {
		r.Allowed = append(append(append(r.Allowed, b.Allowed...), b.GitHub...), extra...)
	} else {
		r.AllowlistDenyReason = "network disabled for this session (networkEnabled: false)"
	}
	return r
}

func compileRules(r netrule.Rules) (*netrule.Policy, error) { return netrule.Compile(r) }
