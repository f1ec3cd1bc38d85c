package cmdline

import (
	"fmt"
	"regexp"
	"strings"
)

// roff escapes text for a man page line: backslashes, hyphens (so that
// options are copy-pasteable), and a leading '.' or '\” that roff would
// read as a request.
func roff(s string) string {
	s = strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// statesDefault reports whether help already says the default is def
// ("default: native", "default native", "(default 64)"), so that the man
// page does not say it twice.
func statesDefault(help, def string) bool {
	re := regexp.MustCompile(`(?i)\bdefault:?\s+` + regexp.QuoteMeta(def) + `($|[^\w.:-]|\.($|\s))`)
	return re.MatchString(help)
}

// paras writes paragraphs, each a line (roff fills it).
func paras(b *strings.Builder, ps []string) {
	for i, p := range ps {
		if i > 0 {
			b.WriteString(".PP\n")
		}
		b.WriteString(roff(strings.Join(strings.Fields(p), " ")) + "\n")
	}
}

// Man renders the man page in roff (man(7) macros). It has no date nor
// version, so that the file checked in does not change with them.
func (p *Program) Man() string {
	var b strings.Builder
	title := "User Commands"
	if p.Section == 8 {
		title = "System Administration"
	}
	fmt.Fprintf(&b, ".\\\" Generated from %s's option table (internal/cmdline); do not edit.\n", p.Name)
	fmt.Fprintf(&b, ".TH %s %d \"\" \"srt-go\" \"%s\"\n", strings.ToUpper(p.Name), p.Section, title)
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", roff(p.Name), roff(p.Summary))
	b.WriteString(".SH SYNOPSIS\n.nf\n")
	for _, s := range p.Synopsis {
		b.WriteString(roff(s) + "\n")
	}
	b.WriteString(".fi\n.SH DESCRIPTION\n")
	paras(&b, p.Description)
	b.WriteString(".SH OPTIONS\n")
	for _, o := range p.Options {
		var names []string
		for _, s := range o.spellings() {
			names = append(names, `\fB`+roff(s)+`\fR`)
		}
		arg := ""
		switch {
		case o.OptionalArg:
			arg = `[=\fI` + roff(o.Arg) + `\fR]`
		case o.Arg != "":
			arg = ` \fI` + roff(o.Arg) + `\fR`
		}
		fmt.Fprintf(&b, ".TP\n%s%s\n%s\n", strings.Join(names, ", "), arg, roff(o.Help))
		if o.Default != "" && !statesDefault(o.Help, o.Default) {
			fmt.Fprintf(&b, "Default: %s.\n", roff(o.Default))
		}
	}
	for _, s := range p.Sections {
		fmt.Fprintf(&b, ".SH %s\n", roff(strings.ToUpper(s.Title)))
		paras(&b, s.Paras)
		for _, it := range s.Items {
			fmt.Fprintf(&b, ".TP\n\\fB%s\\fR\n%s\n", roff(it.Term), roff(it.Text))
		}
	}
	return b.String()
}
