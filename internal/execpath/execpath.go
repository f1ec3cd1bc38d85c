// Package execpath finds a command the way execvp(3) and a shell do, in a
// PATH the caller gives: the PATH of the environment the command will run
// with, never the looking process's own (os/exec.LookPath reads the
// caller's). It is pure (the caller passes PATH, the working directory
// and the stat function), so the same rules run in srtd for backend none
// (port), inside a native sandbox in PID 1's exec agent
// (sandbox/linux/agent_linux.go) and inside a microvm guest
// (microvm/guest), none of which needs anything of the host's.
package execpath

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
)

// The reasons a lookup fails; an *Error wraps one of them.
var (
	// ErrNotFound: a bare name is in no directory of PATH (exit 127).
	ErrNotFound = errors.New("command not found")
	// ErrNoFile: a name with a slash does not exist (exit 127).
	ErrNoFile = errors.New("no such file or directory")
	// ErrPermission: the file exists but is a directory or has no
	// execute bit, and no later PATH entry holds an executable one, as
	// execvp reports EACCES (exit 126).
	ErrPermission = errors.New("permission denied")
)

// Error is a failed lookup of Name; Err is ErrNotFound, ErrNoFile or
// ErrPermission. Its text is a shell's: "NAME: command not found".
type Error struct {
	Name string
	Err  error
}

func (e *Error) Error() string { return e.Name + ": " + e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// Code is the exit status a shell gives for the failure: 126 found but
// not executable, 127 not found.
func (e *Error) Code() int {
	if errors.Is(e.Err, ErrPermission) {
		return 126
	}
	return 127
}

// Lookup returns the file that running name would execute, or an *Error.
//
// A name with a slash is taken as it is, relative to dir when relative. A
// bare name is searched in each directory of path in order (an empty
// entry means the current directory, as in POSIX); a relative result is
// made relative to dir. dir "" means the caller's working directory. The
// first regular executable wins. stat is os.Stat in the process that
// will exec (it follows symlinks, as execve does).
func Lookup(name, path, dir string, stat func(string) (fs.FileInfo, error)) (string, error) {
	executable := func(p string) error {
		fi, err := stat(p)
		if err != nil {
			return err
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return fs.ErrPermission
		}
		return nil
	}
	rooted := func(p string) string {
		if !filepath.IsAbs(p) && dir != "" {
			return filepath.Join(dir, p)
		}
		return p
	}
	if strings.Contains(name, "/") {
		p := rooted(name)
		if err := executable(p); err != nil {
			if errors.Is(err, fs.ErrPermission) {
				return "", &Error{name, ErrPermission}
			}
			return "", &Error{name, ErrNoFile}
		}
		return p, nil
	}
	denied := false
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		p := rooted(filepath.Join(d, name))
		switch err := executable(p); {
		case err == nil:
			return p, nil
		case errors.Is(err, fs.ErrPermission):
			denied = true
		}
	}
	if denied {
		return "", &Error{name, ErrPermission}
	}
	return "", &Error{name, ErrNotFound}
}

// PathOf returns the value of env's PATH (env is a list of "K=V"; the
// last PATH= entry wins), or fallback when env has none.
func PathOf(env []string, fallback string) string {
	path := fallback
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	return path
}
