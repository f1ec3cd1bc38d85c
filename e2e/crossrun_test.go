package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/srt-go/srt/client"
	"github.com/srt-go/srt/port"
)

// Cross-run attacks (issue 13): nothing a sandboxed run leaves behind may
// widen a later run. Every case prepares in run N, inside the sandbox as
// the attacker (a symlink where a write root or a default write path was,
// a renamed parent of a denied file, a name a deny rule covers, a write
// root made unlistable), attacks in run N+1 — a second srt run, or for
// the terminal case a second srtd native terminal — and then checks the
// HOST: the victim directory (outside every write root, owned by the
// user, writable by it) must be unchanged and no secret may have been
// printed or moved to where a later run can read it.

const (
	// crossSecret is the content of every denied file. No script holds
	// it, so its presence in a run's output means a denied file was read.
	crossSecret = "CROSSRUN-SECRET-5d1c"
	// crossOriginal is the content of a write-denied file.
	crossOriginal = "CROSSRUN-ORIGINAL"
)

// crossMode is how a case's runs are made.
type crossMode string

const (
	crossRulesOn  crossMode = "rules-on"      // srt, creation-time rules at their default (on)
	crossRulesOff crossMode = "rules-off"     // srt, "enforceNamesAtCreation": false
	crossTerminal crossMode = "srtd-terminal" // srtd native terminals (the terminal profile)
)

// crossEnv is one case's host layout, for one user and one mode:
//
//	W/proj    the working directory of every run
//	W/home    $HOME of every run (never the real home)
//	W/victim  outside every write root; owned by the user and writable
//	          by it, so that only the sandbox stands between a run and it
type crossEnv struct {
	u                     *account
	mode                  crossMode
	w, proj, home, victim string
	// privTmp, when set, is the directory bound on /tmp in a private
	// mount namespace for every srt run (the /tmp/claude cases).
	privTmp     string
	mountScript string
	// d is the srtd whose native terminals make the runs (crossTerminal).
	d *srtd
	// pwnedName is a unique file name the terminal case tries to write
	// in the host's /; removed in cleanup if it appears.
	pwnedName string
	runs      int
}

// crossResult is one run: stdout, stderr, exit status.
type crossResult struct {
	out, err string
	code     int
}

func (r crossResult) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
}

// env is the environment every run gets beyond the harness's clean one.
func (c *crossEnv) env() []string {
	return []string{"HOME=" + c.home, "VICTIM=" + c.victim, "W=" + c.w, "PWNED_NAME=" + c.pwnedName}
}

// settings wraps the members of "filesystem" into a settings document,
// turning the creation-time rules off in crossRulesOff.
func (c *crossEnv) settings(fsMembers string) string {
	if c.mode == crossRulesOff {
		fsMembers += `, "enforceNamesAtCreation": false`
	}
	return `{"filesystem": {` + fsMembers + `}}`
}

// run makes one run of script as the case's user in W/proj.
func (c *crossEnv) run(t *testing.T, fsMembers, script string) crossResult {
	t.Helper()
	c.runs++
	switch {
	case c.mode == crossTerminal:
		return c.runTerminal(t, script)
	case c.privTmp != "":
		return c.runPrivateTmp(t, fsMembers, script)
	}
	out, errOut, code := srtRun{u: c.u, dir: c.proj, settings: c.settings(fsMembers), env: c.env(), args: []string{"sh", "-c", script}}.run(t)
	return crossResult{out, errOut, code}
}

// runPrivateTmp is run inside a private mount namespace (made as root)
// whose /tmp is c.privTmp: /tmp is shared by the whole machine, so the
// other user's /tmp/claude is made there. srt's binary directory and the
// work directories, which live in the real /tmp, are bound back at their
// paths inside it.
func (c *crossEnv) runPrivateTmp(t *testing.T, fsMembers, script string) crossResult {
	t.Helper()
	r := srtRun{u: c.u, dir: c.proj, settings: c.settings(fsMembers), env: c.env(), args: []string{"sh", "-c", script}}
	argv := r.argv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	inner := c.u.command(ctx, c.proj, c.env(), argv...)
	args := append([]string{"--mount", "--propagation", "private", "--", "sh", "-c", c.mountScript, "sh", c.proj, inner.Path}, inner.Args[1:]...)
	cmd := exec.CommandContext(ctx, "unshare", args...)
	cmd.Env = inner.Env
	cmd.Dir = c.proj
	cmd.WaitDelay = 5 * time.Second
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("running srt in a private mount namespace: %v\nstderr: %s", err, e.String())
	}
	if ctx.Err() != nil {
		t.Fatalf("srt in a private mount namespace did not finish within 60s; stderr: %s", e.String())
	}
	if strings.Contains(e.String(), "crossrun-mount:") {
		t.Fatalf("could not make the private /tmp: %s", e.String())
	}
	return crossResult{o.String(), e.String(), code}
}

// setupPrivateTmp makes W/privtmp (root's, mode 1777, like /tmp) and the
// mount script runPrivateTmp runs before srt.
func (c *crossEnv) setupPrivateTmp(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a private /tmp needs root (unshare --mount)")
	}
	c.privTmp = filepath.Join(c.w, "privtmp")
	if err := os.Mkdir(c.privTmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(c.privTmp, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	s := "set -e; fail() { echo \"crossrun-mount: $*\" >&2; exit 124; }; "
	for _, d := range []string{filepath.Dir(srtBin), baseDir} {
		rel, err := filepath.Rel("/tmp", d)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue // not hidden by the bind on /tmp
		}
		mp := filepath.Join(c.privTmp, rel)
		if err := os.MkdirAll(mp, 0o755); err != nil {
			t.Fatal(err)
		}
		s += fmt.Sprintf("mount --bind %s %s || fail bind %s; ", q(d), q(mp), q(d))
	}
	s += fmt.Sprintf(`mount --rbind %s /tmp || fail rbind /tmp; cd "$1"; shift; exec "$@"`, q(c.privTmp))
	c.mountScript = s
}

// runTerminal runs script in a new native terminal of c.d: the shell is
// typed "sh FILE; exit $?" (the script itself is never echoed, so the
// markers and secrets checked in the output come from the run).
func (c *crossEnv) runTerminal(t *testing.T, script string) crossResult {
	t.Helper()
	f := filepath.Join(c.w, fmt.Sprintf("terminal-%d.sh", c.runs))
	if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	env := map[string]string{"PS1": "$ "}
	for _, kv := range c.env() {
		if k, v, _ := strings.Cut(kv, "="); k != "HOME" {
			env[k] = v
		}
	}
	term, err := c.d.c.OpenTerminal(ctx, client.TerminalRequest{Backend: port.BackendNative, Cwd: c.proj, Env: env})
	if err != nil {
		t.Fatalf("opening a native terminal: %v\nsrtd: %s", err, c.d.stderr())
	}
	defer term.Close()
	if term.Info.Backend != port.BackendNative {
		t.Fatalf("terminal backend %q; want native", term.Info.Backend)
	}
	var out bytes.Buffer
	copied := make(chan struct{})
	go func() { io.Copy(&out, term); close(copied) }()
	if _, err := term.Write([]byte("sh " + f + "; exit $?\n")); err != nil {
		t.Fatal(err)
	}
	code, err := term.Wait()
	select {
	case <-copied:
	case <-time.After(10 * time.Second):
		t.Fatal("terminal output did not end after the exit")
	}
	if err != nil {
		t.Fatalf("terminal: %v (exit %d)\noutput:\n%s\nsrtd: %s", err, code, out.String(), c.d.stderr())
	}
	return crossResult{out: out.String(), code: code}
}

// victimUnchanged fails, naming what escaped, when dir differs from
// before (after up to 5s for a guardian's cleanup of placeholders).
func victimUnchanged(t *testing.T, dir string, before map[string]entry, what string) {
	t.Helper()
	if d := settledDiff(t, dir, before, 5*time.Second); d != "" {
		t.Errorf("ESCAPE: %s: %s, outside every write root, changed on the host:\n%s", what, dir, d)
	}
}

// noSecret fails when a run printed crossSecret.
func noSecret(t *testing.T, r crossResult, what string) {
	t.Helper()
	if strings.Contains(r.out, crossSecret) || strings.Contains(r.err, crossSecret) {
		t.Errorf("ESCAPE: %s: the run printed the denied content %q", what, crossSecret)
	}
}

// absent fails when rel (under W) exists on the host.
func (c *crossEnv) absent(t *testing.T, rel, what string) {
	t.Helper()
	if fi, err := os.Lstat(filepath.Join(c.w, rel)); err == nil {
		t.Errorf("ESCAPE: %s: W/%s exists on the host (%v)", what, rel, fi.Mode())
	}
}

// content fails when the host file rel (under W) does not hold want.
func (c *crossEnv) content(t *testing.T, rel, want, what string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.w, rel))
	if err != nil || string(b) != want {
		t.Errorf("ESCAPE: %s: host W/%s = %q (%v), want %q", what, rel, b, err, want)
	}
}

// isSymlink reports whether rel (under W) is a symbolic link on the host.
func (c *crossEnv) isSymlink(rel string) bool {
	fi, err := os.Lstat(filepath.Join(c.w, rel))
	return err == nil && fi.Mode()&os.ModeSymlink != 0
}

// has reports whether r's stdout has the line line.
func (r crossResult) has(line string) bool {
	return strings.Contains("\n"+r.out, "\n"+line+"\n")
}

// crossCase is one attack.
type crossCase struct {
	name string
	// modes the case runs in; nil means crossRulesOn and crossRulesOff.
	modes []crossMode
	// fs are the members of the settings' "filesystem" object.
	fs string
	// setup prepares the host (as root, files owned by the user).
	setup func(t *testing.T, c *crossEnv)
	// prepare is run N; "" for none. When prepared is nil, run N must
	// print PREPARED, or the attack was not set up and the case fails —
	// unless blockable: then a run N that cannot set the attack up (the
	// sandbox already refuses it in this mode) ends the case there, after
	// the host checks.
	prepare   string
	blockable bool
	prepared  func(t *testing.T, c *crossEnv, r crossResult)
	// between is what the host does between the runs.
	between func(t *testing.T, c *crossEnv)
	// attack is run N+1; check inspects it and the host.
	attack string
	check  func(t *testing.T, c *crossEnv, r crossResult)
	// runs is how many times attack is made (default 1).
	runs int
}

// otherUser runs argv as nobody (another local user).
func otherUser(t *testing.T, argv ...string) {
	t.Helper()
	a := append([]string{"--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"}, argv...)
	if out, err := exec.Command("setpriv", a...).CombinedOutput(); err != nil {
		t.Fatalf("as nobody: %q: %v: %s", argv, err, out)
	}
}

// passesThrough fails when srt did not run the command and pass its exit
// status (want) through, e.g. when it refused to start (125).
func passesThrough(t *testing.T, r crossResult, want int, why string) {
	t.Helper()
	if r.code != want {
		t.Errorf("srt exit %d, want the command's %d (%s)", r.code, want, why)
	}
}

var crossCases = []crossCase{
	// 1. A default write path (~/.npm/_logs, ~/.claude/debug) replaced
	// with a symlink by a run that may write its parent: the next run
	// must not make the link's target writable.
	{
		name: "default-path-symlink-npm-logs",
		fs:   `"allowWrite": [".", "~/.npm"]`,
		setup: func(t *testing.T, c *crossEnv) {
			c.u.mkdir(t, filepath.Join(c.home, ".npm/_logs"))
		},
		prepare: `rm -rf ~/.npm/_logs && ln -s "$VICTIM" ~/.npm/_logs && echo PREPARED`,
		attack: `echo pwned > ~/.npm/_logs/pwned; echo "via-link=$?"
echo pwned > "$VICTIM/pwned"; echo "direct=$?"
exit 3`,
		check: func(t *testing.T, c *crossEnv, r crossResult) {
			passesThrough(t, r, 3, "a default write path that became a symlink is skipped, not a reason to refuse")
			if r.has("via-link=0") || r.has("direct=0") {
				t.Errorf("ESCAPE: run N+1 wrote into the target of ~/.npm/_logs, a symlink run N left pointing at W/victim")
			}
		},
	},
	{
		name: "default-path-symlink-claude-debug",
		fs:   `"allowWrite": [".", "~/.claude"]`,
		setup: func(t *testing.T, c *crossEnv) {
			c.u.mkdir(t, filepath.Join(c.home, ".claude/debug"))
		},
		prepare: `rm -rf ~/.claude/debug && ln -s "$VICTIM" ~/.claude/debug && echo PREPARED`,
		attack: `echo pwned > ~/.claude/debug/pwned; echo "via-link=$?"
echo pwned > "$VICTIM/pwned"; echo "direct=$?"
exit 3`,
		check: func(t *testing.T, c *crossEnv, r crossResult) {
			passesThrough(t, r, 3, "a default write path that became a symlink is skipped, not a reason to refuse")
			if r.has("via-link=0") || r.has("direct=0") {
				t.Errorf("ESCAPE: run N+1 wrote into the target of ~/.claude/debug, a symlink run N left pointing at W/victim")
			}
		},
	},

	// 2. /tmp/claude made by another local user (nobody): a symlink to
	// the victim, or a directory of its own. srt must not make it a
	// write root for this user's run.
	{
		name: "tmp-claude-other-user-symlink",
		fs:   `"allowWrite": ["."]`,
		setup: func(t *testing.T, c *crossEnv) {
			c.setupPrivateTmp(t)
			os.Chmod(c.victim, 0o777)
			otherUser(t, "ln", "-s", c.victim, filepath.Join(c.privTmp, "claude"))
		},
		attack: `echo pwned > /tmp/claude/pwned; echo "via-link=$?"
echo pwned > "$VICTIM/pwned"; echo "direct=$?"
ls -la /tmp/; exit 3`,
		check: func(t *testing.T, c *crossEnv, r crossResult) {
			if r.code != 3 && r.code != 125 {
				t.Errorf("srt exit %d: want the command's 3 (or a refusal, 125)", r.code)
			}
			if !c.isSymlink("privtmp/claude") {
				t.Fatalf("the private /tmp/claude is no longer nobody's symlink; the case did not run as designed")
			}
			if r.has("via-link=0") || r.has("direct=0") {
				t.Errorf("ESCAPE: the run wrote into W/victim through /tmp/claude, a symlink another user (nobody) made")
			}
		},
	},
	{
		name: "tmp-claude-other-user-dir",
		fs:   `"allowWrite": ["."]`,
		setup: func(t *testing.T, c *crossEnv) {
			c.setupPrivateTmp(t)
			d := filepath.Join(c.privTmp, "claude")
			otherUser(t, "mkdir", d)
			otherUser(t, "chmod", "0777", d)
		},
		attack: `echo pwned > /tmp/claude/pwned; echo "write=$?"
mkdir /tmp/claude/d; echo "mkdir=$?"
exit 3`,
		check: func(t *testing.T, c *crossEnv, r crossResult) {
			if r.code != 3 && r.code != 125 {
				t.Errorf("srt exit %d: want the command's 3 (or a refusal, 125)", r.code)
			}
			if r.has("write=0") || r.has("mkdir=0") {
				t.Errorf("ESCAPE: the run wrote into /tmp/claude, a directory another user (nobody) owns")
			}
			c.absent(t, "privtmp/claude/pwned", "a file written into nobody's /tmp/claude")
			c.absent(t, "privtmp/claude/d", "a directory made in nobody's /tmp/claude")
		},
	},

	// The control: a /tmp/claude the user made is a default write path
	// (as in the reference), so the two cases above cannot pass merely
	// because srt does not see the private /tmp.
	{
		name: "tmp-claude-own-dir-stays-writable",
		fs:   `"allowWrite": ["."]`,
		setup: func(t *testing.T, c *crossEnv) {
			c.setupPrivateTmp(t)
			c.u.mkdir(t, filepath.Join(c.privTmp, "claude"))
			os.Chown(c.privTmp, 0, 0)
		},
		attack: `echo mine > /tmp/claude/mine; echo "write=$?"; exit 3`,
		check: func(t *testing.T, c *crossEnv, r crossResult) {
			passesThrough(t, r, 3, "a /tmp/claude the user owns is an ordinary default write path")
			c.content(t, "privtmp/claude/mine", "mine\n", "not an escape but a lost default: the user's own /tmp/claude is not writable, so the /tmp/claude cases prove nothing")
		},
	},

	// 3. A glob write root (**/node_modules) that a run creates as a
	// symlink inside its own write root: the next run's match is
	// skipped, not followed.
	{
		name: "glob-allowwrite-symlink",
		fs:   `"allowWrite": ["./build", "**/node_modules"]`,
		setup: func(t *testing.T, c *crossEnv) {
			c.u.mkdir(t, filepath.Join(c.proj, "build"))
		},
		prepare: `ln -s "$VICTIM" build/node_modules && echo PREPARED`,
		attack: `echo pwned > build/node_modules/pwned; echo "via-link=$?"
echo pwned > "$VICTIM/pwned"; echo "direct=$?"
exit 3`,
		check: func(t *testing.T, c *crossEnv, r crossResult) {
			passesThrough(t, r, 3, "a glob match that is a symlink is skipped, not a reason to refuse")
			if r.has("via-link=0") || r.has("direct=0") {
				t.Errorf("ESCAPE: run N+1 wrote into W/victim through build/node_modules, a symlink run N made that matched allowWrite **/node_modules")
			}
		},
	},

	// 4. An explicit allowWrite entry a run replaced with a symlink: the
	// user named that path, so srt refuses to start and says why.
	{
		name: "explicit-entry-symlink",
		fs:   `"allowWrite": ["./ws", "./ws/cache"]`,
		setup: func(t *testing.T, c *crossEnv) {
			c.u.mkdir(t, filepath.Join(c.proj, "ws/cache"))
		},
		// With the creation-time rules off, the placeholders srt mounts at
		// the top of the write root ws/cache make it impossible to remove.
		blockable: true,
		prepare:   `rm -rf ws/cache && ln -s "$VICTIM" ws/cache && echo PREPARED`,
		attack: `touch ws/marker
echo pwned > ws/cache/pwned; echo "via-link=$?"
echo pwned > "$VICTIM/pwned"; echo "direct=$?"`,
		check: func(t *testing.T, c *crossEnv, r crossResult) {
			if r.code != 125 {
				t.Errorf("srt exit %d, want 125: an allowWrite entry (./ws/cache) that a run turned into a symlink must make srt refuse", r.code)
			} else if !strings.Contains(r.err, "ws/cache") {
				t.Errorf("srt refused without naming the link ws/cache:")
			}
			c.absent(t, "proj/ws/marker", "the command ran although srt should have refused to start")
			if r.has("via-link=0") || r.has("direct=0") {
				t.Errorf("ESCAPE: run N+1 wrote into W/victim through ws/cache, an allowWrite entry run N replaced with a symlink")
			}
		},
	},

	// 5. Renaming a parent of a denied file: the next run resolves the
	// rule at the old name and finds nothing to deny there.
	{
		name: "deny-ancestor-rename-denyread",
		fs:   `"allowWrite": ["."], "denyRead": ["./config/secrets.env"]`,
		setup: func(t *testing.T, c *crossEnv) {
			c.u.write(t, filepath.Join(c.proj, "config/secrets.env"), crossSecret)
		},
		prepare: `mv config/secrets.env config/x; echo "mv-file=$?"
mv config config2; echo "mv-dir=$?"
exit 0`,
		prepared: func(t *testing.T, c *crossEnv, r crossResult) {
			if r.has("mv-file=0") {
				t.Errorf("ESCAPE (run N): renamed the denyRead file config/secrets.env to config/x")
			}
			if r.has("mv-dir=0") {
				t.Errorf("ESCAPE (run N): renamed config/, the parent of denyRead ./config/secrets.env, to config2/")
			}
			c.content(t, "proj/config/secrets.env", crossSecret, "after run N, the denied file must still be at its denied name")
		},
		attack: `cat config/secrets.env config2/secrets.env config/x config2/x 2>/dev/null; exit 0`,
		check: func(t *testing.T, c *crossEnv, r crossResult) {
			noSecret(t, r, "run N+1 read ./config/secrets.env (denyRead) under the name run N moved it to")
			c.content(t, "proj/config/secrets.env", crossSecret, "the denied file")
		},
	},
	{
		name: "deny-ancestor-rename-two-levels",
		fs:   `"allowWrite": ["."], "denyRead": ["./a/b/secret"]`,
		setup: func(t *testing.T, c *crossEnv) {
			c.u.write(t, filepath.Join(c.proj, "a/b/secret"), crossSecret)
		},
		prepare: `mv a/b a/b2; echo "mv-parent=$?"
mv a a2; echo "mv-grandparent=$?"
exit 0`,
		prepared: func(t *testing.T, c *crossEnv, r crossResult) {
			if r.has("mv-parent=0") {
				t.Errorf("ESCAPE (run N): renamed a/b, the parent of denyRead ./a/b/secret")
			}
			if r.has("mv-grandparent=0") {
				t.Errorf("ESCAPE (run N): renamed a, the grandparent of denyRead ./a/b/secret")
			}
			c.content(t, "proj/a/b/secret", crossSecret, "after run N, the denied file must still be at its denied name")
		},
		attack: `cat a/b/secret a/b2/secret a2/b/secret a2/b2/secret 2>/dev/null; exit 0`,
		check: func(t *testing.T, c *crossEnv, r crossResult) {
			noSecret(t, r, "run N+1 read ./a/b/secret (denyRead) under the name run N moved a parent to")
			c.content(t, "proj/a/b/secret", crossSecret, "the denied file")
		},
	},
	{
		name: "deny-ancestor-rename-denywrite",
		fs:   `"allowWrite": ["."], "denyWrite": ["./conf/app.ini"]`,
		setup: func(t *testing.T, c *crossEnv) {
			c.u.write(t, filepath.Join(c.proj, "conf/app.ini"), crossOriginal)
		},
		prepare: `mv conf conf2; echo "mv-dir=$?"
exit 0`,
		prepared: func(t *testing.T, c *crossEnv, r crossResult) {
			if r.has("mv-dir=0") {
				t.Errorf("ESCAPE (run N): renamed conf/, the parent of denyWrite ./conf/app.ini")
			}
		},
		attack: `for f in conf/app.ini conf2/app.ini; do echo pwned > "$f"; echo "$f=$?"; done; exit 0`,
		check: func(t *testing.T, c *crossEnv, r crossResult) {
			c.content(t, "proj/conf/app.ini", crossOriginal, "the denyWrite file ./conf/app.ini (run N+1 wrote it, or run N moved it away)")
			if b, err := os.ReadFile(filepath.Join(c.proj, "conf2/app.ini")); err == nil && strings.Contains(string(b), "pwned") {
				t.Errorf("ESCAPE: run N+1 wrote the denyWrite file ./conf/app.ini under the name conf2/app.ini that run N moved it to")
			}
		},
	},

	// 6. A denied literal that does not exist yet: the sandbox must not
	// be able to create that name (a symlink out of the rule, or a file),
	// because the host later puts the secret there.
	{
		name: "deny-missing-literal-symlink",
		fs:   `"allowWrite": ["."], "denyRead": ["./late/secret.env"]`,
		setup: func(t *testing.T, c *crossEnv) {
			c.u.mkdir(t, filepath.Join(c.proj, "late"))
		},
		prepare: `ln -s ../leak late/secret.env; echo "symlink=$?"; exit 0`,
		prepared: func(t *testing.T, c *crossEnv, r crossResult) {
			if r.has("symlink=0") {
				t.Errorf("ESCAPE (run N): created the denyRead name late/secret.env as a symlink to ../leak")
			}
			c.absent(t, "proj/late/secret.env", "after run N, the denied name must not exist")
		},
		between: crossHostWritesSecret,
		attack:  `cat late/secret.env; cat leak; exit 0`,
		check: func(t *testing.T, c *crossEnv, r crossResult) {
			noSecret(t, r, "run N+1 read the secret the host wrote to late/secret.env (denyRead)")
			c.absent(t, "proj/leak", "the host's write of late/secret.env followed run N's symlink to ./leak, which no rule denies")
		},
	},
	{
		name: "deny-missing-literal-create",
		fs:   `"allowWrite": ["."], "denyRead": ["./late/secret.env"]`,
		setup: func(t *testing.T, c *crossEnv) {
			c.u.mkdir(t, filepath.Join(c.proj, "late"))
		},
		prepare: `echo x > late/secret.env; echo "create=$?"; exit 0`,
		prepared: func(t *testing.T, c *crossEnv, r crossResult) {
			if r.has("create=0") {
				t.Errorf("ESCAPE (run N): created the denyRead name late/secret.env")
			}
			c.absent(t, "proj/late/secret.env", "after run N, the denied name must not exist")
		},
		between: crossHostWritesSecret,
		attack:  `cat late/secret.env; exit 0`,
		check: func(t *testing.T, c *crossEnv, r crossResult) {
			noSecret(t, r, "run N+1 read the secret the host wrote to late/secret.env (denyRead)")
		},
	},

	// 7. A denyRead glob meets a symlinked directory: linkdir/secret.txt
	// matches **/secret*, and its real file (outside the working
	// directory) is the same file under every spelling. Two runs.
	{
		name: "denyread-glob-through-symlinked-dir",
		fs:   `"allowWrite": ["."], "denyRead": ["**/secret*"]`,
		setup: func(t *testing.T, c *crossEnv) {
			c.u.write(t, filepath.Join(c.w, "shared/secret.txt"), crossSecret)
			c.u.write(t, filepath.Join(c.proj, "linkdir"), "->../shared")
		},
		attack: `cat linkdir/secret.txt; cat ../shared/secret.txt; cat "$W/shared/secret.txt"; exit 0`,
		runs:   2,
		check: func(t *testing.T, c *crossEnv, r crossResult) {
			noSecret(t, r, "read linkdir/secret.txt (denyRead **/secret*) through the symlinked directory or at its real path ../shared/secret.txt")
			c.content(t, "shared/secret.txt", crossSecret, "the denied file")
		},
	},

	// 8. A write root made unlistable (chmod 0300) so that the next run's
	// walk cannot find the protected names in it: srt refuses, or the
	// names stay protected.
	{
		name: "unlistable-write-root",
		fs:   `"allowWrite": ["."]`,
		setup: func(t *testing.T, c *crossEnv) {
			crossGitInit(t, c, c.proj)
			t.Cleanup(func() { os.Chmod(c.proj, 0o755) })
		},
		prepare: `chmod 0300 . && echo PREPARED`,
		attack: `mkdir -p .git/hooks; echo 'echo pwned' > .git/hooks/pre-commit; echo "hook=$?"
echo x >> .bashrc; echo "bashrc=$?"
exit 3`,
		check: func(t *testing.T, c *crossEnv, r crossResult) {
			if r.code != 125 && r.code != 3 {
				t.Errorf("srt exit %d: want a refusal (125) or the command's 3", r.code)
			}
			c.absent(t, "proj/.git/hooks/pre-commit", "a git hook planted in the working directory run N made unlistable")
			c.absent(t, "proj/.bashrc", "a .bashrc planted in the working directory run N made unlistable")
		},
	},
	{
		name: "unlistable-subdir-repo",
		fs:   `"allowWrite": ["."]`,
		setup: func(t *testing.T, c *crossEnv) {
			sub := filepath.Join(c.proj, "sub")
			c.u.mkdir(t, sub)
			crossGitInit(t, c, sub)
			t.Cleanup(func() { os.Chmod(sub, 0o755) })
		},
		prepare: `chmod 0300 sub && echo PREPARED`,
		attack:  `echo 'echo pwned' > sub/.git/hooks/pre-commit; echo "hook=$?"; exit 3`,
		check: func(t *testing.T, c *crossEnv, r crossResult) {
			if r.code != 125 && r.code != 3 {
				t.Errorf("srt exit %d: want a refusal (125) or the command's 3", r.code)
			}
			c.absent(t, "proj/sub/.git/hooks/pre-commit", "a git hook planted in sub/, a repository run N made unlistable")
		},
	},

	// 8b. A directory made unsearchable (0600: listable, not searchable)
	// hides what is behind it from srt, not from the next run, which
	// chmods it back (found by an adversarial review).
	{
		name: "unsearchable-dir-hides-deny",
		fs:   `"allowWrite": ["."], "denyRead": ["./late/secret.env", "**/*.pem"]`,
		setup: func(t *testing.T, c *crossEnv) {
			c.u.write(t, filepath.Join(c.proj, "late/secret.env"), crossSecret)
			c.u.write(t, filepath.Join(c.proj, "sub/x.pem"), crossSecret)
			t.Cleanup(func() { os.Chmod(filepath.Join(c.proj, "late"), 0o755); os.Chmod(filepath.Join(c.proj, "sub"), 0o755) })
		},
		prepare: `chmod 0600 late && chmod 0300 sub && echo PREPARED`,
		attack:  `chmod 700 late sub; cat late/secret.env sub/x.pem; exit 3`,
		check: func(t *testing.T, c *crossEnv, r crossResult) {
			noSecret(t, r, "a denyRead file behind a directory run N made unsearchable")
		},
	},
	{
		name: "unsearchable-dir-hides-symlinked-config",
		fs:   `"allowWrite": ["~"]`,
		setup: func(t *testing.T, c *crossEnv) {
			c.u.write(t, filepath.Join(c.home, "dotfiles/git/config"), crossOriginal)
			c.u.write(t, filepath.Join(c.home, ".config/git"), "->../dotfiles/git")
			t.Cleanup(func() { os.Chmod(filepath.Join(c.home, ".config"), 0o755) })
		},
		prepare:   `chmod 0600 ~/.config && echo PREPARED`,
		blockable: true, // rules off: srt refuses a protected link in a writable directory
		attack:    `chmod 700 ~/.config; printf '[core]\n\tfsmonitor = echo pwned\n' >> ~/.config/git/config; exit 3`,
		check: func(t *testing.T, c *crossEnv, r crossResult) {
			c.content(t, "home/dotfiles/git/config", crossOriginal, "git's config written through ~/.config/git, a link behind a directory run N made unsearchable")
		},
	},
	// 8c. A hard link made while nothing denied the file: once the file
	// is denied, the other name must not reach it.
	{
		name:    "hardlink-left-behind",
		fs:      `"allowWrite": ["."], "denyRead": ["**/.env"]`,
		setup:   func(t *testing.T, c *crossEnv) { c.u.write(t, filepath.Join(c.proj, "notes.md"), "notes\n") },
		prepare: `ln notes.md .env && echo PREPARED`,
		between: func(t *testing.T, c *crossEnv) {
			if err := os.WriteFile(filepath.Join(c.proj, ".env"), []byte(crossSecret), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		blockable: true,
		attack:    `cat notes.md; exit 3`,
		check: func(t *testing.T, c *crossEnv, r crossResult) {
			noSecret(t, r, "a denyRead file read through a hard link an earlier run made")
		},
	},
	// 8d. srtd's token, read by a CLI sandbox, would let it ask srtd for
	// an unsandboxed command (backend none).
	{
		name:  "srtd-token-readable",
		modes: []crossMode{crossRulesOn},
		fs:    `"allowWrite": ["."]`,
		setup: func(t *testing.T, c *crossEnv) {
			c.u.write(t, filepath.Join(c.home, ".srtd/token"), crossSecret)
		},
		attack: `cat ~/.srtd/token; ln -s /tmp ~/.srtd2 2>/dev/null; exit 3`,
		check: func(t *testing.T, c *crossEnv, r crossResult) {
			noSecret(t, r, "srtd's token read from a CLI sandbox")
		},
	},

	// 9. $HOME writable with a denied directory in it (what srtd's
	// terminals rely on): renaming the denied directory or its parent
	// must not carry the secret to a readable name.
	{
		name: "home-deny-ancestor",
		fs:   `"allowWrite": ["~"], "denyRead": ["~/.config/gh"]`,
		setup: func(t *testing.T, c *crossEnv) {
			c.u.write(t, filepath.Join(c.home, ".config/gh/hosts.yml"), crossSecret)
		},
		prepare: `mv ~/.config/gh ~/.config/gh2; echo "mv-gh=$?"
mv ~/.config ~/.c2; echo "mv-config=$?"
exit 0`,
		prepared: func(t *testing.T, c *crossEnv, r crossResult) {
			if r.has("mv-gh=0") {
				t.Errorf("ESCAPE (run N): renamed the denyRead directory ~/.config/gh")
			}
			if r.has("mv-config=0") {
				t.Errorf("ESCAPE (run N): renamed ~/.config, the parent of denyRead ~/.config/gh")
			}
			c.content(t, "home/.config/gh/hosts.yml", crossSecret, "after run N, the denied directory must still be at ~/.config/gh")
		},
		attack: `cat ~/.config/gh/hosts.yml ~/.config/gh2/hosts.yml ~/.c2/gh/hosts.yml ~/.c2/gh2/hosts.yml 2>/dev/null
find ~ -name hosts.yml -exec cat {} + 2>/dev/null; exit 0`,
		check: func(t *testing.T, c *crossEnv, r crossResult) {
			noSecret(t, r, "run N+1 read ~/.config/gh/hosts.yml (denyRead) under a name run N moved it to")
			c.content(t, "home/.config/gh/hosts.yml", crossSecret, "the denied file")
		},
	},

	// 10. The same through srtd: terminal 1 replaces the default write
	// paths with symlinks (to / and to the victim) and renames the parent
	// of the denied ~/.config/gh; terminal 2 must neither write through
	// them nor read the token.
	{
		name:  "srtd-terminals",
		modes: []crossMode{crossTerminal},
		setup: func(t *testing.T, c *crossEnv) {
			c.u.mkdir(t, filepath.Join(c.home, ".npm/_logs"))
			c.u.mkdir(t, filepath.Join(c.home, ".claude/debug"))
			c.u.write(t, filepath.Join(c.home, ".config/gh/hosts.yml"), crossSecret)
			c.pwnedName = fmt.Sprintf("srt-e2e-crossrun-pwned-%d-%d", os.Getpid(), time.Now().UnixNano())
			t.Cleanup(func() { os.Remove("/" + c.pwnedName) })
			c.d = startSrtdHome(t, c.u, c.home)
		},
		prepare: `rm -rf ~/.npm/_logs && ln -s / ~/.npm/_logs; echo "link-npm=$?"
rm -rf ~/.claude/debug && ln -s "$VICTIM" ~/.claude/debug; echo "link-claude=$?"
mv ~/.config/gh ~/.config/gh2; echo "mv-gh=$?"
mv ~/.config ~/.c2; echo "mv-config=$?"
exit 0`,
		prepared: func(t *testing.T, c *crossEnv, r crossResult) {
			if !c.isSymlink("home/.npm/_logs") || !c.isSymlink("home/.claude/debug") {
				// Refusing it is protection too; terminal 2 still tries.
				t.Logf("terminal 1 could not replace ~/.npm/_logs and ~/.claude/debug with symlinks")
			}
			if r.has("mv-gh=0") {
				t.Errorf("ESCAPE (terminal 1): renamed the denied directory ~/.config/gh")
			}
			if r.has("mv-config=0") {
				t.Errorf("ESCAPE (terminal 1): renamed ~/.config, the parent of the denied ~/.config/gh")
			}
		},
		attack: `echo pwned > ~/.npm/_logs/"$PWNED_NAME"; echo "via-npm=$?"
echo pwned > "/$PWNED_NAME"; echo "root=$?"
echo pwned > ~/.claude/debug/pwned; echo "via-claude=$?"
echo pwned > "$VICTIM/pwned"; echo "direct=$?"
cat ~/.config/gh/hosts.yml ~/.config/gh2/hosts.yml ~/.c2/gh/hosts.yml ~/.c2/gh2/hosts.yml 2>/dev/null
find ~ -name hosts.yml -exec cat {} + 2>/dev/null
exit 3`,
		check: func(t *testing.T, c *crossEnv, r crossResult) {
			if _, err := os.Lstat("/" + c.pwnedName); err == nil {
				t.Errorf("ESCAPE: terminal 2 wrote /%s on the host through ~/.npm/_logs, a symlink to / terminal 1 left", c.pwnedName)
			}
			if r.has("via-claude=0") || r.has("direct=0") {
				t.Errorf("ESCAPE: terminal 2 wrote into W/victim through ~/.claude/debug, a symlink terminal 1 left")
			}
			noSecret(t, r, "terminal 2 read ~/.config/gh/hosts.yml (denied by the terminal profile) after terminal 1 renamed ~/.config")
			if r.code != 3 {
				t.Errorf("terminal 2 exit %d, want 3 (the shell's)", r.code)
			}
		},
	},
}

// crossHostWritesSecret is the host putting the secret at
// late/secret.env as a trusted program would: by name, following links.
func crossHostWritesSecret(t *testing.T, c *crossEnv) {
	t.Helper()
	p := filepath.Join(c.proj, "late/secret.env")
	if err := os.WriteFile(p, []byte(crossSecret), 0o644); err != nil {
		t.Fatalf("the host writing %s: %v", p, err)
	}
	os.Chown(p, c.u.uid, c.u.gid)
}

// crossGitInit makes dir a git repository owned by the case's user.
func crossGitInit(t *testing.T, c *crossEnv, dir string) {
	t.Helper()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init %s: %v: %s", dir, err, out)
	}
	filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err == nil {
			os.Lchown(p, c.u.uid, c.u.gid)
		}
		return nil
	})
}

// TestCrossRun: each case prepares in run N and attacks in run N+1,
// as root and as the unprivileged user, with the creation-time rules on
// and off (or through srtd's native terminals), then checks the host.
func TestCrossRun(t *testing.T) {
	forEachUser(t, func(t *testing.T, u *account) {
		for _, tc := range crossCases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				modes := tc.modes
				if modes == nil {
					modes = []crossMode{crossRulesOn, crossRulesOff}
				}
				for _, mode := range modes {
					t.Run(string(mode), func(t *testing.T) {
						crossRun(t, u, mode, tc)
					})
				}
			})
		}
	})
}

// crossRun runs one case in one mode.
func crossRun(t *testing.T, u *account, mode crossMode, tc crossCase) {
	w := u.workDir(t)
	c := &crossEnv{u: u, mode: mode, w: w, proj: filepath.Join(w, "proj"), home: filepath.Join(w, "home"), victim: filepath.Join(w, "victim")}
	u.mkdir(t, c.proj)
	u.mkdir(t, c.home)
	u.write(t, filepath.Join(c.victim, "keep.txt"), "victim\n")
	if tc.setup != nil {
		tc.setup(t, c)
	}
	victim := snapshot(t, c.victim)

	if tc.prepare != "" {
		r := c.run(t, tc.fs, tc.prepare)
		t.Logf("run N:")
		switch {
		case tc.prepared != nil:
			tc.prepared(t, c, r)
		case r.code == 0 && r.has("PREPARED"):
		case tc.blockable:
			t.Logf("run N could not set the attack up: refused already in this mode")
			victimUnchanged(t, c.victim, victim, "the victim directory")
			return
		default:
			t.Fatalf("run N could not set the attack up (the sandbox should allow it)")
		}
	}
	if tc.between != nil {
		tc.between(t, c)
	}
	runs := max(tc.runs, 1)
	for i := range runs {
		r := c.run(t, tc.fs, tc.attack)
		t.Logf("run N+%d:\n%s", i+1, r)
		tc.check(t, c, r)
	}
	victimUnchanged(t, c.victim, victim, "the victim directory")
}
