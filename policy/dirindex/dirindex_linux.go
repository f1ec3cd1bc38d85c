package dirindex

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// localFS are the statfs(2) types whose ctime the kernel keeps itself,
// on a local disk or in memory: ext2/3/4, xfs, btrfs, tmpfs, overlayfs,
// f2fs, zfs. FUSE, NFS, 9p, SMB and the rest take timestamps from
// elsewhere (a server, a userspace daemon) and are always re-read.
var localFS = map[int64]bool{
	unix.EXT4_SUPER_MAGIC:      true,
	unix.XFS_SUPER_MAGIC:       true,
	unix.BTRFS_SUPER_MAGIC:     true,
	unix.TMPFS_MAGIC:           true,
	unix.OVERLAYFS_SUPER_MAGIC: true,
	unix.F2FS_SUPER_MAGIC:      true,
	0x2fc12fc1:                 true, // zfs
}

// Cacheable reports whether a directory in state st may have its result
// stored and reused: its file system is on the allowlist.
func Cacheable(st Stat) bool { return localFS[st.FSType] }

// Dir is an open directory (OpenDir).
type Dir struct {
	fd   int
	path string
}

// ReadDir reads the directory's entries and closes it.
func (d *Dir) ReadDir() ([]os.DirEntry, error) {
	f := os.NewFile(uintptr(d.fd), d.path)
	d.fd = -1
	defer f.Close()
	return f.ReadDir(-1)
}

// Close closes the directory unless ReadDir did.
func (d *Dir) Close() {
	if d.fd >= 0 {
		unix.Close(d.fd)
		d.fd = -1
	}
}

// statxWant is what a Stat needs of statx(2).
const statxWant = unix.STATX_TYPE | unix.STATX_INO | unix.STATX_CTIME | unix.STATX_MTIME

// StatDir returns the state of directory path, following symbolic links
// (statx(2)); an error wrapping ENOTDIR when it is not a directory.
// fsTypes caches the file system type by device for one walk; a device
// not in it is looked at through an open descriptor (fstatfs(2)), so a
// path swapped meanwhile cannot lend one file system's type to another.
func StatDir(path string, fsTypes map[uint64]int64) (Stat, error) {
	var sx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_STATX_SYNC_AS_STAT, statxWant, &sx); err != nil {
		return Stat{}, &os.PathError{Op: "statx", Path: path, Err: err}
	}
	if sx.Mode&unix.S_IFMT != unix.S_IFDIR {
		return Stat{}, &os.PathError{Op: "statx", Path: path, Err: unix.ENOTDIR}
	}
	st := stat(&sx)
	if t, ok := fsTypes[st.Dev]; ok {
		st.FSType = t
		return st, nil
	}
	d, fst, err := OpenDir(path, fsTypes)
	if err != nil {
		return st, nil // FSType 0: not cacheable
	}
	d.Close()
	if fst.Dev == st.Dev {
		st.FSType = fst.FSType
	}
	return st, nil
}

// stat is the Stat of sx, without its file system type; empty times
// where statx did not give them (then Cacheable refuses it: FSType 0).
func stat(sx *unix.Statx_t) Stat {
	st := Stat{Dev: unix.Mkdev(sx.Dev_major, sx.Dev_minor), Ino: sx.Ino}
	if sx.Mask&statxWant == statxWant {
		st.Ctime = sx.Ctime.Sec*1e9 + int64(sx.Ctime.Nsec)
		st.Mtime = sx.Mtime.Sec*1e9 + int64(sx.Mtime.Nsec)
	}
	return st
}

// OpenDir opens directory path for reading, following symbolic links
// (O_DIRECTORY: anything else fails with ENOTDIR before it is opened, so
// a fifo does not block), and returns it with its state, taken from the
// open directory (statx(2), fstatfs(2)), so that the state and a later
// read are of the same directory. fsTypes caches the file system type by
// device for one walk (nil: no cache). The caller closes the Dir.
func OpenDir(path string, fsTypes map[uint64]int64) (*Dir, Stat, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, Stat{}, &os.PathError{Op: "open", Path: path, Err: err}
	}
	d := &Dir{fd: fd, path: path}
	var sx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_SYNC_AS_STAT, statxWant, &sx); err != nil {
		d.Close()
		return nil, Stat{}, &os.PathError{Op: "statx", Path: path, Err: err}
	}
	st := stat(&sx)
	if sx.Mask&statxWant != statxWant {
		return d, st, nil // FSType 0: not cacheable
	}
	if t, ok := fsTypes[st.Dev]; ok {
		st.FSType = t
		return d, st, nil
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err == nil {
		st.FSType = int64(sfs.Type)
		if fsTypes != nil {
			fsTypes[st.Dev] = st.FSType
		}
	}
	return d, st, nil
}

// openPrivate opens path for reading without following a symbolic link
// anywhere on it (openat2 RESOLVE_NO_SYMLINKS; O_NOFOLLOW on kernels
// without openat2) and checks it is a regular file of the caller's own
// that no one else can read or write.
func openPrivate(path string) (*os.File, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != uint32(os.Geteuid()) || st.Mode&0o077 != 0 {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: errNotPrivate}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// privateDir reports whether dir is a directory (not a symbolic link) of
// the caller's own that no one else can write or search.
func privateDir(dir string) bool {
	var st unix.Stat_t
	if unix.Lstat(dir, &st) != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Uid == uint32(os.Geteuid()) && st.Mode&0o077 == 0
}

// writeIndex writes b as file name in directory dir, by descriptor: dir
// is opened (made, 0700, where missing) one component at a time from /
// without following a symbolic link (O_NOFOLLOW), must be a directory
// of the caller's own that no one else can write or search (fstat), and
// the temporary file is created (O_EXCL, 0600) and renamed over name
// relative to that descriptor, so that a path swapped meanwhile — a root
// srt whose $HOME lies in a user's tree — cannot lead the write
// elsewhere. The file's mtime is set to used (MaxWalks keeps the most
// recently used). A nil b removes name instead.
func writeIndex(dir, name string, b []byte, used time.Time) error {
	dfd, err := openDirNoFollow(dir)
	if err != nil {
		return fmt.Errorf("index directory: %w", err)
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil {
		return fmt.Errorf("index directory %s: %w", dir, err)
	}
	if st.Uid != uint32(os.Geteuid()) || st.Mode&0o077 != 0 {
		return fmt.Errorf("index directory %s: %w", dir, errNotPrivate)
	}
	if b == nil {
		if err := unix.Unlinkat(dfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("index: remove %s: %w", name, err)
		}
		return nil
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return fmt.Errorf("index: %w", err)
	}
	tmp := ".dirindex-" + hex.EncodeToString(rnd[:])
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("index: create %s: %w", tmp, err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dir, tmp))
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil {
		touch(f, used)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dfd, tmp, dfd, name)
	}
	if err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return fmt.Errorf("index: %w", err)
	}
	return nil
}

// openDirNoFollow opens absolute directory path one component at a time
// from / (O_DIRECTORY|O_NOFOLLOW: a symbolic link anywhere on it fails
// with ELOOP or ENOTDIR), making a missing component with mode 0700.
func openDirNoFollow(path string) (int, error) {
	if !filepath.IsAbs(path) {
		return -1, &os.PathError{Op: "open", Path: path, Err: unix.EINVAL}
	}
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Open("/", flags, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: "/", Err: err}
	}
	for _, c := range strings.Split(strings.Trim(filepath.Clean(path), "/"), "/") {
		if c == "" {
			continue
		}
		next, err := unix.Openat(fd, c, flags, 0)
		if errors.Is(err, unix.ENOENT) {
			if err = unix.Mkdirat(fd, c, 0o700); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = unix.Openat(fd, c, flags, 0)
			}
		}
		unix.Close(fd)
		if err != nil {
			return -1, &os.PathError{Op: "open", Path: path, Err: err}
		}
		fd = next
	}
	return fd, nil
}

// touch sets f's access and modification times to t, best effort (the
// walk's recency for MaxWalks; a failure only makes it look older).
func touch(f *os.File, t time.Time) {
	ts := []unix.Timespec{unix.NsecToTimespec(t.UnixNano()), unix.NsecToTimespec(t.UnixNano())}
	_ = unix.UtimesNanoAt(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", f.Fd()), ts, 0)
}
