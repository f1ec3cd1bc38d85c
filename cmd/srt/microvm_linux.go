package main

import (
	"net/netip"

	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/sandbox/linux"
)

// microvmCreationRules decides, as for a native sandbox
// (linux.CreationRules: the same notice and refusal), whether a microvm
// run enforces names at creation time in the guest.
func microvmCreationRules(p *policy.Policy) (bool, string, error) {
	return linux.CreationRules(p, false)
}

// microvmForbidden is the VM's proxies' Forbidden hook: the native
// sandboxes' srtd address guard (linux.ServerAddresses, the addresses a
// running srtd of this user registered), the same rule, not a copy.
func microvmForbidden() (func(netip.AddrPort) string, error) {
	return linux.ServerAddresses()
}
