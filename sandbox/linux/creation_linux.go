package linux

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/srt-go/srt/policy"
	"golang.org/x/sys/unix"
)

// creationKernel is the first kernel that has everything the creation-time
// name rules use: seccomp user notification with TSYNC (5.7), openat2
// (5.6) and SECCOMP_ADDFD_FLAG_SEND (5.14), which makes the descriptor srt
// opened the notified call's return value in one step.
var creationKernel = [2]int{5, 14}

var creationSupport = sync.OnceValue(func() error {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return fmt.Errorf("uname: %w", err)
	}
	rel := unix.ByteSliceToString(u.Release[:])
	major, rest, _ := strings.Cut(rel, ".")
	minor, _, _ := strings.Cut(rest, ".")
	v := [2]int{leadingInt(major), leadingInt(minor)}
	if v[0] < creationKernel[0] || v[0] == creationKernel[0] && v[1] < creationKernel[1] {
		return fmt.Errorf("kernel %s is older than %d.%d (seccomp SECCOMP_ADDFD_FLAG_SEND)", rel, creationKernel[0], creationKernel[1])
	}
	return nil
})

// leadingInt is the number at the start of s ("14" of "14-amd64"), 0 if none.
func leadingInt(s string) int {
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			break
		}
		n = n*10 + int(r-'0')
	}
	return n
}

// CreationRulesSupported returns nil when this kernel can run the
// creation-time name rules, else why not.
func CreationRulesSupported() error { return creationSupport() }

// CreationRules decides whether a sandbox for p enforces names at creation
// time (filesystem.enforceNamesAtCreation, create_linux.go), in the
// weaker Landlock sandbox when weak. Absent, the key means "on where the
// host can": where it cannot, the run goes on with the mounts alone (the
// names that exist, and placeholders for the missing ones at the top of
// each write root) and notice says so, unless the settings hold a
// denyWrite glob, which only this can enforce: then, as when the key is
// true, err refuses the run. Never a silently weaker policy.
func CreationRules(p *policy.Policy, weak bool) (on bool, notice string, err error) {
	if p == nil || p.FilesystemDisabled {
		return false, "", nil
	}
	want, explicit := p.NamesAtCreation, p.NamesAtCreationSet
	if !want {
		if len(p.DenyWriteGlobs) > 0 {
			return false, "filesystem.enforceNamesAtCreation is false: files created during the run that match filesystem.denyWrite globs are not refused", nil
		}
		return false, "", nil
	}
	why := CreationRulesSupported()
	if weak {
		why = fmt.Errorf("the weaker Landlock sandbox (enableWeakerNestedSandbox) has no seccomp supervisor to perform them")
	}
	if why == nil {
		return true, "", nil
	}
	if explicit || len(p.DenyWriteGlobs) > 0 {
		var globs []string
		for _, g := range p.DenyWriteGlobs {
			globs = append(globs, strconv.Quote(g.Pattern))
		}
		what := "filesystem.enforceNamesAtCreation is true"
		if !explicit {
			what = "filesystem.denyWrite holds globs (" + strings.Join(globs, ", ") + ") that only creation-time name rules enforce on new files"
		}
		return false, "", fmt.Errorf("%s, but this host cannot enforce names at creation: %v; refusing to run with a weaker policy (remove the globs, or set filesystem.enforceNamesAtCreation to false to accept that new files matching them are not refused)", what, why)
	}
	return false, "names created during the run are not checked against the mandatory write-denies below the top of each write root (" + why.Error() + "); set filesystem.enforceNamesAtCreation to false to silence this", nil
}
