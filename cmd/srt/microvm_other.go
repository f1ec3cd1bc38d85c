//go:build !linux

package main

import "github.com/srt-go/srt/policy"

// microvmCreationRules is off where there is no microvm backend.
func microvmCreationRules(*policy.Policy) (bool, string, error) { return false, "", nil }
