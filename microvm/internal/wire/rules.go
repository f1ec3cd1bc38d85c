package wire

import "github.com/srt-go/srt/policy"

// Rules is the filesystem half of a compiled policy.Policy, what the
// guest's supervisor (sandbox/linux/supervisor) judges names by when the
// host sets microvm.Config.Names: the read and write lists, the glob and
// mandatory patterns, the git-config allowance. Never the network half,
// the credentials or the masks: the guest kernel is less trusted than the
// host, and the supervisor reads none of them (grep Config.Policy's uses
// in sandbox/linux/supervisor: names.go, observe_linux.go, creator_linux.go).
//
// Every path is a HOST path: the guest judges a guest path at the host
// path it reaches through the share table (Share.Host).
type Rules struct {
	Cwd  string `json:"cwd"`
	Home string `json:"home"`

	AllowRead  []RulePath `json:"allowRead,omitempty"`
	DenyRead   []RulePath `json:"denyRead,omitempty"`
	AllowWrite []RulePath `json:"allowWrite,omitempty"`
	DenyWrite  []RulePath `json:"denyWrite,omitempty"`

	DenyWriteGlobs    []RuleGlob `json:"denyWriteGlobs,omitempty"`
	DenyReadGlobs     []RuleGlob `json:"denyReadGlobs,omitempty"`
	MandatoryPatterns []string   `json:"mandatoryPatterns,omitempty"`
	AllowGitConfig    bool       `json:"allowGitConfig,omitempty"`
}

// RulePath is a policy.Path's exported fields.
type RulePath struct {
	Literal  string        `json:"literal"`
	Resolved string        `json:"resolved"`
	Kind     policy.Kind   `json:"kind"`
	Rule     string        `json:"rule"`
	Origin   policy.Origin `json:"origin"`
	IsDir    bool          `json:"isDir,omitempty"`
}

// RuleGlob is a policy.Glob.
type RuleGlob struct {
	Pattern  string `json:"pattern"`
	Resolved string `json:"resolved"`
	Rule     string `json:"rule"`
}

// RulesOf returns the filesystem half of p, or nil for a nil p.
func RulesOf(p *policy.Policy) *Rules {
	if p == nil {
		return nil
	}
	return &Rules{
		Cwd: p.Cwd, Home: p.Home,
		AllowRead: paths(p.AllowRead), DenyRead: paths(p.DenyRead),
		AllowWrite: paths(p.AllowWrite), DenyWrite: paths(p.DenyWrite),
		DenyWriteGlobs: globs(p.DenyWriteGlobs), DenyReadGlobs: globs(p.DenyReadGlobs),
		MandatoryPatterns: append([]string(nil), p.MandatoryPatterns...),
		AllowGitConfig:    p.AllowGitConfig,
	}
}

// Policy rebuilds the *policy.Policy the guest's supervisor judges by.
// Its Network, Process, credentials and View are zero: the guest never
// gets them.
func (r *Rules) Policy() *policy.Policy {
	p := &policy.Policy{
		Cwd: r.Cwd, Home: r.Home, NamesAtCreation: true, NamesAtCreationSet: true,
		AllowRead: unpaths(r.AllowRead), DenyRead: unpaths(r.DenyRead),
		AllowWrite: unpaths(r.AllowWrite), DenyWrite: unpaths(r.DenyWrite),
		DenyWriteGlobs: unglobs(r.DenyWriteGlobs), DenyReadGlobs: unglobs(r.DenyReadGlobs),
		MandatoryPatterns: append([]string(nil), r.MandatoryPatterns...),
		AllowGitConfig:    r.AllowGitConfig,
	}
	return p
}

func paths(l []policy.Path) []RulePath {
	var out []RulePath
	for _, p := range l {
		out = append(out, RulePath{Literal: p.Literal, Resolved: p.Resolved, Kind: p.Kind, Rule: p.Rule, Origin: p.Origin, IsDir: p.IsDir})
	}
	return out
}

func unpaths(l []RulePath) []policy.Path {
	var out []policy.Path
	for _, p := range l {
		out = append(out, policy.Path{Literal: p.Literal, Resolved: p.Resolved, Kind: p.Kind, Rule: p.Rule, Origin: p.Origin, IsDir: p.IsDir})
	}
	return out
}

func globs(l []policy.Glob) []RuleGlob {
	var out []RuleGlob
	for _, g := range l {
		out = append(out, RuleGlob{Pattern: g.Pattern, Resolved: g.Resolved, Rule: g.Rule})
	}
	return out
}

func unglobs(l []RuleGlob) []policy.Glob {
	var out []policy.Glob
	for _, g := range l {
		out = append(out, policy.Glob{Pattern: g.Pattern, Resolved: g.Resolved, Rule: g.Rule})
	}
	return out
}
