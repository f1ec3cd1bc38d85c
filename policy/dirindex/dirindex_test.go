package dirindex

import (
	"bytes"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// ext4 is the statfs type of ext4, on the allowlist.
const ext4 = 0xEF53

func privateIndex(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "srt-go")
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(d, "dirindex")
}

// clock returns a clock an hour ahead of base.
func clock(base time.Time) func() time.Time { return func() time.Time { return base.Add(time.Hour) } }

var (
	now    = time.Now()
	stat1  = Stat{Dev: 1, Ino: 2, Ctime: now.UnixNano(), Mtime: now.UnixNano(), FSType: ext4}
	result = Result{Entries: []Entry{{Name: ".env", Match: true}, {Name: "sub", Kind: EnterDir}}}
)

// saved writes an index holding stat1/result for "/d" under key "k".
func saved(t *testing.T, path string) {
	t.Helper()
	if !Cacheable(stat1) {
		t.Skip("no index on this system")
	}
	ix := OpenWithClock(path, clock(now))
	ix.Walk("k").Store("/d", stat1, result)
	if err := ix.Save(); err != nil {
		t.Fatal(err)
	}
}

// kfile is the file of walk "k" of the index at path.
func kfile(path string) string { return OpenWithClock(path, clock(now)).walkFile("k") }

func hit(path string, st Stat) bool {
	_, ok := OpenWithClock(path, clock(now)).Walk("k").Lookup("/d", st)
	return ok
}

func TestRoundTrip(t *testing.T) {
	path := privateIndex(t)
	saved(t, path)
	r, ok := OpenWithClock(path, clock(now)).Walk("k").Lookup("/d", stat1)
	if !ok || len(r.Entries) != 2 || r.Entries[0] != result.Entries[0] || r.Entries[1] != result.Entries[1] {
		t.Fatalf("lookup %v %v", r, ok)
	}
	if fi, err := os.Stat(kfile(path)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("index file %v %v", fi, err)
	}
	for name, st := range map[string]Stat{
		"ctime": {Dev: 1, Ino: 2, Ctime: stat1.Ctime + 1, Mtime: stat1.Mtime, FSType: ext4},
		"mtime": {Dev: 1, Ino: 2, Ctime: stat1.Ctime, Mtime: stat1.Mtime - 1, FSType: ext4},
		"inode": {Dev: 1, Ino: 3, Ctime: stat1.Ctime, Mtime: stat1.Mtime, FSType: ext4},
		"dev":   {Dev: 9, Ino: 2, Ctime: stat1.Ctime, Mtime: stat1.Mtime, FSType: ext4},
		"fuse":  {Dev: 1, Ino: 2, Ctime: stat1.Ctime, Mtime: stat1.Mtime, FSType: 0x65735546},
	} {
		if hit(path, st) {
			t.Errorf("a changed %s still hits", name)
		}
	}
	if _, ok := OpenWithClock(path, clock(now)).Walk("other key").Lookup("/d", stat1); ok {
		t.Error("another walk's key hits")
	}
}

// TestNotStored checks what is never stored: a directory changed within
// RacyWindow of the read, one on a file system off the allowlist.
func TestNotStored(t *testing.T) {
	path := privateIndex(t)
	if !Cacheable(stat1) {
		t.Skip("no index on this system")
	}
	ix := OpenWithClock(path, func() time.Time { return now.Add(RacyWindow / 2) })
	w := ix.Walk("k")
	w.Store("/racy", stat1, result)
	fuse := stat1
	fuse.FSType = 0x65735546
	OpenWithClock(path, clock(now)).Walk("k").Store("/fuse", fuse, result)
	if _, kept := w.Stats(); kept != 0 {
		t.Errorf("racily clean directory kept")
	}
	if err := ix.Save(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(kfile(path)); err == nil {
		t.Error("an index with nothing to keep was written")
	}
}

// TestIgnored checks that an index file srt cannot trust is ignored, not
// an error: corrupt, of another version, a symbolic link, readable by
// others, in a directory others can write, of another user's.
func TestIgnored(t *testing.T) {
	cases := map[string]func(t *testing.T, path string){
		"corrupt": func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte(magic+"garbage"), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"truncated": func(t *testing.T, path string) {
			b, _ := os.ReadFile(path)
			if err := os.WriteFile(path, b[:len(b)/2], 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"other version": func(t *testing.T, path string) {
			dirs := encodeDirs(map[string]record{"/d": {Stat: stat1, Result: result}})
			if err := os.WriteFile(path, encodeWalk(formatVersion+1, "k", dirs), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"symlink": func(t *testing.T, path string) {
			real := path + ".real"
			if err := os.Rename(path, real); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(real, path); err != nil {
				t.Fatal(err)
			}
		},
		"directory a symlink": func(t *testing.T, path string) {
			d := filepath.Dir(path)
			if err := os.Rename(d, d+".real"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(d+".real", d); err != nil {
				t.Fatal(err)
			}
		},
		"group readable": func(t *testing.T, path string) {
			if err := os.Chmod(path, 0o640); err != nil {
				t.Fatal(err)
			}
		},
		"directory others can enter": func(t *testing.T, path string) {
			if err := os.Chmod(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
		},
		"another user's": func(t *testing.T, path string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to chown")
			}
			if err := os.Chown(path, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			path := privateIndex(t)
			saved(t, path)
			if !hit(path, stat1) {
				t.Fatal("the saved index does not hit: the test proves nothing")
			}
			spoil(t, kfile(path))
			if hit(path, stat1) {
				t.Errorf("a %s index was used", name)
			}
		})
	}
	t.Run("corrupt then saved", func(t *testing.T) {
		path := privateIndex(t)
		if err := os.WriteFile(kfile(path), []byte("junk"), 0o600); err != nil {
			t.Fatal(err)
		}
		saved(t, path)
		if !hit(path, stat1) {
			t.Error("a corrupt index was not replaced")
		}
	})
}

// TestOtherWalksKept checks that saving one walk keeps the file's others.
func TestOtherWalksKept(t *testing.T) {
	path := privateIndex(t)
	saved(t, path)
	ix := OpenWithClock(path, clock(now))
	st := stat1
	st.Ino = 7
	ix.Walk("k2").Store("/e", st, result)
	if err := ix.Save(); err != nil {
		t.Fatal(err)
	}
	if !hit(path, stat1) {
		t.Error("the other walk was dropped")
	}
	if _, ok := OpenWithClock(path, clock(now)).Walk("k2").Lookup("/e", st); !ok {
		t.Error("the new walk was not saved")
	}
}

// TestStatDir checks StatDir and OpenDir agree on a real directory and
// that a change to it changes its Stat.
func TestStatDir(t *testing.T) {
	d := t.TempDir()
	st, err := StatDir(d, map[uint64]int64{})
	if err != nil {
		t.Fatal(err)
	}
	dir, ost, err := OpenDir(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir.Close()
	if st != ost {
		t.Errorf("StatDir %+v, OpenDir %+v", st, ost)
	}
	f := filepath.Join(d, "f")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := StatDir(f, nil); err == nil {
		t.Error("StatDir of a file succeeded")
	}
	if _, _, err := OpenDir(f, nil); err == nil {
		t.Error("OpenDir of a file succeeded")
	}
}

// TestMaxWalks checks that the file keeps at most MaxWalks walks, the
// most recently used.
func TestMaxWalks(t *testing.T) {
	path := privateIndex(t)
	saved(t, path)
	for i := range MaxWalks + 3 {
		tick := now.Add(time.Duration(i+1) * time.Minute)
		ix := OpenWithClock(path, clock(tick))
		ix.Walk(fmt.Sprint("walk", i)).Store("/d", stat1, result)
		if err := ix.Save(); err != nil {
			t.Fatal(err)
		}
	}
	files, err := filepath.Glob(path + ".*")
	if err != nil || len(files) != MaxWalks {
		t.Errorf("%d walks kept, want %d (%v)", len(files), MaxWalks, err)
	}
	if hit(path, stat1) {
		t.Error("the least recently used walk was kept")
	}
	if _, ok := OpenWithClock(path, clock(now)).Walk(fmt.Sprint("walk", MaxWalks+2)).Lookup("/d", stat1); !ok {
		t.Error("the most recent walk was dropped")
	}
}

// TestCodec checks that encodeDirs round-trips, and that every
// truncation and a flipped byte of its output is refused or decodes to
// something, never panics.
func TestCodec(t *testing.T) {
	dirs := map[string]record{
		"/a\x00": {Stat: stat1, Result: result},
		"/b":     {Stat: Stat{Dev: 1 << 40, Ino: 1<<63 + 5, Ctime: -1, Mtime: 1 << 62, FSType: ext4}, Result: Result{Entries: []Entry{{Name: "l", Kind: EnterLink}}}},
		"/c":     {},
	}
	b := encodeDirs(dirs)
	got, err := decodeDirs(b)
	if err != nil || len(got) != len(dirs) {
		t.Fatalf("decode: %v %v", got, err)
	}
	for k, r := range dirs {
		g := got[k]
		if g.Stat != r.Stat || len(g.Result.Entries) != len(r.Result.Entries) {
			t.Errorf("%q: %+v, want %+v", k, g, r)
		}
		for i := range r.Result.Entries {
			if g.Result.Entries[i] != r.Result.Entries[i] {
				t.Errorf("%q entry %d: %+v", k, i, g.Result.Entries[i])
			}
		}
	}
	for i := range b {
		if _, err := decodeDirs(b[:i]); err == nil {
			t.Errorf("truncated to %d bytes: decoded", i)
		}
		c := append([]byte(nil), b...)
		c[i] ^= 0xff
		_, _ = decodeDirs(c)
	}
}

// TestOwnFiles checks that each walk is a file of its own, read only by
// a run that makes it, and that the single file of format 3 is removed.
func TestOwnFiles(t *testing.T) {
	path := privateIndex(t)
	if err := os.WriteFile(path, []byte(magic+"format 3"), 0o600); err != nil {
		t.Fatal(err)
	}
	saved(t, path)
	if _, err := os.Stat(path); err == nil {
		t.Error("the format 3 file was kept")
	}
	ix := OpenWithClock(path, clock(now))
	ix.Walk("k2").Store("/e", stat1, result)
	if err := ix.Save(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(ix.walkFile("k2"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := decodeWalk(b, "k2"); !ok {
		t.Error("walk k2's file does not decode")
	}
	if _, ok := decodeWalk(b, "k"); ok {
		t.Error("walk k2's file decodes as walk k")
	}
	if bytes.Contains(b, []byte("/d")) {
		t.Error("walk k2's file holds walk k's directories")
	}
}

// TestCandidateDirsPasswdHome: the password database's home is a
// candidate whatever $HOME says, so that a run started with another
// $HOME still denies the index a normal run trusts.
func TestCandidateDirsPasswdHome(t *testing.T) {
	u, err := user.LookupId(strconv.Itoa(os.Geteuid()))
	if err != nil || !filepath.IsAbs(u.HomeDir) {
		t.Skipf("no home in the password database: %v", err)
	}
	t.Setenv("HOME", t.TempDir())
	want := filepath.Join(filepath.Clean(u.HomeDir), ".cache", "srt-go")
	if got := CandidateDirs(); !slices.Contains(got, want) {
		t.Errorf("CandidateDirs() = %q, missing %s", got, want)
	}
}
