package main

import (
	"bytes"
	"flag"
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

// TestHelpAndCompletionExit: --help, "completion SHELL" and --man print
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
		{[]string{"--completion", "fish"}, 0, "complete -c srtd -l token-file -r -F"},
		{[]string{"--man"}, 0, ".TH SRTD 8"},
		{[]string{"--completion", "tcsh"}, 2, ""},
		{[]string{"--bogus"}, 2, ""},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != tc.code || !strings.Contains(stdout.String(), tc.out) {
			t.Errorf("srtd %q: status %d, stdout %.80q, stderr %q; want %d and %q", tc.args, code, stdout.String(), stderr.String(), tc.code, tc.out)
		}
	}
}
