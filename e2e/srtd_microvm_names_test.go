package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/srt-go/srt/client"
	"github.com/srt-go/srt/microvm"
	"github.com/srt-go/srt/port"
)

// The creation-time name rules in a microvm session's guest (issue 20):
// the session's compiled policy runs in the guest (microvm.Config.Names),
// so a writable bind launches under the standard launch policy and the
// native attack table is refused from inside the VM. The guest is busybox
// only, so the table is a shell script: one line per attempt, "R" for
// refused and "W" for a write that landed.

// vmAttackLib is the attack table's helpers: try runs a command and
// prints its verdict; the ways a name comes into being are functions of
// the target (through-symlink: a link in the depth's directory to the
// target, written through).
const vmAttackLib = `
n=0
try() { way=$1; t=$2; shift 2; n=$((n+1)); if ( "$@" ) 2>/dev/null; then echo "W $way $t"; else echo "R $way $t"; fi; }
ok() { way=$1; t=$2; shift 2; if ( "$@" ) 2>/dev/null; then echo "OK $way $t"; else echo "FAIL $way $t"; fi; }
w_create() { echo x > "$1"; }
w_append() { echo x >> "$1"; }
w_mkdir() { mkdir "$1"; }
w_rename() { echo x > "$2" && mv "$2" "$1"; }
w_link() { echo x > "$2" && ln "$2" "$1"; }
w_symlink() { echo x > "$2" && ln -s "$2" "$1"; }
w_through() { ln -s "${1#"$2"}" "${2}lnk$n" && echo x > "${2}lnk$n"; }
attack() { t=$1; s=$2; p=$3
	try create "$t" w_create "$t"
	try mkdir "$t" w_mkdir "$t"
	try rename-to "$t" w_rename "$t" "$s.r"
	try link "$t" w_link "$t" "$s.l"
	try symlink "$t" w_symlink "$t" "$s.s"
	try through-symlink "$t" w_through "$t" "$p"
	rm -f "${p}lnk$n"
}
`

// vmAttackTable is session 1: every rule class (the launch policy's name
// globs, mandatory names, a new nested repository's hooks and config) ×
// every way busybox makes a name × depths 0, 1, 5, 12; a directory
// renamed into place as a new repository's .git, a new repository's
// hooks moved away; the host repository's hook and config; the review's
// .vscode/tasks.json. Then it leaves for session 2 a link to the host
// repository's hooks and .git, a staged hooks directory, a new nested
// repository, and a link to a host directory outside the bind.
const vmAttackTable = vmAttackLib + `
for depth in 0 1 5 12; do
	pre=""; i=0
	while [ $i -lt $depth ]; do pre="${pre}d$i/"; i=$((i+1)); done
	[ -n "$pre" ] && mkdir -p "$pre"
	ok new-repo-hooks-dir "${pre}r/.git/hooks" mkdir -p "${pre}r/.git/hooks"
	for t in .env x.key y.pem .bashrc .vscode r/.git/hooks/pre-commit r/.git/config; do
		attack "$pre$t" "${pre}stage" "$pre"
	done
	mkdir -p "${pre}tmpd/hooks" && echo '#!/bin/sh' > "${pre}tmpd/hooks/post-checkout"
	try rename-dir "${pre}q/.git" sh -c "mkdir -p '${pre}q' && mv '${pre}tmpd' '${pre}q/.git'"
	try rename-from "${pre}r/.git/hooks" mv "${pre}r/.git/hooks" "${pre}r/.git/h2"
	ok hook-sample "${pre}r/.git/hooks/pre-commit.sample" w_create "${pre}r/.git/hooks/pre-commit.sample"
done
try host-repo-hook .git/hooks/pre-commit w_create .git/hooks/pre-commit
try host-repo-config .git/config w_append .git/config
try vscode-tasks .vscode/tasks.json sh -c 'mkdir -p .vscode && echo "{}" > .vscode/tasks.json'
try nested-bashrc sub/.bashrc sh -c 'mkdir -p sub && echo pwned >> sub/.bashrc'
ok plain-file ok.txt w_create ok.txt
ok prepare hl ln -s .git/hooks hl
ok prepare lgit ln -s .git lgit
ok prepare stage sh -c 'mkdir -p stage/hooks && printf "#!/bin/sh\nexit 1\n" > stage/hooks/pre-commit'
ok prepare n mkdir -p n/.git/hooks
ok prepare out ln -s "$VICTIM" out
echo "attempts $n"
`

// vmAttackSecondSession is session 2, on the same directory: the links,
// the staged hooks and the nested repository session 1 left, each used to
// put a hook or config where git runs it.
const vmAttackSecondSession = vmAttackLib + `
try via-link-hooks hl/pre-commit w_create hl/pre-commit
try via-link-git lgit/hooks/post-checkout w_create lgit/hooks/post-checkout
try via-link-config lgit/config w_append lgit/config
try staged-hooks-dir n2/.git sh -c 'mkdir -p n2 && mv stage n2/.git'
try staged-hook n/.git/hooks/pre-commit mv stage/hooks/pre-commit n/.git/hooks/pre-commit
try nested-hook n/.git/hooks/pre-commit w_create n/.git/hooks/pre-commit
try nested-hooks-away n/.git/hooks mv n/.git/hooks n/.git/h2
try moved-repo-hook n-moved/.git/hooks/pre-commit sh -c 'mv n n-moved; echo x > n-moved/.git/hooks/pre-commit'
try bashrc-again d0/.bashrc w_create d0/.bashrc
echo x > out/pwned 2>/dev/null
echo "attempts $n"
`

// vmAttackLines parses a table's output: the attempts (way and target)
// that landed, those that were refused, and the checks that failed.
func vmAttackLines(t *testing.T, out string) (landed, refused, failed []string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		switch f[0] {
		case "W":
			landed = append(landed, f[1]+" "+f[2])
		case "R":
			refused = append(refused, f[1]+" "+f[2])
		case "FAIL":
			failed = append(failed, f[1]+" "+f[2])
		}
	}
	m := regexp.MustCompile(`attempts (\d+)`).FindStringSubmatch(out)
	if m == nil || fmt.Sprint(len(landed)+len(refused)) != m[1] {
		t.Fatalf("the table did not run to its end (%d verdicts):\n%s", len(landed)+len(refused), out)
	}
	return landed, refused, failed
}

// deniedOnHostVM is every path under dir a rule of the attack tables
// protects: the launch policy's globs, the mandatory names, hooks that
// are not samples, and the nested repositories' configs.
func deniedOnHostVM(dir string) []string {
	pats := []string{"**/.env", "**/*.key", "**/*.pem", "**/.bashrc", "**/.vscode", "**/q/.git", "n2/.git",
		"**/r/.git/config", "n/.git/config", "**/.git/hooks/*", "**/.git/h2"}
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		for _, pat := range pats {
			if ok, _ := doublestar.Match(pat, rel); ok && !strings.HasSuffix(rel, ".sample") {
				out = append(out, rel)
				break
			}
		}
		return nil
	})
	return out
}

// TestSrtdMicroVMNames: a microvm session with a writable bind launches
// under srtd's standard launch policy (.env, *.key, *.pem: no 422, no
// placeholder on the host); from inside the VM, the attack table is
// refused at every depth while ordinary files, a new repository's hooks
// directory and hook samples are made; the refusals are the session's
// violation events; a second session on the same directory cannot use
// the links, staged directories and nested repository the first left;
// the host tree holds no protected name afterwards, and the host's git
// commit runs no hook. As root and as the unprivileged user (srtd, and
// so QEMU, running as that user).
func TestSrtdMicroVMNames(t *testing.T) {
	requireQEMU(t)
	forEachUser(t, testSrtdMicroVMNames)
}

// startSrtdVMAs is startSrtdVM as u: for the unprivileged user, with a
// cache directory of its own that links the kernels of root's (the guest
// kernel is prepared once, as root, by scripts/setup.sh) and holds the
// initramfs that user's srtd builds.
func startSrtdVMAs(t *testing.T, u *account, args ...string) *srtd {
	t.Helper()
	if u.direct {
		return startSrtdVM(t, nil, args...)
	}
	cache := filepath.Join(u.workDir(t), "cache")
	u.mkdir(t, cache)
	for _, pat := range []string{"debian-*", "mini-current"} {
		m, _ := filepath.Glob(filepath.Join(microvm.DefaultCacheDir(), pat))
		for _, k := range m {
			if err := os.Symlink(k, filepath.Join(cache, filepath.Base(k))); err != nil {
				t.Fatal(err)
			}
		}
	}
	prefix := []string{"setpriv", "--reuid", fmt.Sprint(u.uid), "--regid", fmt.Sprint(u.gid), "--init-groups", "--"}
	env := []string{"PATH=" + cleanPATH, "HOME=" + u.home, "USER=" + u.name, "SHELL=/bin/bash", "SRT_MICROVM_CACHE=" + cache}
	return launchSrtd(t, buildSrtdStatic(t), u.workDir(t), prefix, env, 120*time.Second, args...)
}

func testSrtdMicroVMNames(t *testing.T, u *account) {
	ctx := context.Background()
	d := startSrtdVMAs(t, u) // the standard launch policy
	if p := awaitMicroVMProbe(t, d); !p.MicroVMAvailable {
		t.Fatalf("probe %+v; want microvmAvailable\n%s", p, d.stderr())
	}
	ws, victim := u.workDir(t), u.workDir(t)
	git := func(args ...string) error {
		c := u.command(ctx, ws, []string{"GIT_CONFIG_NOSYSTEM=1"}, append([]string{"git", "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid"}, args...)...)
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %w\n%s", args, err, out)
		}
		return nil
	}
	if err := git("init", "-q"); err != nil {
		t.Fatal(err)
	}
	config, _ := os.ReadFile(filepath.Join(ws, ".git/config"))
	before := listTree(ws)
	spec := func(id string) port.Spec {
		return port.Spec{SessionID: id, WorkspaceID: "w", Mode: port.ModeChat,
			BindMounts: []port.BindMount{{HostPath: ws, GuestPath: "/ws"}}, GuestWorkdir: "/ws"}
	}
	run := func(t *testing.T, id, script string) (string, []port.Event) {
		t.Helper()
		events, err := d.c.Exec(ctx, id, client.ExecRequest{Argv: []string{"sh", "-c", script}, Env: map[string]string{"VICTIM": victim}})
		if err != nil {
			t.Fatal(err)
		}
		var out string
		var viol []port.Event
		for ev, err := range events {
			if err != nil {
				t.Fatal(err)
			}
			switch ev.Type {
			case port.EventStdout, port.EventStderr:
				out += string(ev.Data)
			case port.EventViolation:
				viol = append(viol, ev)
			}
		}
		return out, viol
	}

	t.Run("first-session", func(t *testing.T) {
		h, err := d.c.Launch(ctx, spec("n1"), port.BackendMicroVM)
		if err != nil {
			t.Fatalf("launch microvm, writable bind, standard launch policy: %v; want it launched\n%s", err, d.stderr())
		}
		defer d.c.Destroy(ctx, "n1")
		if h.Details["names"] != true {
			t.Errorf("details do not say the guest runs the name rules: %v", h.Details)
		}
		if _, ok := h.Details["unpinnedMandatoryDenies"]; ok {
			t.Errorf("details still list unpinned names: %v", h.Details)
		}
		if now := listTree(ws); !slices.Equal(now, before) {
			t.Errorf("the host tree changed at launch (placeholders?): %v; want %v", now, before)
		}
		out, viol := run(t, "n1", vmAttackTable)
		landed, refused, failed := vmAttackLines(t, out)
		t.Logf("%d attempts refused", len(refused))
		for _, l := range landed {
			t.Errorf("ESCAPE: landed from the VM: %s", l)
		}
		for _, f := range failed {
			t.Errorf("an allowed write was refused: %s", f)
		}
		saw := false
		for _, ev := range viol {
			v := ev.Violation
			saw = saw || v != nil && v.Action == "file-write-create" && strings.HasSuffix(v.Target, "/.env")
		}
		if !saw {
			t.Errorf("no file-write-create violation event for .env among %d events", len(viol))
		}
	})

	t.Run("second-session", func(t *testing.T) {
		if _, err := d.c.Launch(ctx, spec("n2"), port.BackendMicroVM); err != nil {
			t.Fatalf("launch the second session: %v\n%s", err, d.stderr())
		}
		defer d.c.Destroy(ctx, "n2")
		out, _ := run(t, "n2", vmAttackSecondSession)
		landed, _, _ := vmAttackLines(t, out)
		for _, l := range landed {
			t.Errorf("ESCAPE: landed from the second session: %s", l)
		}
	})

	if got := deniedOnHostVM(ws); len(got) > 0 {
		t.Errorf("ESCAPE: protected names on the host: %v", got)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".git/config")); string(b) != string(config) {
		t.Errorf("ESCAPE: the host repository's config changed:\n%s", b)
	}
	if ents, _ := os.ReadDir(victim); len(ents) > 0 {
		t.Errorf("ESCAPE: the directory outside the bind was written: %v", ents)
	}
	for _, p := range []string{"ok.txt", "r/.git/hooks/pre-commit.sample", "d0/d1/d2/d3/d4/r/.git/hooks"} {
		if _, err := os.Stat(filepath.Join(ws, p)); err != nil {
			t.Errorf("an allowed write did not reach the host: %v", err)
		}
	}
	// The guest's files are the host user's: QEMU ran as u.
	if fi, err := os.Stat(filepath.Join(ws, "ok.txt")); err == nil && int(fi.Sys().(*syscall.Stat_t).Uid) != u.uid {
		t.Errorf("ok.txt is owned by uid %d; want %d (srtd ran as %s)", fi.Sys().(*syscall.Stat_t).Uid, u.uid, u.name)
	}
	if err := git("commit", "-q", "--allow-empty", "-m", "after the sessions"); err != nil {
		t.Errorf("the host's commit after the sessions: %v", err)
	}
}
