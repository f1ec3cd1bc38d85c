package main

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/srt-go/srt/internal/cmdline/cmdlinetest"
)

//go:generate go test -run ^TestManPage$ -update-man

var updateMan = flag.Bool("update-man", false, "rewrite docs/man/srt.1 from the option table (go generate ./cmd/srt)")

// TestOptionTable: the flags parseArgs reads are the table's, with its
// defaults, so --help, completions and the man page describe them.
func TestOptionTable(t *testing.T) {
	if err := program.Check(newFlagSet(&options{})); err != nil {
		t.Fatal(err)
	}
	help := program.Help()
	for _, want := range []string{"Usage: srt [options] [--] COMMAND [ARG...]", "-s, --settings PATH", "--observe-fs[=false]", "srt exits 125"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help has no %q:\n%s", want, help)
		}
	}
}

func TestManPage(t *testing.T) {
	cmdlinetest.CheckMan(t, program, "../../docs/man/srt.1", *updateMan)
}

func TestCompletionSyntax(t *testing.T) {
	cmdlinetest.CheckCompletionSyntax(t, program)
}

// TestBashCompletion completes srt command lines in bash as the shell
// does (COMP_WORDS, COMP_CWORD, then the function complete -p names):
// options before the command, files after -s, values after --backend,
// and the command's own words after it.
func TestBashCompletion(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	script, err := program.Completion("bash")
	if err != nil {
		t.Fatal(err)
	}
	sf := filepath.Join(dir, "srt.bash")
	if err := os.WriteFile(sf, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	settingsFile := filepath.Join(dir, "my-settings.json")
	if err := os.WriteFile(settingsFile, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		words    []string // the last one is under the cursor
		want     []string // each must be offered
		wantNone []string // none of these may be
	}{
		{[]string{"srt", "--set"}, []string{"--settings"}, nil},
		{[]string{"srt", "-"}, []string{"-s", "--settings", "--violations", "--backend", "--completion", "--help"}, nil},
		{[]string{"srt", "-s", filepath.Join(dir, "my")}, []string{settingsFile}, nil},
		{[]string{"srt", "--settings", filepath.Join(dir, "my")}, []string{settingsFile}, nil},
		{[]string{"srt", "--violations", filepath.Join(dir, "my")}, []string{settingsFile}, nil},
		{[]string{"srt", "--backend", ""}, []string{"native", "microvm"}, nil},
		{[]string{"srt", "--completion", "z"}, []string{"zsh"}, []string{"bash"}},
		{[]string{"srt", "-s", "x", "--debug", "bas"}, []string{"bash"}, nil},                // a command name
		{[]string{"srt", "--", "bas"}, []string{"bash"}, nil},                                // after --
		{[]string{"srt", "echo", "--set"}, nil, []string{"--settings"}},                      // the command's argument
		{[]string{"srt", "-s", "--set"}, nil, []string{"--settings"}},                        // -s's argument
		{[]string{"srt", "--", "--set"}, nil, []string{"--settings"}},                        // the command
		{[]string{"srt", "-q", "ls", filepath.Join(dir, "my")}, []string{settingsFile}, nil}, // files for the command
	} {
		var sh strings.Builder
		sh.WriteString("source " + sf + "\n")
		sh.WriteString("complete -p srt | grep -q -- '-F _srt srt$' || { echo 'complete -p srt: not registered' >&2; exit 1; }\n")
		sh.WriteString("COMP_WORDS=(")
		for _, w := range tc.words {
			sh.WriteString(" '" + w + "'")
		}
		sh.WriteString(")\nCOMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n")
		sh.WriteString("_srt 2>/dev/null\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n")
		out, err := exec.Command("bash", "--norc", "--noprofile", "-c", sh.String()).Output()
		if err != nil {
			t.Fatalf("%q: %v", tc.words, err)
		}
		got := strings.Split(strings.TrimSpace(string(out)), "\n")
		has := func(w string) bool {
			for _, g := range got {
				if g == w {
					return true
				}
			}
			return false
		}
		for _, w := range tc.want {
			if !has(w) {
				t.Errorf("%q: COMPREPLY %q has no %q", tc.words, got, w)
			}
		}
		for _, w := range tc.wantNone {
			if has(w) {
				t.Errorf("%q: COMPREPLY %q offers %q", tc.words, got, w)
			}
		}
	}
}

// TestFishCompletion asks fish itself what it completes.
func TestFishCompletion(t *testing.T) {
	if _, err := exec.LookPath("fish"); err != nil {
		t.Skip("fish is not installed (scripts/setup.sh installs it)")
	}
	script, _ := program.Completion("fish")
	sf := filepath.Join(t.TempDir(), "srt.fish")
	if err := os.WriteFile(sf, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ line, want, notWant string }{
		{"srt --set", "--settings", ""},
		{"srt --backend ", "microvm", ""},
		{"srt echo --set", "", "--settings"},
	} {
		out, err := exec.Command("fish", "--no-config", "-c", "source "+sf+"; complete -C '"+tc.line+"'").Output()
		if err != nil {
			t.Fatalf("%q: %v", tc.line, err)
		}
		if tc.want != "" && !strings.Contains(string(out), tc.want) {
			t.Errorf("%q: fish offers %q, no %q", tc.line, out, tc.want)
		}
		if tc.notWant != "" && strings.Contains(string(out), tc.notWant) {
			t.Errorf("%q: fish offers %q", tc.line, tc.notWant)
		}
	}
}
