package namelsm

import (
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/sandbox/linux/supervisor"
)

// matcher is the test program (matchtest.bpf.c) loaded with c's rules: the
// LSM program's matching code (match.h) run in the kernel's BPF machine.
type matcher struct {
	objs matchtestObjects
	c    *Compiled
}

func newMatcher(t *testing.T, c *Compiled) *matcher {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("loading a BPF program needs root")
	}
	spec, err := loadMatchtest()
	if err != nil {
		t.Fatal(err)
	}
	m := &matcher{c: c}
	if err := spec.LoadAndAssign(&m.objs, nil); err != nil {
		t.Fatalf("loading the test program: %v", err)
	}
	t.Cleanup(func() { m.objs.Close() })
	for k, v := range c.Keys {
		key := matchtestKey{H: k.H, Kind: k.Kind, Dev: k.Dev}
		val := matchtestValue{Rule: v.Rule, Anchors: v.Anchors}
		if err := m.objs.Rules.Put(&key, &val); err != nil {
			t.Fatal(err)
		}
	}
	cf := matchtestConfig{SuffixMask: c.Config.SuffixMask, WinMask: c.Config.WinMask, SymsufMask: c.Config.SymSufMask,
		Full: c.Config.Full, ExtMask: c.Config.ExtMask, HooksRule: c.Config.HooksRule, Git: c.Config.Git, Anchors: c.Config.Anchors,
		Unders: c.Config.Unders}
	if err := m.objs.Cfg.Put(uint32(0), &cf); err != nil {
		t.Fatal(err)
	}
	return m
}

// kinds of match.h, by supervisor kind.
var kinds = map[string]uint32{supervisor.KindFile: 0, supervisor.KindDir: 1, supervisor.KindOther: 2,
	supervisor.KindExisted: 3, supervisor.KindSymlink: 4}

// judge returns the rule text the BPF code gives host path p on device dev
// as kind, "" for none.
func (m *matcher) judge(t *testing.T, p, kind string, dev uint32) string {
	t.Helper()
	comps := split(p)
	var ctx matchtestTestctx
	ctx.Kind, ctx.Dev, ctx.Rooted = kinds[kind], dev, 1
	if len(comps) > len(ctx.Name) {
		comps = comps[len(comps)-len(ctx.Name):]
		ctx.Rooted = 0
	}
	for i := range comps {
		c := comps[len(comps)-1-i]
		for j := 0; j < len(c) && j < len(ctx.Name[i])-1; j++ {
			ctx.Name[i][j] = int8(c[j])
		}
	}
	ctx.Depth = uint32(len(comps))
	in := unsafe.Slice((*byte)(unsafe.Pointer(&ctx)), unsafe.Sizeof(ctx))
	out := make([]byte, len(in))
	ret, err := m.objs.Matchtest.Run(&ebpf.RunOptions{Context: in, ContextOut: out})
	if err != nil || ret != 0 {
		t.Fatalf("running the test program: %v (%d)", err, ret)
	}
	res := (*matchtestTestctx)(unsafe.Pointer(&out[0]))
	if res.Rule == 0 {
		return ""
	}
	return m.c.Rules[res.Rule]
}

// TestMatchLikeSupervisor: on every path and kind of the supervisor's own
// tables, the BPF code refuses exactly what the supervisor refuses by
// name, under the mandatory patterns and user globs of each shape the
// compiler takes, absolute ones included.
func TestMatchLikeSupervisor(t *testing.T) {
	patterns := append(policy.MandatoryGlobs(false), "**/.env", "**/*.pem", "**/secrets/**", "/w/secrets/**", "/w/only", "**/.config/app/token",
		"/w/p/**/.npmrc", "/w/p/**/*.crt", "/w/p/**/cache/**", "/w/q/**/.yarnrc")
	kr := supervisor.KernelRulesOf(patterns...)
	pats, texts := kr.Patterns()
	var rules []Rule
	for i := range pats {
		rules = append(rules, Rule{pats[i], texts[i]})
	}
	const hostDev = 0x801 // 8:1
	mounts := []Mount{{Dev: hostDev, Root: "/", Point: "/"}}
	c, err := Compile(rules, mounts, []string{"/w"})
	if err != nil {
		t.Fatal(err)
	}
	m := newMatcher(t, c)
	dev := KernelDev(hostDev)
	paths := []string{
		"/w/a/b/c/d/e/f/.bashrc", "/w/.bashrc.bak", "/w/.bashrc", "/.bashrc",
		"/w/r/.git/hooks", "/w/r/.git/hooks/pre-commit", "/w/r/.git/hooks/pre-commit.sample", "/w/r/.git/hooks/sub/x.sample",
		"/w/r/.git/hooks/.sample", "/w/r/.git/hooksx/a", "/w/r/x.git/hooks/a",
		"/w/r/.git/config", "/w/r/.git/config.lock", "/w/r/not-git/config", "/w/r/.git/commondir", "/w/commondir",
		"/w/r/.git/modules", "/w/r/.git/modules/m/config", "/w/r/.git/worktrees", "/w/r/.git/config.worktree",
		"/w/x/.env", "/w/x/.env.example", "/w/x/my.env", "/.env",
		"/w/k/server.pem", "/w/k/a/b/server.pem", "/w/k/server.pem.txt", "/w/k/pem", "/w/k/.pem",
		"/w/secrets", "/w/secrets/a/b", "/w/secretsx", "/x/w/secrets", "/x/w/only", "/w/only", "/w/only/x",
		"/w/p/secrets", "/w/p/secrets/x", "/w/p/secret",
		"/w/.vscode", "/w/.vscode/settings.json", "/w/a/.vscode/tasks.json", "/w/.vscodex/a",
		"/w/.claude", "/w/.claude/settings.json", "/w/.claude/commands/x.md", "/w/.claude/other.json",
		"/w/.hg", "/w/.hg/hgrc", "/w/.config", "/w/.config/git", "/w/.config/git/config", "/w/.config/gitx",
		"/w/.config/app", "/w/.config/app/token", "/w/.ssh/authorized_keys", "/w/.ssh",
		"/w/sub/.git", "/w/plain/file.txt", "/w/a/b/c",
		"/w/p/.npmrc", "/w/p/a/b/.npmrc", "/w/.npmrc", "/w/x/p/.npmrc", "/w/q/.yarnrc", "/w/qq/.yarnrc", "/w/q/.npmrc", "/w/p/x.crt", "/w/x.crt",
		"/w/p/a/cache", "/w/p/a/cache/f", "/w/cache/f", "/w/p", "/w/p/cache", "/w", "/w/q",
	}
	denied, allowed := 0, 0
	for _, p := range paths {
		for kind := range kinds {
			want := kr.Denied(p, kind)
			got := m.judge(t, p, kind, dev)
			if (got == "") != (want == "") {
				t.Errorf("%s as %s: BPF %q, supervisor %q", p, kind, got, want)
			}
			if want == "" {
				allowed++
			} else {
				denied++
			}
		}
	}
	if denied < 100 || allowed < 50 {
		t.Errorf("the table refuses %d and allows %d cases: too few of one to tell", denied, allowed)
	}
	// The git directory rule the kernel path takes instead of looking
	// into the directory (stricter than the supervisor).
	for _, p := range []string{"/w/bare/HEAD", "/w/bare/objects", "/w/bare/refs"} {
		if got := m.judge(t, p, supervisor.KindFile, dev); got != BareRule {
			t.Errorf("%s: %q, want the bare git directory rule", p, got)
		}
	}
	for _, p := range []string{"/w/r/.git/HEAD", "/w/r/.git/refs/heads/main", "/w/r/.git/refs/remotes/origin/HEAD", "/w/r/.git/objects/ab/cd", "/w/r/.git/logs/HEAD"} {
		if got := m.judge(t, p, supervisor.KindFile, dev); got != "" {
			t.Errorf("%s: refused by %q", p, got)
		}
	}
	// Another device: the absolute rules are anchored to their file
	// system; the any-depth ones apply everywhere.
	if got := m.judge(t, "/w/secrets/a", supervisor.KindFile, dev+1); got != "" && !strings.Contains(got, "**/secrets/**") {
		t.Errorf("/w/secrets/a on another device: %q", got)
	}
	if got := m.judge(t, "/w/only", supervisor.KindFile, dev+1); got != "" {
		t.Errorf("/w/only on another device: %q", got)
	}
}

// TestMatchDeep: a chain longer than the walk is refused where a rule
// needs the whole chain, never passed unchecked.
func TestMatchDeep(t *testing.T) {
	c, err := Compile([]Rule{{"**/.vscode/**", "vscode"}, {"**/.bashrc", "bashrc"}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := newMatcher(t, c)
	deep := "/" + strings.Repeat("d/", 40) + "file"
	if got := m.judge(t, deep, supervisor.KindFile, 1); got != DeepRule {
		t.Errorf("a chain of 41 components: %q, want %q", got, DeepRule)
	}
	c, err = Compile([]Rule{{"**/.bashrc", "bashrc"}, {"**/*.pem", "pem"}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	m = newMatcher(t, c)
	if got := m.judge(t, deep, supervisor.KindFile, 1); got != "" {
		t.Errorf("suffix rules alone need no whole chain: %q", got)
	}
	if got := m.judge(t, "/"+strings.Repeat("d/", 40)+".bashrc", supervisor.KindFile, 1); got != "bashrc" {
		t.Errorf("a deep .bashrc: %q", got)
	}
}

// BenchmarkLoadMatcher: what loading (verifying) the matching code costs.
func BenchmarkLoadMatcher(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	for b.Loop() {
		spec, err := loadMatchtest()
		if err != nil {
			b.Fatal(err)
		}
		var objs matchtestObjects
		if err := spec.LoadAndAssign(&objs, nil); err != nil {
			b.Fatal(err)
		}
		objs.Close()
	}
}
