package main

import (
	"context"
	"fmt"
	"io"

	"github.com/srt-go/srt/sandbox/linux"
)

// check prints what this host can enforce and returns 0 when it enforces
// everything, else 1.
func check(settingsPath string, stdout, stderr io.Writer) int {
	bwrap := ""
	if s, err := loadSettings(settingsPath); err == nil {
		bwrap = s.BwrapPath
	} else {
		fmt.Fprintf(stderr, "srt: %v\n", err)
	}
	code := 0
	for _, g := range linux.Check(context.Background(), bwrap) {
		mark := "ok     "
		if !g.OK {
			mark = "MISSING"
			if g.Name != "Landlock" {
				code = 1
			}
		}
		fmt.Fprintf(stdout, "%s  %-36s %s\n", mark, g.Name, g.Detail)
	}
	return code
}
