//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// openViolationsFile opens PATH for appending, creating it 0600. srt
// refuses to run (exit 125) when it cannot: the caller asked for a record
// it would not get.
func openViolationsFile(path string) (*os.File, error) {
	// The file may lie where an earlier sandboxed command could write: it
	// must not follow a symbolic link the command planted (srt would
	// append command-controlled text to, say, ~/.bashrc: found by an
	// adversarial review), nor write to a file hard-linked elsewhere.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--violations %s: %w (it must be a regular file, not a symbolic link)", path, err)
	}
	fi, err := f.Stat()
	if err == nil && (!fi.Mode().IsRegular() || linkCount(fi) > 1) {
		err = errors.New("not a regular file with a single link")
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("--violations %s: %w", path, err)
	}
	return f, nil
}

// linkCount is the file's number of hard links, 1 where unknown.
func linkCount(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
