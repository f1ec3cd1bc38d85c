//go:build unix

// Package syspath finds the host programs srt itself runs (bubblewrap,
// QEMU) in PATH, but only in system directories: a sandboxed run must not
// be able to plant the next run's helper (issue 14: a fake bwrap in
// ~/.local/bin, first on Debian's PATH, ran as srt's own sandbox builder).
package syspath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrNotFound is wrapped when no system directory of PATH holds the
// program.
var ErrNotFound = errors.New("not found in a system directory of PATH")

// LookPath is exec.LookPath restricted to trusted directories of PATH:
// absolute, not below $HOME, and, like the program itself once every
// symbolic link is resolved, owned by root and not writable by group or
// others, up to "/" (the rule sshd's StrictModes and sudo's secure_path
// apply). Skipped directories are reported in the error when nothing
// is found, so the user sees why a program they installed was passed
// over; the answer is an explicit absolute path (bwrapPath).
func LookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return "", fmt.Errorf("%s: a program name, not a path: %w", name, exec.ErrNotFound)
	}
	home, _ := os.UserHomeDir()
	var skipped []string
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if !filepath.IsAbs(dir) {
			continue
		}
		cand := filepath.Join(dir, name)
		if !isExecutable(cand) {
			continue
		}
		if why := untrusted(cand, home); why != "" {
			skipped = append(skipped, cand+" ("+why+")")
			continue
		}
		return cand, nil
	}
	if len(skipped) > 0 {
		return "", fmt.Errorf("%s: %w; passed over: %s", name, ErrNotFound, strings.Join(skipped, "; "))
	}
	return "", fmt.Errorf("%s: %w", name, ErrNotFound)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// untrusted says why path (a program) is not a system program, or "".
func untrusted(path, home string) string {
	res, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err.Error()
	}
	if home != "" && home != "/" {
		if h, err := filepath.EvalSymlinks(home); err == nil && (within(res, h) || within(path, home)) {
			return "below the home directory"
		}
	}
	for p := res; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return err.Error()
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 {
			return fmt.Sprintf("%s is owned by uid %d, not root", p, st.Uid)
		}
		if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
			return fmt.Sprintf("%s is writable by group or others", p)
		}
		if p == "/" {
			return ""
		}
	}
}

func within(path, root string) bool {
	return path == root || strings.HasPrefix(path, strings.TrimSuffix(root, "/")+"/")
}
