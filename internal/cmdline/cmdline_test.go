package cmdline

import (
	"flag"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	p := &Program{Name: "x", Options: []Option{{Short: "a", Long: "all"}, {Long: "n", Arg: "N", Default: "3"}}}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Bool("a", false, "")
	fs.Bool("all", false, "")
	fs.Int("n", 3, "")
	if err := p.Check(fs); err != nil {
		t.Fatal(err)
	}
	fs.Int("extra", 0, "")
	if err := p.Check(fs); err == nil || !strings.Contains(err.Error(), "-extra is not in the option table") {
		t.Errorf("an extra flag: %v", err)
	}
	fs2 := flag.NewFlagSet("x", flag.ContinueOnError)
	fs2.Bool("a", false, "")
	fs2.Int("n", 4, "")
	if err := p.Check(fs2); err == nil || !strings.Contains(err.Error(), `default "4"`) || !strings.Contains(err.Error(), "all is in the table but not a flag") {
		t.Errorf("a wrong default and a missing flag: %v", err)
	}
}

func TestRoff(t *testing.T) {
	for in, want := range map[string]string{
		".hidden request": `\&.hidden request`,
		"'quote":          `\&'quote`,
		`a\b --x`:         `a\eb \-\-x`,
	} {
		if got := roff(in); got != want {
			t.Errorf("roff(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHelpWraps(t *testing.T) {
	p := &Program{Name: "x", Synopsis: []string{"x [options]"}, OptionsTitle: "Options",
		Options: []Option{{Long: "a-very-long-option-name", Arg: "VALUE", Help: strings.Repeat("word ", 40)}}}
	for _, l := range strings.Split(p.Help(), "\n") {
		if len(l) > 78 {
			t.Errorf("line longer than 78 columns: %q", l)
		}
	}
}

// TestManDefaultOnce: the man page adds "Default: X." only when the help
// text does not say it already.
func TestManDefaultOnce(t *testing.T) {
	p := &Program{Name: "x", Options: []Option{
		{Long: "backend", Arg: "NAME", Default: "native", Help: "native or microvm (default: native)"},
		{Long: "n", Arg: "N", Default: "64", Help: "how many"},
		{Long: "addr", Arg: "A", Default: "127.0.0.1:7777", Help: "listen address, default 127.0.0.1:77770"},
	}}
	man := p.Man()
	if n := strings.Count(strings.ToLower(man), "default: native"); n != 1 {
		t.Errorf("the default of --backend is said %d times:\n%s", n, man)
	}
	if !strings.Contains(man, "how many\nDefault: 64.\n") {
		t.Errorf("no Default line for -n:\n%s", man)
	}
	if !strings.Contains(man, "Default: 127.0.0.1:7777.\n") {
		t.Errorf("a longer value in the text taken for the default:\n%s", man)
	}
	for help, want := range map[string]bool{
		"x (default: native)": true, "Default native.": true, "default nativeish": false, "no default": false,
	} {
		if got := statesDefault(help, "native"); got != want {
			t.Errorf("statesDefault(%q, native) = %v", help, got)
		}
	}
}
