package main

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
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
// does: options before the command, files after -s, values after
// --backend, and the command's own words after it.
func TestBashCompletion(t *testing.T) {
	dir := t.TempDir()
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
		got := cmdlinetest.BashComplete(t, program, tc.words)
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("%q: COMPREPLY %q has no %q", tc.words, got, w)
			}
		}
		for _, w := range tc.wantNone {
			if slices.Contains(got, w) {
				t.Errorf("%q: COMPREPLY %q offers %q", tc.words, got, w)
			}
		}
	}
}

// TestFishCompletion asks fish itself what it completes: srt's options
// before the command, and after it (or after --) the command's own
// completion, git's and ls's as fish ships them.
func TestFishCompletion(t *testing.T) {
	for _, tc := range []struct{ line, want, notWant string }{
		{"srt --set", "--settings", ""},
		{"srt --backend ", "microvm", ""},
		{"srt echo --set", "", "--settings"},
		{"srt -- --set", "", "--settings"},
		{"srt gi", "git\t", ""},
		{"srt -q -- gi", "git\t", ""},
		{"srt git chec", "checkout", ""},
		{"srt -s x --debug git chec", "checkout", ""},
		{"srt -- git chec", "checkout", ""},
		{"srt ls --al", "--all", "--settings"},
	} {
		out := cmdlinetest.FishComplete(t, program, tc.line)
		if tc.want != "" && !strings.Contains(out, tc.want) {
			t.Errorf("%q: fish offers %q, no %q", tc.line, out, tc.want)
		}
		if tc.notWant != "" && strings.Contains(out, tc.notWant) {
			t.Errorf("%q: fish offers %q", tc.line, tc.notWant)
		}
	}
}
