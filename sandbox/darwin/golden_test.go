package darwin

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/sandbox/darwin/sbpl"
	"github.com/srt-go/srt/settings"
)

var update = flag.Bool("update", false, "rewrite testdata/*.sb from the generator")

// goldenTag is a fixed tag so the golden files are stable.
const goldenTag = "CMD64_bnBtIHRlc3Q=_END_0123456789abcdef_SBX"

func path(lit, res, rule string) policy.Path {
	return policy.Path{Literal: lit, Resolved: res, Kind: policy.Dir, Rule: rule}
}

// goldenPolicy is a hand-built policy with fixed paths (a Mac user's),
// so the golden files do not depend on the machine running the test.
func goldenPolicy(s *settings.Settings) *policy.Policy {
	proj := "/Users/me/proj"
	p := &policy.Policy{
		Cwd: proj, Home: "/Users/me", Process: policy.ProcessOf(s),
		DenyRead:   []policy.Path{path("/Users/me/.ssh", "/Users/me/.ssh", "filesystem.denyRead[0]")},
		AllowWrite: []policy.Path{path(proj, proj, "filesystem.allowWrite[0]")},
		DenyWrite: []policy.Path{
			path(proj+"/.bashrc", proj+"/.bashrc", "mandatory: .bashrc"),
			path(proj+"/.git/hooks", proj+"/.git/hooks", "mandatory: .git/hooks"),
			path(proj+"/.git/config", proj+"/.git/config", "mandatory: .git/config"),
			path(proj+"/sub/.vscode", proj+"/sub/.vscode", "mandatory: .vscode"),
		},
		MandatoryPatterns: policy.MandatoryGlobs(s.Filesystem.AllowGitConfig),
	}
	var err error
	if p.Network, err = policy.NetworkOf(s); err != nil {
		panic(err)
	}
	return p
}

func goldenCases() map[string]func() (string, error) {
	opts := func(p *policy.Policy) Options {
		return Options{Policy: p, Tag: goldenTag, HTTPProxyPort: 50001, SOCKSProxyPort: 50002,
			WriteRoots: []string{"/var/folders/xy/abc123/T/srt-1/tmp"}}
	}
	return map[string]func() (string, error){
		"default": func() (string, error) {
			return Profile(opts(goldenPolicy(settings.Default())))
		},
		"full": func() (string, error) {
			s := settings.Default()
			s.EnableWeakerNetworkIsolation = true
			s.AllowAppleEvents = true
			s.AllowPty = true
			s.Network.AllowLocalBinding = true
			s.Network.AllowUnixSockets = []string{"/Users/me/.colima/default/docker.sock"}
			s.Network.AllowMachLookup = []string{"com.example.exact", "com.example.prefix.*"}
			p := goldenPolicy(s)
			p.DenyRead = append(p.DenyRead, path("/Users/me/proj/private", "/Users/me/proj/private", "filesystem.denyRead[1]"))
			p.AllowRead = []policy.Path{path("/Users/me/.ssh/known_hosts", "/Users/me/.ssh/known_hosts", "filesystem.allowRead[0]")}
			p.AllowWrite = append(p.AllowWrite, path("/tmp/build", "/private/tmp/build", "filesystem.allowWrite[1]"))
			p.DenyReadGlobs = []policy.Glob{{Pattern: "/Users/me/proj/**/*.pem", Resolved: "/Users/me/proj/**/*.pem", Rule: "filesystem.denyRead[2]"}}
			p.DenyWriteGlobs = []policy.Glob{{Pattern: "/Users/me/proj/config/*.{json,yaml}", Resolved: "/Users/me/proj/config/*.{json,yaml}", Rule: "filesystem.denyWrite[0]"}}
			return Profile(opts(p))
		},
		"all-unix-sockets": func() (string, error) {
			s := settings.Default()
			s.Network.AllowAllUnixSockets = true
			return Profile(opts(goldenPolicy(s)))
		},
		"disabled": func() (string, error) {
			s := settings.Default()
			s.Filesystem.Disabled = true
			return Profile(opts(&policy.Policy{Process: policy.ProcessOf(s), FilesystemDisabled: true}))
		},
		"agent": func() (string, error) {
			return AgentProfile(Spec{
				BindMounts:      []BindMount{{HostPath: "/Users/me/wt/conv1", GuestPath: "/Users/me/wt/conv1"}, {HostPath: "/Users/me/docs", GuestPath: "/Users/me/docs", ReadOnly: true}},
				Mode:            "chat",
				ProtectedPaths:  []string{"/Users/me/src/repo"},
				RunnerStateDirs: []string{"/Users/me/.cc/state"},
				ExecGrantRoots:  []string{"/Users/me/wt/conv1/node_modules/.bin"},
				Egress:          Egress{HTTPProxyPort: 50001, SOCKSProxyPort: 50002},
				Home:            "/Users/me",
				TmpDir:          "/var/folders/xy/abc123/T/srt-1/tmp",
				Tag:             goldenTag,
			})
		},
		"terminal": func() (string, error) {
			return TerminalProfile(Terminal{Home: "/Users/me", Workdir: "/Users/me/wt/conv1", TmpDir: "/tmp/srt-term", Tag: goldenTag})
		},
	}
}

// TestGolden compares each generated profile with testdata/NAME.sb
// (reviewed by hand; regenerate with go test -update) and checks it is
// in the evaluator's subset.
func TestGolden(t *testing.T) {
	for name, gen := range goldenCases() {
		t.Run(name, func(t *testing.T) {
			got, err := gen()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sbpl.Load(got); err != nil {
				t.Fatalf("generated profile outside the subset: %v\n%s", err, got)
			}
			file := filepath.Join("testdata", name+".sb")
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test -update once and review the file)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from the generator's output; review with go test -update && git diff", file)
			}
		})
	}
}
