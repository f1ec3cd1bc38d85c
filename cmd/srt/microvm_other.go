//go:build !linux

package main

import (
	"net/netip"
	"os"

	"github.com/srt-go/srt/policy"
)

// microvmCreationRules is off where there is no microvm backend.
func microvmCreationRules(*policy.Policy) (bool, string, error) { return false, "", nil }

// microvmForbidden has nothing to refuse where there is no microvm backend.
func microvmForbidden() (func(netip.AddrPort) string, error) { return nil, nil }

// microvmWorkdir is os.Getwd where there is no microvm backend.
func microvmWorkdir() (string, error) { return os.Getwd() }
