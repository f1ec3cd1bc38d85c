package main

import (
	"slices"
	"testing"
)

// TestCommandLineOneString: a lone argument holding a command line runs
// with the shell (seed 003's examples); anything else is exact.
func TestCommandLineOneString(t *testing.T) {
	sh := userShell()
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"curl example.com"}, []string{sh, "-c", "curl example.com"}},
		{[]string{`echo "malicious" >> .bashrc`}, []string{sh, "-c", `echo "malicious" >> .bashrc`}},
		{[]string{"echo"}, []string{"echo"}},
		{[]string{"echo", "a b"}, []string{"echo", "a b"}},
		{[]string{"/bin/echo x"}, []string{sh, "-c", "/bin/echo x"}},
	} {
		got, err := commandLine(&options{args: c.args})
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("commandLine(%q) = %q, %v; want %q", c.args, got, err, c.want)
		}
	}
}
