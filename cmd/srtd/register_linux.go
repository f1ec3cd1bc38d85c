package main

import (
	"net"

	"github.com/srt-go/srt/sandbox/linux"
)

// registerServer records srtd's listener for every sandbox's proxies to
// refuse (linux.RegisterServer).
func registerServer(a net.Addr) (func(), error) { return linux.RegisterServer(a) }
