package main

import (
	"github.com/srt-go/srt/policy"
	"github.com/srt-go/srt/sandbox/linux"
)

// microvmCreationRules decides, as for a native sandbox
// (linux.CreationRules: the same notice and refusal), whether a microvm
// run enforces names at creation time in the guest.
func microvmCreationRules(p *policy.Policy) (bool, string, error) {
	return linux.CreationRules(p, false)
}
