// Package cmdlinetest holds the checks each program's tests run on its
// cmdline.Program: the shells accept its completion scripts and complete
// its command lines, and its man page file is current and renders.
package cmdlinetest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/srt-go/srt/internal/cmdline"
)

// syntaxCheck is each shell's "parse only" command line.
var syntaxCheck = map[string][]string{
	"bash": {"bash", "-n"},
	"zsh":  {"zsh", "-n"},
	"fish": {"fish", "-n"},
}

// CheckCompletionSyntax parses p's script for every shell with that
// shell, skipping a shell that is not installed (scripts/setup.sh
// installs them all, so CI runs every check).
func CheckCompletionSyntax(t *testing.T, p *cmdline.Program) {
	t.Helper()
	for _, sh := range cmdline.Shells {
		t.Run(sh, func(t *testing.T) {
			script, err := p.Completion(sh)
			if err != nil {
				t.Fatal(err)
			}
			argv := syntaxCheck[sh]
			if _, err := exec.LookPath(argv[0]); err != nil {
				t.Skipf("%s is not installed (scripts/setup.sh installs it)", argv[0])
			}
			f := filepath.Join(t.TempDir(), p.Name+"."+sh)
			if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(argv[0], append(argv[1:], f)...).CombinedOutput()
			if err != nil || len(out) > 0 {
				t.Fatalf("%s rejects the script: %v\n%s\n%s", sh, err, out, script)
			}
		})
	}
	if _, err := p.Completion("tcsh"); err == nil {
		t.Error("Completion(tcsh) did not fail")
	}
}

// CheckMan compares file with p's man page, or rewrites file when
// update, and renders it with man -l (or groff) when installed: a roff
// warning fails the test.
func CheckMan(t *testing.T, p *cmdline.Program, file string, update bool) {
	t.Helper()
	page := p.Man()
	if update {
		if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != page {
		t.Fatalf("%s is stale; run: go generate ./cmd/%s", file, p.Name)
	}
	var cmd *exec.Cmd
	switch {
	case lookPath("groff"):
		cmd = exec.Command("groff", "-man", "-Tutf8", "-ww", "-z", file)
	default:
		t.Skip("groff is not installed (scripts/setup.sh installs groff-base)")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("%s does not render cleanly: %v\n%s", file, err, stderr.String())
	}
	if lookPath("man") {
		out, err := exec.Command("man", "-l", "-P", "cat", file).Output()
		if err != nil {
			t.Fatalf("man -l %s: %v", file, err)
		}
		for _, o := range p.Options {
			if o.Long != "" && !strings.Contains(string(out), "--"+o.Long) {
				t.Errorf("man -l %s: no --%s in the rendered page", file, o.Long)
			}
		}
	}
}

// BashComplete returns what p's bash completion offers when words are
// on the line, the last under the cursor, as bash calls it (COMP_WORDS,
// COMP_CWORD, then the function complete -p names), without
// bash-completion loaded. It skips the test when bash is not installed.
func BashComplete(t *testing.T, p *cmdline.Program, words []string) []string {
	t.Helper()
	if !lookPath("bash") {
		t.Skip("bash is not installed")
	}
	script, err := p.Completion("bash")
	if err != nil {
		t.Fatal(err)
	}
	sf := filepath.Join(t.TempDir(), p.Name+".bash")
	if err := os.WriteFile(sf, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	fn := "_" + strings.ReplaceAll(p.Name, "-", "_")
	var sh strings.Builder
	sh.WriteString("source " + sf + "\n")
	fmt.Fprintf(&sh, "complete -p %s | grep -q -- '-F %s %s$' || { echo 'complete -p %s: not registered' >&2; exit 1; }\n", p.Name, fn, p.Name, p.Name)
	sh.WriteString("COMP_WORDS=(")
	for _, w := range words {
		sh.WriteString(" '" + w + "'")
	}
	sh.WriteString(")\nCOMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n")
	fmt.Fprintf(&sh, "%s 2>/dev/null\nprintf '%%s\\n' \"${COMPREPLY[@]}\"\n", fn)
	out, err := exec.Command("bash", "--norc", "--noprofile", "-c", sh.String()).Output()
	if err != nil {
		t.Fatalf("%q: %v", words, err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// FishComplete returns fish's completions for line (complete -C) with
// p's fish script and fish's own completions loaded, nothing from the
// user's configuration. It skips the test when fish is not installed.
func FishComplete(t *testing.T, p *cmdline.Program, line string) string {
	t.Helper()
	if !lookPath("fish") {
		t.Skip("fish is not installed (scripts/setup.sh installs it)")
	}
	script, err := p.Completion("fish")
	if err != nil {
		t.Fatal(err)
	}
	sf := filepath.Join(t.TempDir(), p.Name+".fish")
	if err := os.WriteFile(sf, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	// --no-config leaves fish_complete_path empty: fish's own
	// completions (git's, ls's) are in its data directory.
	cmd := exec.Command("fish", "--no-config", "-c",
		"set -g fish_complete_path $__fish_data_dir/completions; source "+sf+"; complete -C '"+line+"'")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("fish: complete -C %q: %v", line, err)
	}
	return string(out)
}

func lookPath(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}
