// Package e2e holds srt's end-to-end tests (issue 2): they build the srt
// binary, run it through the real bubblewrap as root and as an
// unprivileged user, attack every filesystem rule from inside the sandbox
// and check the host side afterwards. Run them as root:
//
//	go test ./e2e/ -count=1
//
// Without bubblewrap or user namespaces they fail, unless
// SRT_E2E_ALLOW_SKIP=1 makes them skip.
package e2e
