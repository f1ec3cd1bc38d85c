package envlist

import (
	"slices"
	"testing"
)

func TestSet(t *testing.T) {
	env := []string{"A=1", "TMPDIR=/x", "AB=2", "TMPDIR=/y"}
	got := Set(env, "TMPDIR", "/z")
	if want := []string{"A=1", "AB=2", "TMPDIR=/z"}; !slices.Equal(got, want) {
		t.Errorf("Set = %q, want %q", got, want)
	}
	if env[1] != "TMPDIR=/x" {
		t.Errorf("Set modified its input: %q", env)
	}
	if got := Set(nil, "A", ""); !slices.Equal(got, []string{"A="}) {
		t.Errorf("Set(nil) = %q", got)
	}
}
