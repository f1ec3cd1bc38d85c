package e2e

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/srt-go/srt/policy"
)

// The creation-time name rules inside the microvm guest (issue 20): srt
// --backend microvm shares the working directory writable and the guest
// runs the native supervisor, so the native attack tables
// (mandatory_test.go's attackScript over policy.MandatoryGlobs' names,
// creation_test.go's creationSettings and creationMatrix) must come out the same in the VM.
// Batched: each VM boot runs one generated script printing one line per
// attempt; the host tree is checked afterwards. Two boots per user: the
// attacks, then a second run through what the first one planted.

// microvmNameDepths are the depths of the mandatory names attacked.
var microvmNameDepths = []int{0, 1, 5, 12}

// depthPrefix is the directory prefix of depth n: "d0/d1/…/".
func depthPrefix(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "d%d/", i)
	}
	return b.String()
}

// microvmEnv is the environment srt needs to boot a VM as u: the kernel
// choice of this run (SRT_MICROVM_KERNEL) and, for the unprivileged user,
// a cache directory of its own that links root's prepared kernels (the
// cache must be writable: the initramfs is built there).
func microvmEnv(t *testing.T, u *account) []string {
	t.Helper()
	var env []string
	if k := os.Getenv("SRT_MICROVM_KERNEL"); k != "" {
		env = append(env, "SRT_MICROVM_KERNEL="+k)
	}
	if u.uid == 0 {
		return env
	}
	cache := filepath.Join(u.workDir(t), "cache")
	u.mkdir(t, cache)
	entries, _ := os.ReadDir("/var/cache/srt-microvm")
	for _, e := range entries {
		if e.IsDir() || e.Type()&fs.ModeSymlink != 0 {
			if strings.HasPrefix(e.Name(), "debian-") || strings.HasPrefix(e.Name(), "mini") {
				os.Symlink(filepath.Join("/var/cache/srt-microvm", e.Name()), filepath.Join(cache, e.Name()))
			}
		}
	}
	return append(env, "SRT_MICROVM_CACHE="+cache)
}

// requireMicroVM fails (or, with SRT_E2E_ALLOW_SKIP=1, skips) a test on a
// host without QEMU.
func requireMicroVM(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		if os.Getenv("SRT_E2E_ALLOW_SKIP") == "1" {
			t.Skip("qemu-system-x86_64 missing")
		}
		t.Fatalf("qemu-system-x86_64 missing (apt-get install qemu-system-x86)")
	}
}

// microvmMandatory are the mandatory names attacked in the VM, each as a
// path (a protected directory through a file in it), from the policy's own
// list (policy.MandatoryGlobs: one home), the git directory's redirections
// included.
func microvmMandatory() []string {
	var out []string
	for _, g := range policy.MandatoryGlobs(false) {
		p := strings.TrimPrefix(g, "**/")
		switch {
		case p == ".git/hooks/**":
			p = ".git/hooks/pre-commit"
		case strings.HasSuffix(p, "/**"):
			p = strings.TrimSuffix(p, "/**") + "/x"
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// microvmExisting are the protected names that exist before the first
// run, below e/a/ (the top holds the missing names of depth 0): the guest
// must not change them either. Each is a DenyWrite of the policy inside a
// writable share, so QEMU's own view binds it read-only and pins its
// directories too (microvm.Config.Names). The git redirections are left
// out: a commondir or worktrees entry would make the walk follow it.
func microvmExisting() []string {
	var out []string
	for _, n := range microvmMandatory() {
		if strings.HasPrefix(n, ".git/") && n != ".git/hooks/pre-commit" && n != ".git/config" {
			continue
		}
		out = append(out, "e/a/"+n)
	}
	return out
}

// microvmAttacks is the first run's script: the mandatory names at every
// depth (missing) and at depths 0 and 1 (existing), the denyWrite globs
// of creationSettings, the ways a name can come into being (rename onto a
// protected name, rename of a directory holding one, symlink swap, hard
// link, mkdir then rename), a new nested repository, the native
// creationMatrix and real work when the guest has python3 and git, and
// last what the second run will try to use. Each attempt prints one
// "label:refused" or "label:ALLOWED" line, each block headed "== PATH".
func microvmAttacks() string {
	var b strings.Builder
	b.WriteString("cd \"$(dirname \"$0\")\" 2>/dev/null; set +e\n")
	for _, d := range microvmNameDepths {
		for _, n := range microvmMandatory() {
			p := depthPrefix(d) + n
			fmt.Fprintf(&b, "echo '== %s'\n%s", p, attackScript(p, false))
		}
	}
	for _, p := range microvmExisting() {
		fmt.Fprintf(&b, "echo '== %s'\n%s", p, attackScript(p, true))
	}
	b.WriteString(`try() { n=$1; shift; if ( "$@" ) >/dev/null 2>&1; then echo "$n:ALLOWED"; else echo "$n:refused"; fi; }
echo '== classes'
echo stage > stage
try "secrets" sh -c "mkdir -p secrets && echo x > secrets/k"
for pre in "" d0/ d0/d1/d2/d3/d4/ d0/d1/d2/d3/d4/d5/d6/d7/d8/d9/d10/d11/; do
  [ -z "$pre" ] || mkdir -p "$pre"
  try "glob-env-create:$pre" sh -c "echo x > '${pre}.env'"
  try "glob-env-rename:$pre" sh -c "cp stage '${pre}st' && mv '${pre}st' '${pre}.env'; r=\$?; rm -f '${pre}st'; exit \$r"
  try "glob-key-create:$pre" sh -c "echo x > '${pre}id.key'"
  try "glob-key-link:$pre" ln stage "${pre}id.key"
  try "glob-key-symlink:$pre" ln -s stage "${pre}x.key"
  try "hardlink-bashrc:$pre" ln stage "${pre}.bashrc"
  try "symlink-bashrc:$pre" ln -s stage "${pre}.bashrc"
  try "symlink-swap:$pre" sh -c "ln -s .bashrc '${pre}lnk' 2>/dev/null || ln -sf .bashrc '${pre}lnk'; echo x > '${pre}lnk'; r=\$?; rm -f '${pre}lnk'; exit \$r"
  try "mkdir-rename-vscode:$pre" sh -c "mkdir '${pre}tv' && echo '{}' > '${pre}tv/tasks.json' && mv '${pre}tv' '${pre}.vscode'; r=\$?; rm -rf '${pre}tv'; exit \$r"
  try "rename-dir-git:$pre" sh -c "mkdir -p '${pre}tg/hooks' '${pre}q' && echo evil > '${pre}tg/hooks/pre-commit' && mv '${pre}tg' '${pre}q/.git'; r=\$?; rm -rf '${pre}tg'; exit \$r"
done
echo '== nested'
mkdir -p sub/x/.git/hooks 2>/dev/null
try "nested-hook" sh -c 'echo evil > sub/x/.git/hooks/pre-commit'
try "nested-config" sh -c 'echo "[core]" > sub/x/.git/config'
if command -v git >/dev/null 2>&1; then
  # The guest runs as root and a share shows its host owner: the guest
  # makes git accept the unprivileged user's tree (gitSafeEnv).
  mkdir -p nested/y && git init -q nested/y >/dev/null 2>&1
  try "git-nested-hook" sh -c 'echo evil > nested/y/.git/hooks/pre-commit'
  try "git-nested-sample" sh -c 'cp nested/y/.git/hooks/pre-commit.sample nested/y/.git/hooks/pre-commit'
  try "git-nested-hookspath" sh -c 'git -C nested/y config core.hooksPath /tmp'
  echo '== real'
  mkdir work && cd work && git init -q && echo a > f && git add f && git -c user.email=a@b -c user.name=n commit -qm one && echo REAL-GIT-OK
  cd ..
else
  echo 'NO-GIT'
fi
if command -v python3 >/dev/null 2>&1; then
  python3 -c 'import os; os.makedirs("py/out", exist_ok=True); open("py/out/f.txt","w").write("py")' && echo REAL-PY-OK
  mkdir -p matrix && cd matrix && python3 ../matrix.py > ../matrix.out 2>&1; echo "MATRIX-EXIT $?"; cd ..
else
  echo 'NO-PYTHON'
fi
echo '== plant'
mkdir -p r/.git/hooks && ln -s r/.git/hooks hk && ln -s .bashrc bl && mkdir -p deep/a && ln -s deep/a dl && mkdir -p gd/hooks && echo evil > gd/hooks/pre-commit && mkdir -p mv1/sub && mv mv1 mv2 && echo PLANTED
echo ok > ok.txt
`)
	return b.String()
}

// microvmSecondRun goes through what the first run planted: a link to a
// new repository's hooks directory, a dangling link to .bashrc, a link to
// a directory, a directory of hooks to rename into place, a renamed
// directory.
const microvmSecondRun = `try() { n=$1; shift; if ( "$@" ) >/dev/null 2>&1; then echo "$n:ALLOWED"; else echo "$n:refused"; fi; }
echo '== second'
try "via-hooks-link" sh -c 'echo evil > hk/pre-commit'
try "via-dangling-link" sh -c 'echo x > bl'
try "via-dir-link" sh -c 'echo x > dl/.bashrc'
try "rename-planted-git" sh -c 'mkdir -p x && mv gd x/.git'
try "renamed-dir" sh -c 'echo x > mv2/sub/.bashrc'
try "relink-hooks" sh -c 'rm -f hk && ln -s r/.git hk && echo evil > hk/hooks/post-checkout'
echo ok2
`

// microvmResults parses a run's output into "PATH label" → verdict.
func microvmResults(out string) map[string]string {
	res := map[string]string{}
	block := ""
	for _, l := range strings.Split(out, "\n") {
		if h, ok := strings.CutPrefix(l, "== "); ok {
			block = h
			continue
		}
		i := strings.LastIndex(l, ":")
		if i < 0 || (l[i+1:] != "refused" && l[i+1:] != "ALLOWED") {
			continue
		}
		res[block+" "+l[:i]] = l[i+1:]
	}
	return res
}

// microvmMatrixBad returns the lines of creationMatrix's output that are
// failures in the VM: every LANDED line, and every unexpected errno but
// O_TMPFILE's EOPNOTSUPP (9p has no O_TMPFILE: nothing is created, so
// nothing can be linked in).
func microvmMatrixBad(out string) []string {
	var bad []string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "LANDED"):
			bad = append(bad, l)
		case strings.HasPrefix(l, "ERRNO") && !(strings.HasPrefix(l, "ERRNO tmpfile-link ") && strings.Contains(l, "[Errno 95]")):
			bad = append(bad, l)
		}
	}
	return bad
}

// microvmProtectedOnHost walks dir for every name the first two runs must
// not have made: the mandatory names, the denyWrite globs, anything in a
// hooks directory but a sample.
func microvmProtectedOnHost(t *testing.T, dir string, existing map[string]bool) []string {
	t.Helper()
	// The rules' own patterns, a protected directory by what is in it (a
	// new repository's hooks directory may exist, empty).
	pats := []string{"**/.env", "**/*.key", "secrets", "**/q/.git", "x/.git"}
	for _, g := range policy.MandatoryGlobs(false) {
		if p, ok := strings.CutSuffix(g, "/**"); ok {
			g = p + "/*"
		}
		pats = append(pats, g)
	}
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if existing[rel] || strings.HasPrefix(rel, "work/.git/") || strings.HasPrefix(rel, "nested/y/.git/") && !strings.Contains(rel, "/hooks/") {
			return nil
		}
		if strings.HasSuffix(rel, ".sample") {
			return nil
		}
		for _, pat := range pats {
			if ok, _ := doublestar.Match(pat, rel); ok {
				out = append(out, rel)
				break
			}
		}
		return nil
	})
	return out
}

// TestMicroVMNames runs the native attack tables inside the VM through
// the CLI, as root and as the unprivileged user: every attack refused,
// the host tree checked afterwards, a second run through what the first
// planted refused too, and real work (git, python3) done when the guest
// has those tools.
func TestMicroVMNames(t *testing.T) {
	requireSandbox(t)
	requireMicroVM(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: the microvm kernel cache is root's")
	}
	forEachUser(t, func(t *testing.T, u *account) {
		t.Parallel() // one vCPU each: the two users' VMs share the two cores
		env := microvmEnv(t, u)
		dir := u.workDir(t)
		existing := map[string]bool{}
		for _, p := range microvmExisting() {
			u.write(t, filepath.Join(dir, p), "orig\n")
			for q := p; q != "."; q = filepath.Dir(q) {
				existing[q] = true
			}
		}
		u.write(t, filepath.Join(dir, "e/a/b/other"), "other\n")
		t.Logf("%d mandatory names at depths %v, %d existing", len(microvmMandatory()), microvmNameDepths, len(microvmExisting()))
		script := filepath.Join(dir, "attack.sh")
		u.write(t, script, microvmAttacks())
		// The guest gets none of srt's environment: the matrix is a file.
		u.write(t, filepath.Join(dir, "matrix.py"), creationMatrix)
		// The matrix runs in matrix/, away from the attacks above: its
		// secrets/** rule must follow it there.
		settings := strings.Replace(creationSettings, `"secrets/**"]`, `"secrets/**", "matrix/secrets/**"]`, 1)
		r := srtRun{u: u, dir: dir, settings: settings, env: env,
			pre: []string{"--backend", "microvm"}, args: []string{"sh", script}, timeout: 600e9}
		out, errOut, code := r.run(t)
		if code != 0 || !strings.Contains(out, "PLANTED") {
			t.Fatalf("first run: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		res := microvmResults(out)
		// 5 lines per missing name, 10 per existing one below a
		// directory (attackScript), 10 per depth of the classes and
		// secrets/, 2 nested.
		want := len(microvmNameDepths)*len(microvmMandatory())*5 + len(microvmExisting())*10 + 4*10 + 1 + 2
		if strings.Contains(out, "REAL-GIT-OK") {
			want += 3
		}
		if len(res) != want {
			t.Errorf("%d results, want %d:\n%s", len(res), want, out)
		}
		for k, v := range res {
			// A missing name's top directory does not exist: its
			// rename fails whatever the rules (mandatory_test.go).
			if v != "refused" && !strings.HasSuffix(k, " rename-top") {
				t.Errorf("ALLOWED in the VM: %s", k)
			}
		}
		if strings.Contains(out, "NO-GIT") || strings.Contains(out, "NO-PYTHON") {
			t.Logf("the guest lacks host tools (microvm.Config.System not merged?): real work and the python matrix not run")
		} else {
			if !strings.Contains(out, "REAL-GIT-OK") || !strings.Contains(out, "REAL-PY-OK") {
				t.Errorf("real work failed in the VM:\n%s\nstderr:\n%s", out, errOut)
			}
			m, _ := os.ReadFile(filepath.Join(dir, "matrix.out"))
			if bad := microvmMatrixBad(string(m)); len(bad) > 0 || !strings.Contains(string(m), "attempts 25") {
				t.Errorf("the native creation matrix in the VM: %q\n%s", bad, m)
			}
			if _, err := os.Stat(filepath.Join(dir, "py/out/f.txt")); err != nil {
				t.Errorf("python3's file is not on the host: %v", err)
			}
		}
		for p := range existing {
			if st, err := os.Lstat(filepath.Join(dir, p)); err != nil {
				t.Errorf("existing %s: %v", p, err)
			} else if st.Mode().IsRegular() {
				if b, _ := os.ReadFile(filepath.Join(dir, p)); string(b) != "orig\n" {
					t.Errorf("existing %s changed: %q", p, b)
				}
			}
		}
		if b, err := os.ReadFile(filepath.Join(dir, "ok.txt")); err != nil || string(b) != "ok\n" {
			t.Errorf("an ordinary file written in the VM is not on the host: %q, %v", b, err)
		}
		if got := microvmProtectedOnHost(t, dir, existing); len(got) > 0 {
			t.Errorf("protected names on the host after the first run: %v", got)
		}

		r.args = []string{"sh", "-c", microvmSecondRun}
		out, errOut, code = r.run(t)
		if code != 0 || !strings.Contains(out, "ok2") {
			t.Fatalf("second run: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		res = microvmResults(out)
		if len(res) != 6 {
			t.Errorf("%d results, want 6:\n%s", len(res), out)
		}
		for k, v := range res {
			if v != "refused" {
				t.Errorf("ALLOWED in the second run: %s", k)
			}
		}
		if got := microvmProtectedOnHost(t, dir, existing); len(got) > 0 {
			t.Errorf("protected names on the host after the second run: %v", got)
		}
	})
}
