// Command prepare fills the microvm kernel cache (microvm.Prepare), for a
// CI or machine set-up step: go run ./microvm/internal/prepare [CACHEDIR]
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/srt-go/srt/microvm"
)

func main() {
	dir := ""
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	a, err := microvm.Prepare(context.Background(), dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "prepare:", err)
		os.Exit(1)
	}
	fmt.Printf("kernel %s (%s), %d modules\n", a.Kernel, a.KernelRelease, len(a.Modules))
}
