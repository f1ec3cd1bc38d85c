// Package cmdline describes a program's command line once, as a table of
// options, and renders that table as the program's --help text, its bash,
// zsh and fish completion scripts and its man page (roff), so the four
// cannot disagree. It does not parse arguments: each program keeps its
// own flag.FlagSet, and a test there checks the set against the table
// (Program.Check).
package cmdline

import (
	"flag"
	"fmt"
	"slices"
	"strings"
)

// Complete says what a shell offers for an option's argument or for the
// words after the options.
type Complete int

const (
	// Nothing: no suggestion (a number, an identifier).
	Nothing Complete = iota
	// Files: file names.
	Files
	// Values: the option's Values.
	Values
	// Command: a command name, then that command's own arguments (srt's
	// COMMAND [ARG...]).
	Command
)

// Option is one option. Short and Long are its names without dashes
// ("s", "settings"); either may be empty. Arg names its argument in
// help ("PATH"), empty for a switch; OptionalArg marks a switch that
// also takes "=VALUE" (--observe-fs[=false]).
type Option struct {
	Short, Long string
	Arg         string
	OptionalArg bool
	// Help is one paragraph; renderers wrap it.
	Help string
	// Brief is the completion menus' description; empty means Help's
	// first clause (up to ". ", "; " or " (", when that leaves at least
	// a few words).
	Brief    string
	Complete Complete
	Values   []string
	// Default is the default value as flag.Flag.DefValue spells it, ""
	// for none; Check compares it with the flag set's.
	Default string
}

// Item is one entry of a man page's definition list.
type Item struct{ Term, Text string }

// Section is one man page section beyond NAME, SYNOPSIS, DESCRIPTION and
// OPTIONS: paragraphs, then a definition list.
type Section struct {
	Title string
	Paras []string
	Items []Item
}

// Subcommand is a word that may stand where the options end and takes one
// argument from Values: srtd's "completion SHELL". Only the completions
// know them; say what they do in the Description.
type Subcommand struct {
	Name, Arg string
	// Brief is the completion menus' description.
	Brief  string
	Values []string
}

// Program is one program's command line.
type Program struct {
	Name    string
	Section int    // man section: 1 for a user command, 8 for a server
	Summary string // the man page's NAME line, after "name - "
	// Synopsis are the usage lines without the leading "Usage: ".
	Synopsis []string
	// Description are paragraphs, shown by --help and the man page.
	Description []string
	// OptionsTitle heads the options in --help ("Options").
	OptionsTitle string
	Options      []Option
	// Positional is what follows the options: Nothing or Command.
	Positional Complete
	// Subcommands may follow the options when Positional is Nothing.
	Subcommands []Subcommand
	// Epilog are paragraphs --help prints after the options.
	Epilog []string
	// Sections are the man page's further sections.
	Sections []Section
}

// names is how an option is spelled in help: "-s, --settings PATH".
func (o Option) names() string {
	var parts []string
	if o.Short != "" {
		parts = append(parts, "-"+o.Short)
	}
	if o.Long != "" {
		parts = append(parts, "--"+o.Long)
	}
	s := strings.Join(parts, ", ")
	switch {
	case o.OptionalArg:
		s += "[=" + o.Arg + "]"
	case o.Arg != "":
		s += " " + o.Arg
	}
	return s
}

// spellings are the option's words on a command line: "-s", "--settings".
func (o Option) spellings() []string {
	var out []string
	if o.Short != "" {
		out = append(out, "-"+o.Short)
	}
	if o.Long != "" {
		out = append(out, "--"+o.Long)
	}
	return out
}

// takesArg reports whether the option's argument is the next word.
func (o Option) takesArg() bool { return o.Arg != "" && !o.OptionalArg }

// brief is the first sentence of Help, for completion menus.
func (o Option) brief() string {
	if o.Brief != "" {
		return o.Brief
	}
	h := o.Help
	for _, sep := range []string{". ", "; ", " ("} {
		if i := strings.Index(h, sep); i >= 12 {
			h = h[:i]
		}
	}
	return strings.TrimSuffix(h, ".")
}

// Check compares the table with the flag set a program parses with:
// the same names, the same defaults, and no flag the table leaves out.
func (p *Program) Check(fs *flag.FlagSet) error {
	inTable := map[string]Option{}
	for _, o := range p.Options {
		for _, n := range []string{o.Short, o.Long} {
			if n != "" {
				inTable[n] = o
			}
		}
	}
	var problems []string
	seen := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		seen[f.Name] = true
		o, ok := inTable[f.Name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("flag -%s is not in the option table", f.Name))
		case o.Default != f.DefValue && !(o.Default == "" && slices.Contains([]string{"false", "0", ""}, f.DefValue)):
			problems = append(problems, fmt.Sprintf("flag -%s: default %q, the table says %q", f.Name, f.DefValue, o.Default))
		}
	})
	for n := range inTable {
		if !seen[n] {
			problems = append(problems, fmt.Sprintf("option %s is in the table but not a flag", n))
		}
	}
	slices.Sort(problems)
	if problems != nil {
		return fmt.Errorf("%s: %s", p.Name, strings.Join(problems, "; "))
	}
	return nil
}

// wrap breaks text into lines of at most width columns (a longer word
// stands alone).
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) > width:
			lines = append(lines, line)
			line = w
		default:
			line += " " + w
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// Help renders the --help text: usage, description, options, epilog.
func (p *Program) Help() string {
	const width, col = 78, 24
	var b strings.Builder
	for i, s := range p.Synopsis {
		if i == 0 {
			fmt.Fprintf(&b, "Usage: %s\n", s)
		} else {
			fmt.Fprintf(&b, "       %s\n", s)
		}
	}
	for _, para := range p.Description {
		b.WriteString("\n")
		for _, l := range wrap(para, width-2) {
			b.WriteString(l + "\n")
		}
	}
	fmt.Fprintf(&b, "\n%s:\n", p.OptionsTitle)
	for _, o := range p.Options {
		n := "  " + o.names()
		lines := wrap(o.Help, width-col)
		if len(n)+2 > col {
			b.WriteString(n + "\n")
			n = ""
		}
		for _, l := range lines {
			fmt.Fprintf(&b, "%-*s%s\n", col, n, l)
			n = ""
		}
		if len(lines) == 0 {
			b.WriteString(n + "\n")
		}
	}
	for _, para := range p.Epilog {
		b.WriteString("\n")
		for _, l := range wrap(para, width-2) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}
