//go:build !linux

package main

import (
	"fmt"
	"io"
	"runtime"
)

func check(_ string, stdout, _ io.Writer) int {
	fmt.Fprintf(stdout, "MISSING  sandbox backend                     none for %s yet\n", runtime.GOOS)
	return 1
}
