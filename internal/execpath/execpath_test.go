package execpath

import (
	"errors"
	"io/fs"
	"testing"
	"testing/fstest"
)

// stat serves a fake tree: every path is absolute, the map keys lack the
// leading slash (fstest.MapFS's convention).
func stat(tree fstest.MapFS) func(string) (fs.FileInfo, error) {
	return func(p string) (fs.FileInfo, error) {
		if len(p) == 0 || p[0] != '/' {
			return nil, fs.ErrInvalid
		}
		if p == "/" {
			return fs.Stat(tree, ".")
		}
		return fs.Stat(tree, p[1:])
	}
}

func TestLookup(t *testing.T) {
	tree := fstest.MapFS{
		"bin/sh":          {Mode: 0o755},
		"bin/noexec":      {Mode: 0o644},
		"usr/bin/noexec":  {Mode: 0o755},
		"opt/only":        {Mode: 0o600},
		"opt/dir/.keep":   {Mode: 0o644},
		"work/tool":       {Mode: 0o755},
		"work/sub/script": {Mode: 0o755},
	}
	for _, c := range []struct {
		name, path, dir string
		want            string
		err             error
		code            int
	}{
		{name: "sh", path: "/bin:/usr/bin", want: "/bin/sh"},
		// A non-executable match does not stop the search.
		{name: "noexec", path: "/bin:/usr/bin", want: "/usr/bin/noexec"},
		// Only non-executable matches: EACCES, as execvp.
		{name: "only", path: "/bin:/opt", err: ErrPermission, code: 126},
		{name: "dir", path: "/opt", err: ErrPermission, code: 126},
		{name: "nope", path: "/bin:/usr/bin", err: ErrNotFound, code: 127},
		{name: "sh", path: "", err: ErrNotFound, code: 127},
		// An empty entry and a relative one mean the working directory.
		{name: "tool", path: "/bin::", dir: "/work", want: "/work/tool"},
		{name: "script", path: "sub", dir: "/work", want: "/work/sub/script"},
		// A name with a slash is not searched.
		{name: "./tool", path: "/bin", dir: "/work", want: "/work/tool"},
		{name: "sub/script", path: "/bin", dir: "/work", want: "/work/sub/script"},
		{name: "/bin/sh", path: "", want: "/bin/sh"},
		{name: "/bin/noexec", path: "/usr/bin", err: ErrPermission, code: 126},
		{name: "/bin/gone", path: "/bin", err: ErrNoFile, code: 127},
		{name: "./sh", path: "/bin", dir: "/work", err: ErrNoFile, code: 127},
	} {
		got, err := Lookup(c.name, c.path, c.dir, stat(tree))
		if c.err == nil {
			if err != nil || got != c.want {
				t.Errorf("Lookup(%q, %q, %q) = %q, %v; want %q", c.name, c.path, c.dir, got, err, c.want)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, c.err) || e.Code() != c.code || e.Name != c.name {
			t.Errorf("Lookup(%q, %q, %q) = %q, %v; want %v (code %d)", c.name, c.path, c.dir, got, err, c.err, c.code)
		}
	}
}

func TestPathOf(t *testing.T) {
	if got := PathOf([]string{"HOME=/h", "PATH=/a", "PATH=/b"}, "/d"); got != "/b" {
		t.Errorf("PathOf = %q, want the last PATH", got)
	}
	if got := PathOf([]string{"HOME=/h", "XPATH=/x"}, "/d"); got != "/d" {
		t.Errorf("PathOf = %q, want the fallback", got)
	}
}
