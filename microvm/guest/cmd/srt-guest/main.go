// Command srt-guest is the microvm guest's /init when the srt binary
// itself cannot be (it is dynamically linked). Build it static:
//
//	CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' ./microvm/guest/cmd/srt-guest
//
// Inside the guest it is also /.srt/bin/srt-guest, with the tools of
// guest.Tool ("srt-guest fetch URL", "srt-guest dial HOST:PORT").
package main

import (
	"fmt"
	"os"

	"github.com/srt-go/srt/microvm/guest"
)

func main() {
	if guest.IsInit() {
		guest.Main()
	}
	if st, ok := guest.Tool(os.Args[1:]); ok {
		os.Exit(st)
	}
	fmt.Fprintln(os.Stderr, "usage: srt-guest fetch URL | dial HOST:PORT (the microvm guest's /init)")
	os.Exit(2)
}
