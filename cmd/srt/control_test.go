package main

import (
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/srt-go/srt/settings"
	"golang.org/x/sys/unix"
)

func TestParseControlFD(t *testing.T) {
	for _, tt := range []struct {
		arg  string
		want int
		ok   bool
	}{
		{"3", 3, true},
		{"42", 42, true},
		{"2", 0, false},
		{"0", 0, false},
		{"-1", 0, false},
		{"x", 0, false},
		{"", 0, false},
	} {
		got, err := parseControlFD(tt.arg)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseControlFD(%q) = %d, %v", tt.arg, got, err)
		}
	}
}

// TestServeControl feeds a stream of lines: each good line replaces the
// lists, blank lines are silent, bad ones are reported and skipped.
func TestServeControl(t *testing.T) {
	in := strings.Join([]string{
		`{"network":{"allowedDomains":["a.example"],"deniedDomains":[]}}`,
		``,
		`   `,
		`{"network":{"allowedDomains":["*.com"],"deniedDomains":[]}}`, // too broad
		`{not json`,
		`{"network":{"allowedDomains":["refused.example"],"deniedDomains":[]}}`, // update fails
		`{"network":{"allowedDomains":["b.example"],"deniedDomains":[]}}`,       // no final newline
	}, "\n")
	var got [][]string
	update := func(n settings.Network) error {
		if slices.Contains(n.AllowedDomains, "refused.example") {
			return errors.New("backend says no")
		}
		got = append(got, n.AllowedDomains)
		return nil
	}
	var stderr strings.Builder
	lines := 0
	if err := serveControl(strings.NewReader(in), 7, update, &stderr, &lines); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0][0] != "a.example" || got[1][0] != "b.example" {
		t.Errorf("applied %q", got)
	}
	msgs := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	if len(msgs) != 3 {
		t.Fatalf("stderr has %d lines, want 3:\n%s", len(msgs), stderr.String())
	}
	for i, want := range []string{"too broad", "invalid JSON", "backend says no"} {
		m := msgs[i]
		if !strings.HasPrefix(m, "srt: control fd 7") || !strings.HasSuffix(m, "; ignored, previous settings still in force") || !strings.Contains(m, want) {
			t.Errorf("message %d = %q, want the fd, %q and the ignored note", i, m, want)
		}
	}
}

func TestOpenControlFD(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := openControlFD(int(w.Fd())); err == nil || !strings.Contains(err.Error(), "writing only") {
		t.Errorf("write end: %v", err)
	}
	// A descriptor of its own for f: two *os.File on one number would
	// close it twice, the second time (r's finalizer, at some later GC)
	// whatever another test has opened under that number since.
	rfd, err := unix.Dup(int(r.Fd()))
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	f, err := openControlFD(rfd)
	if err != nil {
		unix.Close(rfd)
		t.Fatalf("read end: %v", err)
	}
	defer f.Close()
	w.Write([]byte("x"))
	b := make([]byte, 1)
	if _, err := io.ReadFull(f, b); err != nil || b[0] != 'x' {
		t.Errorf("read %q, %v", b, err)
	}
	// A descriptor number that is not open.
	nf, _ := os.Open(os.DevNull)
	fd := int(nf.Fd())
	nf.Close()
	if _, err := openControlFD(fd); err == nil || !strings.Contains(err.Error(), "not usable") {
		t.Errorf("closed fd %d: %v", fd, err)
	}
}
