package nofollow

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestOpen(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	os.MkdirAll(dir+"/a/b", 0o755)
	os.Symlink("a", dir+"/link")
	var want unix.Stat_t
	unix.Stat(dir+"/a/b", &want)
	st, err := Stat(dir + "/a/b")
	if err != nil || st.Ino != want.Ino {
		t.Fatalf("Stat(a/b) = %v, %v", st.Ino, err)
	}
	for _, p := range []string{dir + "/link/b", dir + "/link"} {
		if _, err := Stat(p); !errors.Is(err, unix.ELOOP) {
			t.Errorf("Stat(%s) = %v, want ELOOP", p, err)
		}
	}
	if _, err := Stat(dir + "/missing"); !errors.Is(err, unix.ENOENT) {
		t.Errorf("missing: %v", err)
	}
	fd, parent, err := Open("/")
	if err != nil || parent != -1 {
		t.Fatalf("Open(/) = %d %d %v", fd, parent, err)
	}
	unix.Close(fd)
}
