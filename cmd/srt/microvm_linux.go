package main

import (
	"net/netip"

	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/sandbox/linux"
	"golang.org/x/sys/unix"
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

// microvmWorkdir is the working directory as the kernel has it
// (getcwd(2)): the real path of the directory srt runs in, with no link
// on it, not $PWD's spelling that os.Getwd returns (a link someone else
// may re-point before the next lookup).
func microvmWorkdir() (string, error) { return unix.Getwd() }
