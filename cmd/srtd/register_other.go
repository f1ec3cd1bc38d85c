//go:build !linux

package main

import "net"

// registerServer is a no-op where srt's proxies do not read the registry
// yet (macOS: its sandboxes' proxies are not wired to it).
func registerServer(net.Addr) (func(), error) { return func() {}, nil }
