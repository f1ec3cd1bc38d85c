package settings

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// FileName is the settings file's name in the home directory.
const FileName = ".srt-settings.json"

// MaxFileSize bounds how much of a settings file Load reads, so that
// "--settings /dev/zero" fails instead of filling memory.
const MaxFileSize = 16 << 20

// DefaultPath returns $HOME/.srt-settings.json (os.UserHomeDir, which
// honours $HOME like the reference's os.homedir()). It fails only when
// the home directory is unknown.
func DefaultPath() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("locating the settings file: %w", err)
	}
	return filepath.Join(home, FileName), nil
}

// Default returns the built-in settings used when the default settings
// file does not exist: no network, no writes beyond the default write
// paths, reads everywhere. Its lists are empty, not nil, like Parse's.
func Default() *Settings {
	return &Settings{
		Network: Network{AllowedDomains: []string{}, DeniedDomains: []string{}},
		Filesystem: Filesystem{
			DenyRead:   []PathEntry{},
			AllowRead:  []PathEntry{},
			AllowWrite: []PathEntry{},
			DenyWrite:  []PathEntry{},
		},
	}
}

// Load reads and validates the settings file at path; see Parse.
//
// Every error is an *Error naming path. When the file cannot be read its
// Err is the *fs.PathError, so errors.Is(err, fs.ErrNotExist) tells a
// missing file (the caller decides whether that means Default) and
// errors.Is(err, fs.ErrPermission) an unreadable one. A file larger than
// MaxFileSize is an error.
func Load(path string) (*Settings, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	s, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	if s.Source, err = filepath.Abs(path); err != nil {
		return nil, err
	}
	return s, nil
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fileError(path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fileError(path, err)
	}
	if len(data) > MaxFileSize {
		return nil, &Error{File: path, Msg: fmt.Sprintf("is larger than %d MiB; not a settings file", MaxFileSize>>20)}
	}
	return data, nil
}

// fileError turns an open or read error into an *Error wrapping it.
func fileError(path string, err error) *Error {
	if errors.Is(err, fs.ErrNotExist) {
		return &Error{File: path, Msg: "does not exist", Err: err}
	}
	cause := err.Error()
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		cause = pe.Err.Error() // the path is already in File
	}
	return &Error{File: path, Msg: "could not be read: " + cause, Err: err}
}

// Parse validates data, the contents of a settings file, and returns the
// settings. name is used as Error.File in errors.
//
// The format is the reference srt's (0.0.83) with these differences, each
// on the safe side or a convenience:
//   - "network", "filesystem" and their lists (allowedDomains,
//     deniedDomains, denyRead, allowWrite, denyWrite) may be missing,
//     which the reference refuses: missing means an empty list, which is
//     the safe default (no network, no extra writes). null means absent
//     for any optional key, and an empty list for any list.
//   - An unknown key is an error suggesting the closest known key, where
//     the reference silently drops it: a typo in "denyWrite" must not
//     lose a deny rule.
//   - Security settings srt-go does not implement ("credentials" and the
//     request-filter keys of "network", such as "tlsTerminate") are
//     errors, never dropped. The reference's helper settings ("ripgrep",
//     "socatPath", "seccomp", "javaAgentJarPath", "windows") are accepted
//     without being checked and listed in Settings.Ignored.
//   - Duplicate keys in an object are an error (JSON.parse keeps the last).
//   - Comments (// and /* */) and trailing commas are accepted (JWCC, as
//     github.com/tailscale/hujson), and so is a leading UTF-8 byte order
//     mark, which some Windows editors write. A file that uses them does
//     not load in the reference.
//
// Every error is an *Error giving the file, and when it applies the line,
// column and JSON path of the offending token. Parse stops at the first
// problem. A file that holds only whitespace (and comments) is an error
// ("is empty"): the caller must not fall back to Default, which would
// drop the rules the file was meant to hold.
func Parse(data []byte, name string) (*Settings, error) {
	c := &checker{name: name, src: data, bom: bytes.HasPrefix(data, bomBytes)}
	buf := bytes.Clone(data)
	if c.bom {
		blank(buf[:len(bomBytes)])
	}
	if off, ok := standardize(buf); !ok {
		return nil, c.errorAt(off, "", nil, "invalid JSON: unterminated /* comment")
	}
	if len(bytes.Trim(buf, " \t\r\n")) == 0 {
		return nil, &Error{File: name, Msg: "is empty; delete it, or put settings in it"}
	}
	root, err := c.parseTree(buf)
	if err != nil {
		return nil, err
	}
	s, err := c.settings(root)
	if err != nil {
		return nil, err
	}
	// A copy: a caller may reuse data (a control line's buffer).
	s.pos = &positions{src: bytes.Clone(data), bom: c.bom, offs: c.offs}
	return s, nil
}
