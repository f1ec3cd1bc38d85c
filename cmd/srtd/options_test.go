package main

import (
	"bytes"
	"flag"
	"slices"
	"strings"
	"testing"

	"github.com/srt-go/srt/internal/cmdline/cmdlinetest"
)

//go:generate go test -run ^TestManPage$ -update-man

var updateMan = flag.Bool("update-man", false, "rewrite docs/man/srtd.8 from the option table (go generate ./cmd/srtd)")

// TestOptionTable: the flags serve parses are the table's, with its
// defaults.
func TestOptionTable(t *testing.T) {
	fs, _ := newFlagSet()
	if err := program.Check(fs); err != nil {
		t.Fatal(err)
	}
}

func TestManPage(t *testing.T) {
	cmdlinetest.CheckMan(t, program, "../../docs/man/srtd.8", *updateMan)
}

func TestCompletionSyntax(t *testing.T) {
	cmdlinetest.CheckCompletionSyntax(t, program)
}

// TestHelpAndCompletionExit: --help, "completion SHELL", --man and --version print
// on stdout and exit 0 without serving; a bad shell is a usage error.
func TestHelpAndCompletionExit(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"--help"}, 0, "--token-file PATH"},
		{[]string{"-h"}, 0, "Usage: srtd"},
		{[]string{"completion", "bash"}, 0, "complete -F _srtd srtd"},
		{[]string{"--completion", "fish"}, 0, "complete -c srtd -n __srtd_no_words -l token-file -r -F"},
		{[]string{"--man"}, 0, ".TH SRTD 8"},
		{[]string{"--version"}, 0, "srtd " + version + "\n"},
		{[]string{"-V"}, 0, "srtd " + version + "\n"},
		{[]string{"--completion", "tcsh"}, 2, ""},
		{[]string{"--bogus"}, 2, ""},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != tc.code || !strings.Contains(stdout.String(), tc.out) {
			t.Errorf("srtd %q: status %d, stdout %.80q, stderr %q; want %d and %q", tc.args, code, stdout.String(), stderr.String(), tc.code, tc.out)
		}
	}
}

// TestCompletion: bash and fish offer srtd's options, the subcommand
// completion and, after it or after --completion, the shells.
func TestCompletion(t *testing.T) {
	shells := []string{"bash", "zsh", "fish"}
	for _, tc := range []struct {
		words    []string // the last one is under the cursor
		want     []string
		wantNone []string
	}{
		{[]string{"srtd", ""}, []string{"completion"}, nil},
		{[]string{"srtd", "--to"}, []string{"--token-file"}, nil},
		{[]string{"srtd", "--addr", "127.0.0.1:0", "c"}, []string{"completion"}, nil},
		{[]string{"srtd", "completion", ""}, shells, nil},
		{[]string{"srtd", "completion", "z"}, []string{"zsh"}, []string{"bash"}},
		{[]string{"srtd", "--completion", ""}, shells, nil},
		{[]string{"srtd", "completion", "bash", ""}, nil, shells},
		{[]string{"srtd", "--sandbox", ""}, []string{"on", "off"}, []string{"completion"}},
	} {
		t.Run("bash", func(t *testing.T) {
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
		})
		t.Run("fish", func(t *testing.T) {
			line := strings.Join(tc.words, " ")
			var got []string
			for _, l := range strings.Split(cmdlinetest.FishComplete(t, program, line), "\n") {
				got = append(got, strings.SplitN(l, "\t", 2)[0])
			}
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("%q: fish offers %q, no %q", line, got, w)
				}
			}
			for _, w := range tc.wantNone {
				if slices.Contains(got, w) {
					t.Errorf("%q: fish offers %q", line, w)
				}
			}
		})
	}
}
